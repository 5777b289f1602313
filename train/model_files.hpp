#pragma once
// The Trainer's write side of a save's model files: config.json, model.safetensors and (a BPE
// model) tokenizer.json. The read side is load_checkpoint (checkpoint/checkpoint.hpp), the same
// for the Trainer's resume as for every reader.

#include <string>

#include "data/text_tokenizer.hpp"
#include "nn/decoder.hpp"

namespace glass {

/// Writes config.json, model.safetensors and (a BPE model) tokenizer.json into `dir`
/// (save_model; `extra_json`, `step` and `run_id` as there). Throws CheckpointError.
void save_model_files(const std::string& dir, const Decoder& model, const TextTokenizer& tokenizer,
                      const std::string& extra_json, long step, const std::string& run_id);

}  // namespace glass
