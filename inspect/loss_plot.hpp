#pragma once
// The loss curve: train and validation loss against the step, read from the trainer's log.csv
// and written by `glass train` at the end of a run as DIR/loss.html (cli/loss_page.cpp), a
// self-contained page that draws the chart with web/loss_chart.js — the same script that draws
// it on the inspector page. The page offers the chart as an SVG file too.

#include <string>
#include <vector>

namespace glass {

/// One row of DIR/log.csv written by the trainer (missing values are NaN).
struct LossPoint {
  double step = 0, train_loss = 0, val_loss = 0;
};

/// One row of DIR/steps.csv: the batch loss and the learning rate of one optimizer step.
struct StepPoint {
  double step = 0, loss = 0, lr = 0;
};

/// Everything the loss chart draws: the evaluations (train and validation loss), the batch loss
/// of every step, and the vocabulary size V (the chart draws ln V, the loss of a uniform guess;
/// 0 = not known, no line).
struct LossCurve {
  std::string title = "GlassLLM training loss";
  std::vector<LossPoint> evals;
  std::vector<StepPoint> steps;
  std::size_t vocab_size = 0;
  /// What the model predicts one of, for the page's words ("nats per character", "among the
  /// V characters"): "character" or "token" (TextTokenizer::unit(false)).
  std::string unit = "character";
};

/// Reads step, train_loss and val_loss from a trainer log.csv (columns found by header name).
/// Returns an empty vector when the file does not exist; throws std::runtime_error when it
/// exists but has no step/train_loss columns.
std::vector<LossPoint> read_loss_log(const std::string& path);

/// The same, of log.csv text (`source` names it in messages).
std::vector<LossPoint> parse_loss_log(const std::string& text, const std::string& source);

/// SAVE_DIR/log.csv verified like every other file of a save: read within its size limit and
/// checked against the save's manifest (read_verified_file) before it is parsed. log.csv is
/// rewritten whole into every save (the evaluations so far), so the manifest's size and SHA-256
/// cover the whole file. Empty when the save has no log.csv. Throws CheckpointError for a file
/// that is too large or differs from what the manifest records (a damaged log is never shown
/// as the run's), std::runtime_error for one without step/train_loss columns.
std::vector<LossPoint> read_save_loss_log(const std::string& save_dir);

/// Reads step, loss and lr from a trainer steps.csv (columns found by header name). Returns an
/// empty vector when the file does not exist; throws std::runtime_error when it exists but has no
/// step/loss columns.
std::vector<StepPoint> read_steps_log(const std::string& path);

/// The data of the chart as JSON: {"title": ..., "step": [...], "train": [...], "val": [...]},
/// non-finite values as null (the line is broken there).
std::string loss_json(const std::vector<LossPoint>& points, const std::string& title);

/// The same, with the per-step rows and V: {..., "steps": {"step": [...], "loss": [...],
/// "lr": [...]}, "vocab_size": V, "unit": "character"|"token"}, the input of lossChartSvg
/// (web/loss_chart.js) and of the page's words.
std::string loss_json(const LossCurve& curve);

/// The loss page (web/loss.html) with `points` in it: one HTML file that needs no
/// network; opened in a browser it draws the chart (720 x 440 px: title, axes with ticks at
/// "nice" values, grid, "step" and "loss (nats)" labels, one line per series broken at missing
/// values, point markers when a series has few points, a legend) and links it as loss.svg.
std::string loss_plot_html(const std::vector<LossPoint>& points,
                           const std::string& title = "GlassLLM training loss");

/// The loss page with the whole curve: also the batch loss of every step (raw, and smoothed by
/// an exponential moving average), the learning rate on a second axis, the ln V line and the
/// best validation point.
std::string loss_plot_html(const LossCurve& curve);

}  // namespace glass
