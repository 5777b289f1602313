#pragma once
// The interpretability lab on a loaded save: one request (a prompt, the analyses asked for) in,
// one lab report (inspect/interp_report.hpp) out. `glass inspect` (--lens, --ablate,
// --head-scores, --patch, --history, --dla, --attribution) and the lab routes of `glass serve` (POST /api/lens,
// /api/ablate) both call run_lab; each front end words its errors itself (flag names, JSON
// fields) from the typed LabRequestError.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.hpp"
#include "inspect/interp_report.hpp"

namespace glass {

/// What a lab request asks: the prompt(s) as text and the analyses, each run on the reference
/// path (the hook points') of the loaded model.
struct LabRequest {
  std::optional<std::string> prompt;  ///< UTF-8; needed by the lens, the ablation and patching
  bool allow_unknown = false;         ///< characters outside a character vocabulary become id 0
  std::size_t top_k = 5;  ///< next tokens listed per lens cell and per ablated distribution
  /// The head the views start on (the page of `glass inspect --html`): checked against the model.
  std::size_t layer = 0, head = 0;
  bool lens = false;
  std::optional<std::vector<HeadRef>> ablate;  ///< the heads to knock out (may be empty)
  AblationMode ablation = AblationMode::zero;
  /// Mean ablation: token ids whose whole windows the heads' means are taken over, and what they
  /// are (e.g. "the first 128 characters of the training text"); empty: the prompt's positions.
  std::vector<std::int32_t> mean_over;
  std::string mean_over_source;
  bool head_scores = false;       ///< on the prompt, or without one the save's recorded interp.json
  bool weights_are_best = false;  ///< the model holds best.safetensors, not the latest
  std::optional<std::string> patch;    ///< the corrupted prompt of activation patching
  std::optional<std::string> history;  ///< the run directory whose recorded scores to list
  /// Direct logit attribution of the prompt: the logit of `target` (one token's text; default
  /// the model's most probable next token) at `position` (default the last), split into parts.
  bool dla = false;
  std::optional<std::string> target;
  std::optional<std::size_t> position;
  /// Attribution patching of the prompt (clean) against this corrupted prompt, next to exact
  /// patching of the same heads and MLPs, by `metric`: logit_diff (the clean prediction's logit
  /// minus the corrupted one's) or log_prob (of the clean prediction).
  std::optional<std::string> attribution;
  PatchMetric::Kind metric = PatchMetric::Kind::logit_diff;
};

/// The part of a request an error is about.
enum class LabField { prompt, corrupted, top_k, layer, head, heads, head_scores, target, position };

/// What is wrong with it.
enum class LabProblem {
  missing,             ///< an analysis needs it and it was not given
  not_utf8,            ///< the text is not valid UTF-8
  unknown_characters,  ///< characters outside a character vocabulary (and not allowed)
  empty,               ///< no token
  too_long,            ///< more tokens than the window
  too_short,           ///< fewer tokens than the analysis needs
  out_of_range,        ///< a number outside what the model has
  length_mismatch,     ///< the corrupted prompt's length differs from the prompt's
  same_prediction,     ///< both prompts predict the same next token: nothing to patch
  not_recorded,        ///< the save holds no record of what was asked
  not_one_token,       ///< a token was asked for and the text is not exactly one token
};

/// A request the lab cannot run: which part, what is wrong, and the fact in words that name no
/// front end's flag or field ("has 24 tokens; ...", "must be from 1 to 1000 (got 0)").
class LabRequestError : public std::invalid_argument {
 public:
  LabRequestError(LabField field, LabProblem problem, const std::string& fact)
      : std::invalid_argument(fact), field(field), problem(problem) {}
  LabField field;
  LabProblem problem;
};

/// The most next tokens a request may list (top_k).
inline constexpr std::size_t kMaxLabTopK = 1000;

/// Windows of the training text the mean of each head's output is taken over (mean ablation).
inline constexpr std::size_t kMeanWindows = 4;

/// The reference batch of mean ablation (docs/interpretabilidade.md: each ablated head's output
/// becomes its mean over a reference batch), the same for `glass inspect` and /api/ablate: the
/// token ids of the first kMeanWindows windows of loaded.window() tokens of the training text,
/// `data_path` when given, else the file config.json names (training_data) when it is found,
/// read bounded; `source` says which ("the first 128 characters of the training text
/// text.txt"). Without a training text (or one shorter than a window): none, so run_lab averages
/// over the prompt's positions, and `source` says so.
std::vector<std::int32_t> mean_reference(const std::string& data_path, const Checkpoint& loaded,
                                         std::string& source);

/// Checks `request` against the model (LabRequestError), tokenizes its prompts with the save's
/// tokenizer (at most the save's window), runs each analysis asked and returns the report
/// (report.checkpoint left empty: the caller names the save). A save's files that do not
/// match their manifest (the recorded scores) throw CheckpointError.
InterpReport run_lab(const Checkpoint& loaded, const LabRequest& request);

}  // namespace glass
