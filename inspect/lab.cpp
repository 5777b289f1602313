// The interpretability lab on a loaded save: check the request, tokenize, run the analyses.
// See lab.hpp.

#include "inspect/lab.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "checkpoint/checkpoint.hpp"
#include "checkpoint/run_dir.hpp"
#include "data/text.hpp"
#include "inspect/loss_plot.hpp"

namespace glass {

namespace fs = std::filesystem;

namespace {

/// `text` (UTF-8) as the save's tokens: at least one, at most its window; characters outside a
/// character vocabulary refused unless `allow_unknown` (then id 0, counted in `warnings`).
/// `field` names the text in the errors (LabRequestError).
std::vector<std::int32_t> lab_tokens(const Checkpoint& loaded, const std::string& text,
                                     bool allow_unknown, LabField field,
                                     std::vector<std::string>& warnings) {
  std::u32string chars;
  try {
    chars = utf8_to_u32(text);
  } catch (const Utf8Error& e) {
    throw LabRequestError(field, LabProblem::not_utf8,
                          std::string("is not valid UTF-8: ") + e.what());
  }
  std::size_t unknown = 0;
  std::vector<std::int32_t> ids;
  try {  // refused: the error names the characters and their positions
    ids = loaded.encode_prompt(
        chars, allow_unknown ? UnknownPolicy::kMapToUnknownId : UnknownPolicy::kRefuse, &unknown);
  } catch (const UnknownCharacterError& e) {
    throw LabRequestError(field, LabProblem::unknown_characters,
                          fmt::format("is refused: {}", e.what()));
  }
  const char* which = field == LabField::corrupted ? "the corrupted prompt" : "the prompt";
  if (unknown > 0)
    warnings.push_back(fmt::format(
        "{} character(s) of {} outside the vocabulary mapped to the unknown id 0", unknown, which));
  if (ids.empty()) throw LabRequestError(field, LabProblem::empty, "is empty: give some text");
  try {
    loaded.check_fits_window(ids.size());
  } catch (const PromptTooLongError& e) {
    throw LabRequestError(
        field, LabProblem::too_long,
        fmt::format("has {} {}; the model's context is {} {} (the windows it trained on) and the "
                    "lab reads one window. Give at most {} {}",
                    e.length(), e.unit(), e.window(), e.unit(), e.window(), e.unit()));
  }
  return ids;
}

/// The checks that need no tokens: top_k, the selected head, the heads to ablate, a prompt for
/// the analyses that run the model on one.
void check_request(const ModelConfig& config, const LabRequest& q) {
  if (q.top_k < 1 || q.top_k > kMaxLabTopK)
    throw LabRequestError(LabField::top_k, LabProblem::out_of_range,
                          fmt::format("must be from 1 to {} (got {})", kMaxLabTopK, q.top_k));
  if (q.layer >= config.n_layers)
    throw LabRequestError(LabField::layer, LabProblem::out_of_range,
                          fmt::format("{} is out of range: the model has {} layers (0..{})",
                                      q.layer, config.n_layers, config.n_layers - 1));
  if (q.head >= config.n_heads)
    throw LabRequestError(LabField::head, LabProblem::out_of_range,
                          fmt::format("{} is out of range: the model has {} query heads (0..{})",
                                      q.head, config.n_heads, config.n_heads - 1));
  for (const HeadRef& h : q.ablate ? *q.ablate : std::vector<HeadRef>())
    if (h.layer >= config.n_layers || h.head >= config.n_heads)
      throw LabRequestError(LabField::heads, LabProblem::out_of_range,
                            fmt::format("name head {}.{}; the model has {} layers of {} heads",
                                        h.layer, h.head, config.n_layers, config.n_heads));
  if ((q.lens || q.ablate || q.patch || q.dla || q.attribution) && !q.prompt)
    throw LabRequestError(LabField::prompt, LabProblem::missing,
                          "is needed by the logit lens, ablation, patching and attribution, "
                          "which run the model on it");
}

InterpReport::Ablation ablation(const Decoder& model, const LabRequest& q,
                                const std::vector<std::int32_t>& tokens, std::size_t window) {
  InterpReport::Ablation a;
  a.heads = *q.ablate;
  a.mode = q.ablation;
  a.top_k = q.top_k;
  HeadMeans means;
  // The means are needed only to ablate a head (no head: both distributions are the model's).
  const bool means_needed = a.mode == AblationMode::mean && !a.heads.empty();
  if (means_needed) {
    const std::vector<std::int32_t>& over = q.mean_over.empty() ? tokens : q.mean_over;
    // (rows, cols): whole windows of the reference, or the prompt as one row.
    const std::size_t cols = std::min(window, over.size()), rows = over.size() / cols;
    Ids batch = Ids::from_shape({rows, cols});
    std::copy(over.begin(), over.begin() + static_cast<long>(rows * cols), batch.data());
    means = head_means(model, batch);
    a.mean_over = q.mean_over_source.empty() ? "the prompt's positions" : q.mean_over_source;
  }
  a.shift = next_token_shift(model, tokens, a.heads, means_needed ? a.mode : AblationMode::zero,
                             means_needed ? &means : nullptr);
  return a;
}

/// The head scores a save recorded (its interp.json), for the weights' step.
InterpReport::Scores saved_head_scores(const Checkpoint& loaded, bool weights_are_best) {
  if (weights_are_best)
    throw LabRequestError(LabField::head_scores, LabProblem::missing,
                          "without a prompt are the save's interp.json, measured on the latest "
                          "weights, not on best.safetensors: measure them on a prompt");
  if (!fs::exists(fs::path(loaded.files_dir()) / kInterpFile))
    throw LabRequestError(
        LabField::head_scores, LabProblem::not_recorded,
        "without a prompt are the save's record, and this save holds no interp.json "
        "(trained with the recording off, or older)");
  const std::vector<InterpRecord> records =
      read_interp_history(loaded.files_dir(), loaded.config());
  const auto it = std::find_if(records.begin(), records.end(), [&](const auto& r) {
    return std::to_string(r.step) == loaded.weights_step();
  });
  if (it == records.end())
    throw LabRequestError(
        LabField::head_scores, LabProblem::not_recorded,
        fmt::format("without a prompt are the save's interp.json, which is not of the weights' "
                    "step {}",
                    loaded.weights_step()));
  return {fmt::format("the validation probe, recorded by glass train at step {}", it->step), *it};
}

/// The answer and the other token of patching: the next token the model predicts after the
/// prompt and after the corrupted prompt (of the same length). With `distinct`, they must differ.
std::pair<std::int32_t, std::int32_t> patching_tokens(const Decoder& model, const InterpReport& r,
                                                      const std::vector<std::int32_t>& corrupted,
                                                      bool distinct) {
  const std::vector<std::int32_t>& tokens = r.prompt;
  if (corrupted.size() != tokens.size())
    throw LabRequestError(
        LabField::corrupted, LabProblem::length_mismatch,
        fmt::format("has {} tokens and the prompt {}: patching copies activations position by "
                    "position, so the two prompts need the same length in tokens",
                    corrupted.size(), tokens.size()));
  const std::size_t V = model.config().vocab_size, T = tokens.size();
  auto predicted = [&](const std::vector<std::int32_t>& ids) {
    const Array logits = ablated_logits(model, as_batch(ids), {}, AblationMode::zero);
    return static_cast<std::int32_t>(top_k_indices(logits.data() + (T - 1) * V, V, 1).front());
  };
  const std::int32_t answer = predicted(tokens), other = predicted(corrupted);
  if (distinct && answer == other)
    throw LabRequestError(
        LabField::corrupted, LabProblem::same_prediction,
        fmt::format("makes the model predict '{}' next, as the prompt does: there is no logit "
                    "difference to recover; choose a corrupted prompt that changes the prediction",
                    r.label(answer)));
  return {answer, other};
}

InterpReport::Patch patch(const Decoder& model, const InterpReport& r,
                          std::vector<std::int32_t> corrupted) {
  const std::vector<std::int32_t>& tokens = r.prompt;
  const auto [answer, other] = patching_tokens(model, r, corrupted, true);
  InterpReport::Patch p;
  p.result = patch_residual_stream(model, tokens, corrupted, answer, other);
  p.corrupted = std::move(corrupted);
  return p;
}

/// Direct logit attribution of the prompt: the target's text must be one token of the vocabulary.
LogitAttribution dla(const Checkpoint& loaded, const LabRequest& q, const InterpReport& r) {
  std::optional<std::int32_t> target;
  if (q.target) {
    std::vector<std::string> unused;
    const std::vector<std::int32_t> ids =
        lab_tokens(loaded, *q.target, false, LabField::target, unused);
    if (ids.size() != 1)
      throw LabRequestError(
          LabField::target, LabProblem::not_one_token,
          fmt::format("'{}' is {} tokens; the logit split is one token's", *q.target, ids.size()));
    target = ids.front();
  }
  if (q.position && *q.position >= r.prompt.size())
    throw LabRequestError(LabField::position, LabProblem::out_of_range,
                          fmt::format("{} is out of range: the prompt has {} tokens (0..{})",
                                      *q.position, r.prompt.size(), r.prompt.size() - 1));
  return logit_attribution(loaded.model(), r.prompt, q.position, target);
}

/// Attribution patching of the prompt against the corrupted prompt, next to exact patching.
InterpReport::Attribution attribution(const Decoder& model, const LabRequest& q,
                                      const InterpReport& r, std::vector<std::int32_t> corrupted) {
  const bool diff = q.metric == PatchMetric::Kind::logit_diff;
  const auto [answer, other] = patching_tokens(model, r, corrupted, diff);
  const PatchMetric metric{q.metric, answer, other};
  InterpReport::Attribution a;
  a.estimate = attribution_patching(model, r.prompt, corrupted, metric);
  a.exact = exact_patching(model, r.prompt, corrupted, metric);
  a.spearman_heads = spearman(a.estimate.total.heads, a.exact.heads);
  a.corrupted = std::move(corrupted);
  return a;
}

/// Every record of `run_dir`, next to the validation losses of the save's log.csv.
InterpReport::History history(const Checkpoint& loaded, const std::string& run_dir,
                              std::vector<std::string>& warnings) {
  InterpReport::History h;
  h.records = read_interp_history(run_dir, loaded.config());
  try {
    h.loss = read_save_loss_log(loaded.files_dir());
  } catch (const std::exception& e) {  // a damaged log.csv: the history without its losses
    warnings.push_back(std::string("no validation losses next to the history: ") + e.what());
  }
  try {  // checked like every file of the save: its manifest, its run, the model's shape
    h.probe = read_probe_history(checkpoint_files_dir(run_dir), loaded.config());
  } catch (const std::exception& e) {  // never shown as this run's
    warnings.push_back(std::string("the probe's attention history is not shown: ") + e.what());
  }
  return h;
}

}  // namespace

std::vector<std::int32_t> mean_reference(const std::string& data_path, const Checkpoint& m,
                                         std::string& source) {
  const std::size_t window = m.window();
  std::string data = data_path;
  if (data.empty()) {
    try {
      data = training_data(m.files_dir());
    } catch (const std::exception&) {}
  }
  std::error_code ec;
  if (!data.empty() && fs::is_regular_file(data, ec)) {
    std::ifstream in(data, std::ios::binary);
    std::string head(kMeanWindows * window * 4, '\0');  // UTF-8: at most 4 bytes a character
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<std::size_t>(in.gcount()));
    std::u32string text;
    for (std::size_t cut = head.size(); cut + 4 > head.size() && cut > 0; --cut) {
      try {  // a character cut at the end is left out
        text = utf8_to_u32(head.substr(0, cut));
        break;
      } catch (const Utf8Error&) {}
    }
    // A character model reads one token a character; a BPE model's tokens are fewer.
    std::vector<std::int32_t> ids = m.encode_prompt(text, UnknownPolicy::kMapToUnknownId);
    const std::size_t full = std::min(ids.size() / window, kMeanWindows) * window;
    if (full > 0) {
      ids.resize(full);
      source = fmt::format("the first {} {} of the training text {}", full, m.unit(),
                           fs::path(data).filename().string());
      return ids;
    }
  }
  source = "the prompt (no training text found)";
  return {};
}

