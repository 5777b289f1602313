#pragma once
// Checkpoint directory: model.safetensors + config.json (+ best.safetensors, training state).
//
//   DIR/model.safetensors   latest weights, float32, Meta LLaMA names, (out, in) layout
//   DIR/best.safetensors    weights with the best validation loss so far
//   DIR/config.json         {"model": ModelConfig fields, "tokenizer": {"chars": [...]}, ...}
//   DIR/tokenizer.json      a BPE model's vocabulary (Hugging Face format, data/bpe_tokenizer.hpp);
//                           config.json then says "tokenizer": {"type": "bpe", ...}
//   DIR/train_state.safetensors + DIR/train_state.json   AdamW moments, step, RNG (for --resume)
//   DIR/log.csv, DIR/loss.html   written by the trainer and by glass train (cli/loss_page.hpp)
// Every file is written atomically (temp file in DIR + rename). The trainer writes each save
// into a step directory of its run directory and switches DIR/current to it at once
// (checkpoint/run_dir.hpp); every reader here accepts either the run directory (it reads the save
// DIR/current points to) or a directory holding the files themselves.

#include <memory>
#include <optional>
#include <vector>
#include <stdexcept>
#include <string>

#include "data/bpe_tokenizer.hpp"
#include "data/text_tokenizer.hpp"
#include "data/tokenizer.hpp"
#include "nn/config.hpp"
#include "nn/decoder.hpp"

namespace glass {

class SavePin;

/// A checkpoint that cannot be used: missing directory or file, bad JSON, truncated or corrupt
/// safetensors, a tensor with the wrong shape or a missing tensor. The message says which file
/// and what is wrong.
class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A prompt that does not fit in one window of a reader that shows one window position by
/// position (glass inspect, the lab, the server's inspection): `length` and `window` count the
/// checkpoint's unit ("characters" or "tokens"). Each front end words it with its own advice.
class PromptTooLongError : public std::invalid_argument {
 public:
  PromptTooLongError(std::size_t length, std::size_t window, std::string unit)
      : std::invalid_argument("the prompt has " + std::to_string(length) + " " + unit +
                              "; the window is " + std::to_string(window) + " " + unit),
        length_(length),
        window_(window),
        unit_(std::move(unit)) {}
  std::size_t length() const { return length_; }
  std::size_t window() const { return window_; }
  const std::string& unit() const { return unit_; }

 private:
  std::size_t length_, window_;
  std::string unit_;
};

/// Where a loaded save came from: what its files record and the directory they were read from.
struct SaveOrigin {
  /// The "step" entry of the weights file's metadata (glass train writes it, see save_model);
  /// empty when the file has none.
  std::string weights_step;
  /// The "run_id" entry of the weights file's metadata (the run that wrote it); empty when the
  /// file has none. load_checkpoint has checked that config.json records the same.
  std::string run_id;
  /// The directory the files were read from: the save DIR/current pointed to, or DIR itself.
  /// Read anything else of the checkpoint (log.csv, training_data) from here, not from DIR,
  /// whose `current` may have moved on to a newer save since.
  std::string files_dir;
  /// Keeps that save from being removed by a trainer's cleanup while this model lives
  /// (checkpoint/run_dir.hpp).
  std::shared_ptr<SavePin> pin;
  /// "" or a warning for the user: the files could not be verified (a save of glass train
  /// written before saves carried a manifest). Commands print it on stderr.
  std::string warning;
};

/// One save, loaded: the model, its one tokenizer, and the answers every reader (commands,
/// server, inspector, exporters, lab) asks of them: the window it samples with, prompt -> ids,
/// ids -> text (through tokenizer()), the unit of its context. Readers ask; none branches on
/// the tokenizer's kind (data/text_tokenizer.hpp holds that knowledge).
class Checkpoint {
 public:
  /// A model in memory with its tokenizer (a test, a fresh model). `training_context` is the
  /// window it was trained on, 0 when not recorded; `origin` what load_checkpoint read.
  /// Throws std::invalid_argument when the model is missing or `training_context` exceeds
  /// config.context_length.
  Checkpoint(ModelConfig config, TextTokenizer tokenizer, std::unique_ptr<Decoder> model,
             std::size_t training_context = 0, SaveOrigin origin = {});

  const ModelConfig& config() const { return config_; }
  const TextTokenizer& tokenizer() const { return *tokenizer_; }
  /// The same tokenizer, shared with results that outlive this checkpoint (an Inspection).
  std::shared_ptr<const TextTokenizer> shared_tokenizer() const { return tokenizer_; }
  /// The model (its weights read from the save). Forward passes are not const.
  Decoder& model() const { return *model_; }
  /// Hands the model over (a resumed training run continues it); model() is unusable after.
  std::unique_ptr<Decoder> release_model() { return std::move(model_); }

