#pragma once
// The lab report: what the interpretability lab computed (logit lens, ablation, head scores,
// patching, history; inspect/lab.hpp runs it) with the tokens' text next to the numbers, as
// terminal tables and as the one JSON shape of a lab report (the shape is in docs/en/cli.md,
// "glass inspect: the interpretability lab"), which `glass inspect --json`, the page of
// `glass inspect --html` (drawn by web/lab_views.js) and the lab routes of `glass serve` all
// carry. The tools work in tokens: a character model's tokens are characters, a BPE model's are
// its subwords.

#include "checkpoint/checkpoint.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "inspect/loss_plot.hpp"
#include "inspect/probe_history.hpp"
#include "interp/interp.hpp"

namespace glass {

/// One label per token id of the checkpoint's vocabulary (id_label): its text (token_text)
/// with spaces, newlines and control characters made visible (token_label), "<unk>" style names
/// kept for BPE specials.
std::vector<std::string> token_labels(const Checkpoint& loaded);

/// "L.H[,L.H...]" as heads (each checked against the model's n_layers and n_heads; repeats
/// kept once). std::invalid_argument saying what is wrong and what is valid.
std::vector<HeadRef> parse_head_list(const std::string& text, std::size_t n_layers,
                                     std::size_t n_heads);

/// Every record of a run directory in step order: the current save's interp_history.json and
/// the interp.json of each step directory of the current save's run (a save of another run,
/// left by `glass train --overwrite`, is skipped), one per step. Each file is checked against
/// its save's manifest, and each record against `model` (check_record_values). A file that
/// differs or a record that cannot be throws CheckpointError. Empty when there are none.
std::vector<InterpRecord> read_interp_history(const std::string& run_dir, const ModelConfig& model);

/// Refuses (CheckpointError naming `where`) a record no training of `model` could write, as a
/// resealed interp.json can hold: a step after `last_step` (the save's; none when < 0), another
/// n_layers or n_heads than the model's, a share (previous-token, induction, first-position: a
/// mean attention weight) outside [0, 1], an ablation Δloss or probe loss beyond
/// kMaxRecordedLoss nats, or a negative time.
void check_record_values(const InterpRecord& r, const ModelConfig& model, long last_step,
                         const std::string& where);

/// The largest loss, in nats per token, a record may hold (a probability of e^-1000; the loss
/// of a uniform guess over the largest vocabulary is 12.5 nats).
inline constexpr double kMaxRecordedLoss = 1000;

/// What the lab computed (run_lab, inspect/lab.hpp); each view is present when it was asked.
struct InterpReport {
  std::string checkpoint;
  std::vector<std::string> labels;   ///< per token id (token_labels)
  std::vector<std::int32_t> prompt;  ///< the (clean) prompt's tokens; empty without a prompt
  /// Facts worth a warning (characters mapped to the unknown id, a training log not read).
  std::vector<std::string> warnings;
  std::optional<LogitLens> lens;
  struct Ablation {
    std::vector<HeadRef> heads;
    AblationMode mode = AblationMode::zero;
    NextTokenShift shift;
    std::size_t top_k = 5;  ///< the next tokens listed: the top_k before and the top_k after
    std::string mean_over;  ///< mean ablation: what the means were taken over ("" otherwise)
    /// The ids listed: the top_k most probable before, then those of the top_k after not
    /// among them.
    std::vector<std::size_t> listed() const;
  };
  std::optional<Ablation> ablation;
  struct Scores {
    std::string source;  ///< where previous-token, first-position and the Δloss were measured
    InterpRecord record;
  };
  std::optional<Scores> head_scores;
  struct Patch {
    std::vector<std::int32_t> corrupted;
    PatchingResult result;
  };
  std::optional<Patch> patch;
  struct History {
    std::vector<InterpRecord> records;
    std::vector<LossPoint> loss;  ///< the run's evaluations (log.csv), for the validation loss
    /// The probe's attention at every save (probe_history.json of the current save); none for
    /// a run trained before it was recorded, or when the file cannot be trusted (a warning).
    std::optional<ProbeHistory> probe;
  };
  std::optional<History> history;
  std::optional<LogitAttribution> dla;
  struct Attribution {
    std::vector<std::int32_t> corrupted;
    AttributionPatching estimate;  ///< grad . (clean - corrupted), per component and position
    PatchingEffects exact;         ///< exact patching of the same components
    double spearman_heads = 0;     ///< rank correlation of estimate and exact over the heads
  };
  std::optional<Attribution> attribution;

  /// The label of token `id` (labels[id]; "?" outside the vocabulary).
  std::string label(std::int32_t id) const;
};

/// The head_scores view measured live: previous-token and first-position share on the windows
/// of `text` (at least 3 tokens; windows of `window` tokens), induction on the repeated random
/// sequence (ProbeSpec's period and seed, fitted to the window), zero-ablation Δloss on the
/// text. The same computation as a save's interp.json (record_interp), on another text.
InterpRecord measure_head_scores(const Decoder& model, const std::vector<std::int32_t>& text,
                                 std::size_t window);

/// The direct logit attribution and attribution patching views (inspect/attribution_views.cpp).
nlohmann::ordered_json dla_json(const InterpReport& report);
nlohmann::ordered_json attribution_json(const InterpReport& report);
std::string dla_terminal(const InterpReport& report);
std::string attribution_terminal(const InterpReport& report);

/// The views as terminal text (plain, aligned; `width` columns at most where tables wrap).
/// In inspect/interp_terminal.cpp.
std::string interp_terminal(const InterpReport& report, std::size_t width = 120);

/// The views as one JSON object, the one shape of a lab report: {"checkpoint", "prompt":
/// [{"id","text"}...], "lens": {"points", "top_k", "top": [point][position][k] {"id", "text",
/// "prob"}, "true_next_prob": [point][position < T-1]}, "ablation": {"heads", "mode",
/// "kl_divergence", "top": [{"id","text"}] (listed()), "before", "after": vocab_size
/// probabilities, "mean_over" (mean ablation)}, "head_scores": ..., "patching": ...,
/// "history": ..., "dla": {"position", "target": {"id","text"}, "logit", "scale", "sum",
/// "embeddings", "heads": [layer][head], "mlps": [layer]}, "attribution": {"corrupted",
/// "metric", "answer", "other", "clean", "corrupted_metric", "estimate" and "exact":
/// {"heads": [layer][head], "mlps": [layer]}, "head_positions": [layer][head][position],
/// "mlp_positions": [layer][position], "spearman_heads"}} (absent views left out; non-finite numbers as null). A token's "text" is
/// its visible label (token_labels).
nlohmann::ordered_json interp_json(const InterpReport& report);

}  // namespace glass
