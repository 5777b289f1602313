#pragma once
// The loss curve as an SVG line chart (train and validation loss against the step), written by
// the trainer at the end of a run as DIR/loss.svg. Any browser shows it; no plotting library.

#include <string>
#include <vector>

namespace glass {

/// One line of the chart: values[i] is the loss at steps[i].
struct LossSeries {
  std::string label;            ///< legend text, e.g. "train"
  std::vector<double> steps;    ///< x values (optimizer steps), any order is drawn as given
  std::vector<double> values;   ///< y values (mean cross-entropy, nats); non-finite ones are skipped
  std::string color = "#1f77b4";  ///< SVG colour of the line and its markers
};

/// A complete SVG document (width 720, height 440 px): title, axes with ticks at "nice" values
/// (1, 2, 5 x 10^k), grid lines, the axis labels "step" and "loss (nats)", one polyline per
/// series (broken at non-finite values), point markers when a series has few points, and a
/// legend. Throws std::invalid_argument if a series has steps.size() != values.size().
/// With no finite point at all the chart says "no data yet".
std::string loss_plot_svg(const std::vector<LossSeries>& series, const std::string& title);

/// The usual chart: train and val loss measured at the same eval steps (the rows of log.csv).
std::string loss_plot_svg(const std::vector<double>& steps, const std::vector<double>& train_loss,
                          const std::vector<double>& val_loss,
                          const std::string& title = "GlassLLM training loss");

}  // namespace glass
