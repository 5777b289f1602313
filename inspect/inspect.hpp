#pragma once
// The inspector's data: run the decoder on a prompt with a Tracer attached and keep what is
// inside (every snapshot, the logits, the probabilities); choose a snapshot and a head, summarise,
// list the top-k next tokens. The views of it are apart: the terminal (render_terminal.hpp), JSON
// for scripts and notebooks (render_json.hpp) and one self-contained HTML page
// (render_html.hpp). Used by `glass inspect` (cli/inspect.cpp) and `glass serve`.
//
// Reading the snapshots (README, "Looking inside: glass inspect"): pick a layer, a head and a
// snapshot (attn.q, attn.k, attn.v, attn.rope_q, attn.rope_k, attn.scores, attn.mask,
// attn.softmax, attn.mix, attn.out); the batch axis is removed, so one head of attn.softmax
// is an (n, m) matrix. Attention weights mix context inside one head; output probabilities
// spread over the vocabulary. A high attention weight alone does not explain a prediction.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "autograd/tensor.hpp"
#include "data/text_tokenizer.hpp"
#include "nn/config.hpp"

namespace glass {

class Checkpoint;  // checkpoint/checkpoint.hpp

/// Bad inspector input the user can fix (layer/head out of range, unknown snapshot, a prompt
/// that is empty or too long). The message says what is wrong and what would be valid.
/// (Characters outside a character model's vocabulary are UnknownCharacterError.)
class InspectError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Everything one forward pass over a prompt produced, batch axis removed (n = prompt length in
/// tokens, V = vocab_size). Snapshot names are the Tracer's (nn/tracer.hpp): "embeddings",
/// "layers.L.attn.q", ..., "layers.L.out"; "logits" and "probs" are kept apart.
///
/// A character model has one token per character: token_texts[i] is the prompt's character i.
/// A BPE model's tokens are subwords as its vocabulary writes them (docs/bpe.md): "▁de" (the
/// space as '▁'), "<0xF0>" (a byte of a character outside the vocabulary).
struct Inspection {
  ModelConfig config;
  /// The model's tokenizer (set by inspect): the unit's name, the texts' notation.
  std::shared_ptr<const TextTokenizer> tokenizer;
  std::u32string prompt;             ///< the prompt's characters
  std::vector<std::int32_t> tokens;  ///< (n) token ids
  /// (n) each position's token as text (UTF-8): the character for a character model (the
  /// prompt's own, also when it was mapped to the unknown id 0), the vocabulary's text for BPE.
  std::vector<std::string> token_texts;
  /// (V) each id's text (UTF-8): the character, U+FFFD for a character model's unknown id 0;
  /// the BPE vocabulary's "<unk>", "<s>", "<0x00>", "▁de"...
  std::vector<std::string> vocab_texts;
  /// vocab[id] = character of id (a character model; U+FFFD for id 0 and for every id of a
  /// BPE model, whose tokens are not single characters: use vocab_texts).
  std::vector<char32_t> vocab;
  std::vector<std::pair<std::string, Array>> snapshots;  ///< every tracer snapshot, recording order
  Array logits;  ///< (n, V) next-token logits at every position
  Array probs;   ///< (n, V) softmax of the logits (rows sum to 1)

  std::size_t n() const { return tokens.size(); }
  /// What a token is called in messages: "tokens" for a BPE model, "characters" otherwise.
  const char* unit() const { return tokenizer->unit(); }
  /// The visible label of position i's token (token_label of token_texts[i]).
  std::string position_label(std::size_t i) const;
  /// The visible label of vocabulary id `id` (id_label); "?" for an id outside the vocabulary.
  std::string vocab_label(std::int32_t id) const;
  /// True when a snapshot of that full name (e.g. "layers.0.attn.q") was recorded.
  bool has(const std::string& full_name) const;
  /// The snapshot with that full name; throws InspectError listing the recorded names.
  const Array& get(const std::string& full_name) const;
};

/// A token's text as a visible label (UTF-8): each character as visible_char shows it
/// (' ' -> "␣", '\n' -> "⏎"), so a character token looks as it always did and a BPE token keeps
/// its '▁' for a space and its "<0xNN>" for a byte: "▁de", "⏎", "<0x0A>".
std::string token_label(const std::string& token_text);

/// The visible label of vocabulary id `id`, the one rule of the inspector, the lab and the
/// server: "<unk>" for a character model's unknown id 0 (no text of its own; not U+FFFD, which
/// is a character of its own), else token_label of the id's text; "?" for an id outside the
/// vocabulary.
std::string id_label(const TextTokenizer& tokenizer, std::int32_t id);

/// Runs `loaded`'s model on `prompt` (its tokens: Checkpoint::encode_prompt) under NoGradGuard
/// with a Tracer, and returns every snapshot, the logits and the probabilities.
/// Throws InspectError for an empty prompt or a prompt of more tokens than
/// config.context_length; UnknownCharacterError for a character model's characters outside the
/// vocabulary unless `policy` maps them to the unknown id 0 (`unknown_count`, if given, says how
/// many). A BPE model has no unknown characters (byte fallback).
Inspection inspect(const Checkpoint& loaded, const std::u32string& prompt,
                   UnknownPolicy policy = UnknownPolicy::kRefuse,
                   std::size_t* unknown_count = nullptr);

/// The names `--snapshot` accepts for `layer` (relative, e.g. "attn.softmax", "out") followed
/// by the model-wide ones ("embeddings", "logits", "probs"), in recording order.
std::vector<std::string> snapshot_choices(const Inspection& inspection, std::size_t layer);

/// The full tracer name of a `--snapshot` choice: "attn.q" at layer 2 -> "layers.2.attn.q";
/// "embeddings"/"logits"/"probs" stay as they are. Throws InspectError when the layer is out of
/// range or the name is not a choice (the message lists the valid names).
std::string full_snapshot_name(const Inspection& inspection, std::size_t layer,
                               const std::string& name);

/// What the axes of a snapshot mean after choosing a head.
struct HeadView {
  Array values;                     ///< 1-D or 2-D: the chosen head's slice (or the whole snapshot)
  std::string rows, cols;           ///< axis meaning, e.g. "query position i" / "key position j"
  bool rows_are_positions = false;  ///< label rows with the prompt's characters
  bool cols_are_positions = false;  ///< label columns with the prompt's characters
  bool cols_are_vocab = false;      ///< label columns with vocabulary characters (logits, probs)
  bool per_head = false;            ///< the snapshot had a head axis and `head` was applied
  std::size_t kv_head = 0;          ///< for attn.k/v/rope_k: the KV head that query head uses
  std::string note;                 ///< e.g. the GQA mapping, or "scores before the mask"
};

/// Selects query head `head` from a snapshot (relative or model-wide name, see
/// snapshot_choices). Snapshots with a query-head axis (q, rope_q, scores, softmax, mix) take
/// head `head`; snapshots with a KV-head axis (k, v, rope_k) take the KV head that query head
/// uses under GQA, head / (n_heads / n_kv_heads). Throws InspectError when head >= n_heads.
HeadView head_view(const Inspection& inspection, std::size_t layer, std::size_t head,
                   const std::string& name);

/// min, max and mean of all entries (mean in double precision).
struct Summary {
  double min = 0, max = 0, mean = 0;
};
/// The Summary of `values` (any shape); all zeros for an empty array.
Summary summarize(const Array& values);

/// One candidate next token.
struct TopToken {
  std::int32_t id = 0;
  char32_t character = 0;  ///< a character model's character (U+FFFD for BPE)
  std::string text;        ///< the token's text (vocab_texts[id])
  double prob = 0;
};
/// The k most probable next tokens after position `position` (0-based), highest first (ties:
/// smaller id first); k is clamped to the vocabulary size. Throws InspectError for a bad position.
std::vector<TopToken> top_k(const Inspection& inspection, std::size_t position, std::size_t k);

}  // namespace glass
