#pragma once
// What `glass sample` does once its flags are read: load a save (Checkpoint), encode the prompt,
// choose the window, generate one or more samples (streamed as text, or as JSON with each
// token's probabilities), measuring the thread count as it goes. Two steps, so that the front
// end can word what the first found (a prompt cropped to the window, unknown characters mapped)
// before the text starts: prepare_sample, then generate_samples.

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "checkpoint/checkpoint.hpp"
#include "sample/sampler.hpp"

namespace glass {

/// One `glass sample` job: which save, which prompt, how many tokens, how to draw them.
struct SampleOptions {
  std::string checkpoint;  ///< run or save directory (load_checkpoint)
  bool best = false;       ///< best.safetensors instead of the latest weights
  OpsPath ops = OpsPath::fast;
  std::string prompt;          ///< UTF-8 text to continue; "" = the start of a paragraph
  bool allow_unknown = false;  ///< map a character model's unknown characters to id 0
  std::size_t tokens = 300;    ///< tokens generated per sample
  std::size_t window = 0;      ///< the window each prediction sees; 0 = the trained one
  SamplingOptions sampling;    ///< temperature, top-k, ..., KV cache and window mode
  std::uint64_t seed = 1337;   ///< one random stream for all samples
  long long num_samples = 1;
  std::string stop;   ///< end a sample when its text ends with this ("" = never)
  bool json = false;  ///< JSON with each token's probabilities instead of the text
  /// Write the text's bytes as they are, control characters included (--raw); false: control
  /// characters as visible escapes (write_generated_text). JSON is exact either way.
  bool raw = false;
  /// Choose between one thread and every core by measuring (sample/thread_choice.hpp); false:
  /// keep the count set before.
  bool choose_threads = false;
  /// Hooks run in every forward pass of generation (steering, interp/steering.hpp); null: none.
  /// Not owned.
  Tracer* tracer = nullptr;
};

/// A window longer than the model has positions for (facts; the front end names its option).
class WindowTooLongError : public std::invalid_argument {
 public:
  WindowTooLongError(std::size_t asked, std::size_t positions, std::size_t trained,
                     std::string unit);
  std::size_t asked() const { return asked_; }
  std::size_t positions() const { return positions_; }  ///< context_length
  std::size_t trained() const { return trained_; }      ///< the window it trained on
  const std::string& unit() const { return unit_; }     ///< "characters" or "tokens"

 private:
  std::size_t asked_, positions_, trained_;
  std::string unit_;
};

/// A save loaded and a prompt encoded, ready to generate from, with what the front end may want
/// to say before the text starts.
struct PreparedSample {
  Checkpoint loaded;
  std::vector<std::int32_t> prompt{};  ///< the ids generation follows (cropped to the window)
  std::string shown_prompt{};          ///< the text of those ids, as printed before each sample
  std::size_t window = 0;              ///< the window each prediction sees
  bool past_trained_window = false;    ///< window is longer than the one the model trained on
  std::size_t prompt_tokens = 0;       ///< the prompt's tokens before any crop to the window
  std::size_t unknown = 0;             ///< prompt characters mapped to id 0 (allow_unknown)
  std::string unknown_which{};         ///< those characters and positions, in the refusal's words
};

/// Loads options.checkpoint (CheckpointError), sets its ops path, checks the sampling options
/// (std::invalid_argument) and the window (WindowTooLongError), encodes the prompt (not UTF-8:
/// std::invalid_argument; characters outside a character model's vocabulary:
/// UnknownCharacterError unless allow_unknown), crops it to its last `window` tokens; an empty
/// prompt starts from the tokenizer's start id. Clamps top_k to the vocabulary.
PreparedSample prepare_sample(SampleOptions& options);

/// Writes a model's text (or a prompt shown with it) to `out` at once and flushes: the printing
/// function of every front end that streams generated text (glass sample, chat). Unless `raw`,
/// control characters other than newline and tab are written as visible escapes
/// (escape_controls, data/visible_text.hpp: ESC -> "␛", NUL -> "␀", U+0085 -> "U+0085"), so
/// that a model's output cannot clear the screen, move the cursor or retitle the terminal;
/// `raw` writes the bytes unchanged. Throws std::runtime_error when `out` cannot be written (a
/// full disk, a closed pipe), naming the reason.
void write_generated_text(std::ostream& out, std::string_view text, bool raw);

/// What generation measured, for the summary line.
struct SampleRun {
  std::size_t generated = 0;        ///< tokens over all samples
  double seconds = 0;               ///< wall time of generation (JSON included)
  std::size_t threads = 0;          ///< the count at the end
  bool chose_threads = false;       ///< the count was chosen by measuring
  std::size_t cores = 0;            ///< every core this process may use
  std::size_t tokens_on_one = 0;    ///< tokens measured on one thread (chose_threads)
  std::size_t tokens_on_cores = 0;  ///< tokens computed on every core (chose_threads)
};

/// Generates options.num_samples samples into `out`: each the shown prompt and its continuation
/// (separated by a dashed line), streamed as the tokens come through write_generated_text
/// (options.raw); or (options.json) one JSON
/// document with the prompt's tokens, the settings and each sample's text and tokens with their
/// probabilities. Throws std::runtime_error when `out` cannot be written (a full disk, a closed
/// pipe), instead of generating into nothing.
SampleRun generate_samples(PreparedSample& prepared, const SampleOptions& options,
                           std::ostream& out);

}  // namespace glass