  /// The attention window a reader samples and inspects with, in tokens (tokenizer().unit()):
  /// the context the model was trained on when the save records it, else context_length.
  /// Never more than context_length (loading refuses a save that records more).
  std::size_t window() const { return window_; }
  /// The prompt's ids (TextTokenizer::encode_prompt): a character model's unknown characters
  /// refused (UnknownCharacterError) or mapped to id 0 and counted; BPE never fails.
  std::vector<std::int32_t> encode_prompt(const std::u32string& text, UnknownPolicy policy,
                                          std::size_t* unknown_count = nullptr) const {
    return tokenizer_->encode_prompt(text, policy, unknown_count);
  }
  /// Refuses a prompt of `length` ids (encode_prompt's count) longer than window():
  /// PromptTooLongError. For the readers that show one window; a sampler crops the prompt to its
  /// last window() ids instead.
  void check_fits_window(std::size_t length) const {
    if (length > window_) throw PromptTooLongError(length, window_, unit());
  }
  /// The same for a prompt's text, counted with unknown characters mapped to id 0 (whether they
  /// are refused is the caller's own check).
  void check_fits_window(const std::u32string& prompt) const {
    check_fits_window(encode_prompt(prompt, UnknownPolicy::kMapToUnknownId).size());
  }
  /// What the context counts: "characters"/"tokens" (singular: "character"/"token").
  const char* unit(bool plural = true) const { return tokenizer_->unit(plural); }

  const std::string& weights_step() const { return origin_.weights_step; }
  const std::string& run_id() const { return origin_.run_id; }
  const std::string& files_dir() const { return origin_.files_dir; }
  const std::string& warning() const { return origin_.warning; }

 private:
  ModelConfig config_;
  std::shared_ptr<const TextTokenizer> tokenizer_;
  std::unique_ptr<Decoder> model_;
  std::size_t window_;
  SaveOrigin origin_;
};

/// Loads DIR/config.json and DIR/model.safetensors (or DIR/best.safetensors when `best`); for a
/// run directory, those of its last complete save (DIR/current), pinned against the trainer's
/// cleanup (SavePin). Both files are checked against the save's manifest (checkpoint/manifest.hpp)
/// before use. Throws CheckpointError, also when a file differs from the manifest, when the
/// manifest is missing from a save whose config.json says it has one, when config.json, the
/// weights and the manifest record different run ids or steps, when training.context is larger
/// than the model's context_length, or when the weights record the tokenizer they were trained
/// with ("tokenizer_chars") and config.json lists other characters or the same ones in another
/// order. A BPE model (config.json "tokenizer": {"type": "bpe"}) needs the save's
/// tokenizer.json: missing, changed since the manifest, unreadable (TokenizerJsonError's
/// message), of another vocabulary size than the weights' embedding rows, or another file than
/// the weights record ("tokenizer_sha256") -> CheckpointError. A save of glass train written before saves carried a manifest is read, with
/// Checkpoint::warning() saying that its files cannot be verified.
Checkpoint load_checkpoint(const std::string& dir, bool best = false);

/// Writes DIR/config.json and DIR/<weights_file> (default model.safetensors) atomically,
/// creating DIR if needed. Throws CheckpointError when DIR cannot be written.
/// `extra_json` (optional, a JSON object) adds top-level keys to config.json; the trainer
/// writes {"training": {"context": T, ...}} there (see training_context()). `step` >= 0 is
/// also stored in the weights file's metadata ("step"), so that a resume can tell weights and
/// training state of different steps apart (load_train_state). A non-empty `run_id` is stored
/// there too ("run_id"; the trainer also puts it in config.json's "training" block). The
/// tokenizer's characters in id order are always stored ("tokenizer_chars").
void save_model(const std::string& dir, const Decoder& model, const Tokenizer& tokenizer,
                const std::string& weights_file = "model.safetensors",
                const std::string& extra_json = "", long step = -1, const std::string& run_id = "");
/// The same for a BPE model: DIR/tokenizer.json (bpe_to_json) written atomically, config.json
/// saying "tokenizer": {"type": "bpe", ...}, and the weights' metadata recording "tokenizer":
/// "bpe" and the SHA-256 of tokenizer.json ("tokenizer_sha256") instead of "tokenizer_chars".
/// Throws CheckpointError when DIR cannot be written or the vocabulary size is not the model's.
void save_model(const std::string& dir, const Decoder& model, const BpeTokenizer& tokenizer,
                const std::string& weights_file = "model.safetensors",
                const std::string& extra_json = "", long step = -1, const std::string& run_id = "");

/// The training window T recorded in DIR/config.json ("training": {"context": T}), or 0 when
/// the checkpoint does not say (a loaded save's window: Checkpoint::window). Throws
/// CheckpointError for unreadable or bad JSON.
std::size_t training_context(const std::string& dir);

/// The file name of the text the model was trained on, as glass train records it in
/// DIR/config.json ("training": {"data": NAME}), or "" when the checkpoint does not say.
/// Throws CheckpointError for unreadable or bad JSON.
std::string training_data(const std::string& dir);

}  // namespace glass