InterpReport run_lab(const Checkpoint& loaded, const LabRequest& q) {
  const Decoder& model = loaded.model();
  check_request(model.config(), q);
  const std::size_t window = loaded.window();
  InterpReport r;
  r.labels = token_labels(loaded);
  if (q.prompt)
    r.prompt = lab_tokens(loaded, *q.prompt, q.allow_unknown, LabField::prompt, r.warnings);
  std::vector<std::int32_t> corrupted, attribution_corrupted;
  if (q.patch)
    corrupted = lab_tokens(loaded, *q.patch, q.allow_unknown, LabField::corrupted, r.warnings);
  if (q.attribution)
    attribution_corrupted =
        lab_tokens(loaded, *q.attribution, q.allow_unknown, LabField::corrupted, r.warnings);
  if (q.head_scores && q.prompt && r.prompt.size() < 3)
    throw LabRequestError(LabField::prompt, LabProblem::too_short,
                          fmt::format("has {} tokens; the head scores measure on at least 3 tokens",
                                      r.prompt.size()));
  if (q.lens) r.lens = logit_lens(model, r.prompt, std::min(q.top_k, model.config().vocab_size));
  if (q.ablate) r.ablation = ablation(model, q, r.prompt, window);
  if (q.head_scores && q.prompt)
    r.head_scores =
        InterpReport::Scores{"the prompt", measure_head_scores(model, r.prompt, window)};
  else if (q.head_scores)
    r.head_scores = saved_head_scores(loaded, q.weights_are_best);
  if (q.patch) r.patch = patch(model, r, std::move(corrupted));
  if (q.history) r.history = history(loaded, *q.history, r.warnings);
  if (q.dla) r.dla = dla(loaded, q, r);
  if (q.attribution) r.attribution = attribution(model, q, r, std::move(attribution_corrupted));
  return r;
}

}  // namespace glass
