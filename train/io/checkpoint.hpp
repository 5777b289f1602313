#pragma once
// Checkpoint directory: model.safetensors + config.json (+ best.safetensors, training state).
//
//   DIR/model.safetensors   latest weights, float32, Meta LLaMA names, (out, in) layout
//   DIR/best.safetensors    weights with the best validation loss so far
//   DIR/config.json         {"model": ModelConfig fields, "tokenizer": {"chars": [...]}, ...}
//   DIR/train_state.safetensors + DIR/train_state.json   AdamW moments, step, RNG (for --resume)
//   DIR/log.csv, DIR/loss.html                             written by the trainer
// Every file is written atomically (temp file in DIR + rename).

#include <memory>
#include <stdexcept>
#include <string>

#include "data/tokenizer.hpp"
#include "nn/config.hpp"
#include "nn/decoder.hpp"

namespace glass {

/// A checkpoint that cannot be used: missing directory or file, bad JSON, truncated or corrupt
/// safetensors, a tensor with the wrong shape or a missing tensor. The message says which file
/// and what is wrong.
class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A loaded model ready for sampling / inspection.
struct LoadedModel {
  ModelConfig config;
  Tokenizer tokenizer;
  std::unique_ptr<Decoder> model;
  /// The "step" entry of the weights file's metadata (glass train writes it, see save_model);
  /// empty when the file has none.
  std::string weights_step;
};

/// Loads DIR/config.json and DIR/model.safetensors (or DIR/best.safetensors when `best`).
/// Throws CheckpointError.
LoadedModel load_checkpoint(const std::string& dir, bool best = false);

/// Writes DIR/config.json and DIR/<weights_file> (default model.safetensors) atomically,
/// creating DIR if needed. Throws CheckpointError when DIR cannot be written.
/// `extra_json` (optional, a JSON object) adds top-level keys to config.json; the trainer
/// writes {"training": {"context": T, ...}} there (see training_context()). `step` >= 0 is
/// also stored in the weights file's metadata ("step"), so that a resume can tell weights and
/// training state of different steps apart (load_train_state).
void save_model(const std::string& dir, const Decoder& model, const Tokenizer& tokenizer,
                const std::string& weights_file = "model.safetensors",
                const std::string& extra_json = "", long step = -1);

/// The training window T recorded in DIR/config.json ("training": {"context": T}), or 0 when
/// the checkpoint does not say. Samplers use it as the attention window. Throws CheckpointError
/// for unreadable or bad JSON.
std::size_t training_context(const std::string& dir);

}  // namespace glass
