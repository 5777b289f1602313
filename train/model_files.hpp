#pragma once
// The Trainer's two uses of a save's model files (checkpoint/checkpoint.hpp): reading the model
// and tokenizer a resume continues, and writing them into a new save.

#include <memory>
#include <string>

#include "data/text_tokenizer.hpp"
#include "nn/decoder.hpp"

namespace glass {

/// The model and tokenizer of a save, with what its weights file records.
struct SavedModel {
  std::unique_ptr<Decoder> model;
  TextTokenizer tokenizer;
  std::string weights_step;    ///< the step model.safetensors records ("" when none)
  std::string weights_run_id;  ///< the run model.safetensors belongs to ("" when none)
  std::string warning;         ///< "" or why the files could not be verified
};

/// Reads the model and tokenizer of the save in `dir` (load_checkpoint: every check there;
/// throws CheckpointError).
SavedModel load_saved_model(const std::string& dir);

/// Writes config.json, model.safetensors and (a BPE model) tokenizer.json into `dir`
/// (save_model; `extra_json`, `step` and `run_id` as there). Throws CheckpointError.
void save_model_files(const std::string& dir, const Decoder& model, const TextTokenizer& tokenizer,
                      const std::string& extra_json, long step, const std::string& run_id);

}  // namespace glass
