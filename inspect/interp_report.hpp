#pragma once
// The interpretability views of `glass inspect` (--lens, --ablate, --head-scores, --patch,
// --history): the numbers of interp/ with the tokens' text next to them, as terminal tables,
// JSON (the shape is in docs/en/cli.md, "glass inspect: the interpretability lab") and HTML
// sections. The tools work in tokens: a character model's tokens are characters, a BPE
// model's are its subwords.

#include "checkpoint/checkpoint.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "inspect/loss_plot.hpp"
#include "interp/interp.hpp"

namespace glass {

/// One label per token id of the checkpoint's vocabulary: its text (TextTokenizer::token_text)
/// with spaces, newlines and control characters made visible (token_label), "<unk>" style names
/// kept for BPE specials.
std::vector<std::string> token_labels(const Checkpoint& loaded);

/// "L.H[,L.H...]" as heads (each checked against the model's n_layers and n_heads; repeats
/// kept once). std::invalid_argument saying what is wrong and what is valid.
std::vector<HeadRef> parse_head_list(const std::string& text, std::size_t n_layers,
                                     std::size_t n_heads);

/// Every record of a run directory in step order: the current save's interp_history.json and
/// the interp.json of each step directory (checked against its manifest; a file that differs
/// throws CheckpointError), one per step. Empty when there are none.
std::vector<InterpRecord> read_interp_history(const std::string& run_dir);

/// What `glass inspect` computed; each view is present when its option was given.
struct InterpReport {
  std::string checkpoint;
  std::vector<std::string> labels;   ///< per token id (token_labels)
  std::vector<std::int32_t> prompt;  ///< the (clean) prompt's tokens; empty for --history alone
  std::optional<LogitLens> lens;
  struct Ablation {
    std::vector<HeadRef> heads;
    AblationMode mode = AblationMode::zero;
    NextTokenShift shift;
    std::size_t top_k = 5;
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
  };
  std::optional<History> history;
};

/// The head_scores view measured live: previous-token and first-position share on the windows
/// of `text` (at least 3 tokens; windows of `window` tokens), induction on the repeated random
/// sequence (ProbeSpec's period and seed, fitted to the window), zero-ablation Δloss on the
/// text. The same computation as a save's interp.json (record_interp), on another text.
InterpRecord measure_head_scores(const Decoder& model, const std::vector<std::int32_t>& text,
                                 std::size_t window);

/// The views as terminal text (plain, aligned; `width` columns at most where tables wrap).
std::string interp_terminal(const InterpReport& report, std::size_t width = 120);

/// The views as one JSON object: {"checkpoint", "prompt": [{"id","text"}...], "lens": ...,
/// "ablation": ..., "head_scores": ..., "patching": ..., "history": ...} (absent views left
/// out; non-finite numbers as null).
nlohmann::ordered_json interp_json(const InterpReport& report);

/// The views as HTML sections (<section class="glass-interp">, tables with their numbers,
/// cells shaded by value), self-contained: no script, no network.
std::string interp_html_sections(const InterpReport& report);

/// A whole page holding interp_html_sections, for a view without the inspector page.
std::string interp_page(const InterpReport& report, const std::string& title);

/// `page` with `sections` inserted before its </body> (appended when it has none).
std::string insert_before_body_end(std::string page, const std::string& sections);

}  // namespace glass
