#pragma once
// config.json of a checkpoint: the model sizes (ModelConfig) and the tokenizer's characters.
//
//   {
//     "format": "glassllm",
//     "version": 1,
//     "model": {"vocab_size": 65, "d_model": 128, "n_layers": 4, "n_heads": 4,
//               "n_kv_heads": 2, "ffn_hidden": 344, "context_length": 256, "vocab_cap": 1024,
//               "rope_base": 10000.0, "norm_eps": 1e-05, "init_std": 0.02},
//     "tokenizer": {"type": "char", "unknown_id": 0, "chars": [" ", "e", "a", "\n", "é", ...]}
//   }
//
// A BPE model (glass train --tokenizer bpe) writes instead
//     "tokenizer": {"type": "bpe", "file": "tokenizer.json", "vocab_size": 512}
// and its vocabulary is the save's tokenizer.json (data/bpe_tokenizer.hpp); no "type" reads as
// "char", so checkpoints written before BPE existed load unchanged.
//
// The recipe options (ModelConfig::qk_norm, mlp, logit_softcap) appear in "model" only when on:
//     "qk_norm": true, "mlp": "relu2", "logit_softcap": 30.0
// (absent = off, so every save made before them reads unchanged).
//
// "chars" lists the vocabulary in id order (id i + 1 = chars[i]), one UTF-8 string per
// character, so the file stays readable and any JSON tool can load it. A vocabulary with chat
// tokens (TextTokenizer::with_chat_tokens) adds "special_tokens": ["<|im_start|>", "<|im_end|>"]
// after "chars" (ids chars + 1 ..); without them the key is absent. Other top-level keys
// are allowed and ignored on reading (the trainer may add its own).

#include <stdexcept>
#include <string>

#include "data/text_tokenizer.hpp"
#include "data/tokenizer.hpp"
#include "nn/config.hpp"

namespace glass {

/// A config.json that cannot be used: bad JSON, a missing field, a field of the wrong type or
/// value, or a tokenizer that does not match the model. The message names the source and field.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// What config.json holds.
struct CheckpointConfig {
  ModelConfig model;
  TokenizerKind tokenizer_kind = TokenizerKind::kChar;
  Tokenizer tokenizer;  ///< the character vocabulary (empty for a BPE model)
};

/// The BPE model's tokenizer.json, next to config.json in each save.
inline constexpr const char* kBpeTokenizerFile = "tokenizer.json";

/// The text of config.json (pretty-printed, 2-space indent, ending in a newline).
/// `extra_json`, if not empty, must be a JSON object; its keys are added at the top level
/// (std::invalid_argument if it is not an object or uses a reserved key).
std::string config_to_json(const ModelConfig& model, const Tokenizer& tokenizer,
                           const std::string& extra_json = "");

/// The same for a BPE model: "tokenizer": {"type": "bpe", "file": "tokenizer.json", "vocab_size":
/// bpe_vocab_size}. The vocabulary itself goes into tokenizer.json (save_model writes both).
std::string config_to_json_bpe(const ModelConfig& model, std::size_t bpe_vocab_size,
                               const std::string& extra_json = "");

/// Parses and validates config.json: every ModelConfig field present with the right type,
/// ModelConfig::validate() passing, one character per "chars" entry, no duplicates, and
/// vocab_size == chars + 1 + special_tokens; for "type": "bpe", vocab_size equal to the model's (the vocabulary
/// is read from tokenizer.json by load_checkpoint). `source` (usually the path) is named in errors. Throws ConfigError.
CheckpointConfig config_from_json(const std::string& text, const std::string& source);

/// Just the "model" object, as JSON text.
std::string model_config_to_json(const ModelConfig& model);
/// Parses a "model" object (as written by model_config_to_json). Throws ConfigError.
ModelConfig model_config_from_json(const std::string& text, const std::string& source);

}  // namespace glass
