#pragma once
// The limits within which glass reads the files of a checkpoint: one table, checked before a
// file is parsed (its size) or before a tokenizer is built (its vocabulary and tokens). A
// manifest's checksums catch accidents (a flipped bit, a hand edit); a crafted save can be
// resealed, or copied without its manifest, so only limits keep a hostile file from exhausting
// the memory, the stack or the time of every reader. Each limit is far above anything glass
// writes; docs/treino.md ("Limites de leitura") states them for the user.
//
//   file                       largest size   what it is
//   config.json                16 MiB         model shape, tokenizer, training block
//   manifest.json              16 MiB         size and SHA-256 of every file of the save
//   tokenizer.json             64 MiB         BPE vocabulary and merges (kMaxVocabSize tokens)
//   interp.json                4 MiB          the head scores of one save
//   interp_history.json        64 MiB         the head scores of the run's earlier saves
//   probe_history.json         64 MiB         the probe's attention at the run's saves
//   log.csv, steps.csv         256 MiB        one row per evaluation / per optimizer step
//   train_state.json           16 MiB         step, schedule, data position, random state
//   *.safetensors              16 GiB         weights or optimizer moments (4 G float32 values)
//
// Besides: JSON nested at most kMaxJsonDepth levels, at most kMaxVocabSize BPE tokens, a BPE
// token at most kMaxTokenLength characters long (at training and at load).

#include <cstddef>
#include <cstdint>
#include <string>

namespace glass {

/// The deepest nesting of arrays and objects glass parses in a file or request it did not
/// write itself (the JSON glass writes is at most 5 levels deep).
inline constexpr int kMaxJsonDepth = 64;

/// The longest BPE token, in characters (Unicode code points), that training makes and a
/// tokenizer.json may hold. SentencePiece caps a piece at 16 characters by default
/// (TrainerSpec.max_piece_length, sentencepiece/src/sentencepiece_model.proto); the same cap
/// keeps building and encoding linear in the text whatever the text (one line of a million
/// equal characters trains tokens of at most 16).
inline constexpr std::size_t kMaxTokenLength = 16;

/// The largest BPE vocabulary a tokenizer.json may hold: 2^18 tokens, above the largest
/// vocabulary of the LLaMA family (Llama 3: 128,256) and of Gemma (256,000); `glass train
/// --vocab-size` trains at most 65,535 (plus the chat markers).
inline constexpr std::size_t kMaxVocabSize = 262'144;

inline constexpr std::uint64_t kMiB = 1024 * 1024;

/// The largest size, in bytes, glass reads for the checkpoint file `name` (its file name,
/// without the directory), from the table in the file comment; 16 MiB for a name not in it.
inline std::uint64_t max_file_bytes(const std::string& name) {
  struct Limit {
    const char* name;
    std::uint64_t bytes;
  };
  static constexpr Limit kLimits[] = {
      {"config.json", 16 * kMiB},         {"manifest.json", 16 * kMiB},
      {"tokenizer.json", 64 * kMiB},      {"interp.json", 4 * kMiB},
      {"interp_history.json", 64 * kMiB}, {"log.csv", 256 * kMiB},
      {"probe_history.json", 64 * kMiB},  {"steps.csv", 256 * kMiB},
      {"train_state.json", 16 * kMiB},
  };
  for (const Limit& l : kLimits)
    if (name == l.name) return l.bytes;
  const std::string ext = ".safetensors";
  if (name.size() >= ext.size() && name.compare(name.size() - ext.size(), ext.size(), ext) == 0)
    return 16 * 1024 * kMiB;
  return 16 * kMiB;
}

}  // namespace glass
