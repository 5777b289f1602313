// SVG loss chart. See loss_plot.hpp.

#include "train/inspect/loss_plot.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace glass {

namespace {

constexpr double kWidth = 720, kHeight = 440;
constexpr double kLeft = 72, kRight = 24, kTop = 52, kBottom = 62;  // plot margins, px

/// Text safe inside SVG/XML.
std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

/// A "nice" tick spacing near range / target_ticks: 1, 2 or 5 times a power of ten.
double nice_step(double range, int target_ticks) {
  const double raw = range / target_ticks;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double r = raw / magnitude;
  const double nice = r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10;
  return nice * magnitude;
}

/// Shortest readable label for a tick value (no "-0", no float noise like 0.30000000000000004).
std::string tick_label(double v, double step) {
  if (std::abs(v) < step * 1e-9) v = 0;
  const int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  return fmt::format("{:.{}f}", v, std::max(decimals, 0));
}

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool empty() const { return !(lo <= hi); }
};

}  // namespace

std::string loss_plot_svg(const std::vector<LossSeries>& series, const std::string& title) {
  Range xs, ys;
  for (const LossSeries& s : series) {
    if (s.steps.size() != s.values.size()) {
      throw std::invalid_argument(fmt::format(
          "loss plot: series '{}' has {} steps but {} values", s.label, s.steps.size(), s.values.size()));
    }
    for (std::size_t i = 0; i < s.steps.size(); ++i) {
      if (std::isfinite(s.steps[i]) && std::isfinite(s.values[i])) {
        xs.add(s.steps[i]);
        ys.add(s.values[i]);
      }
    }
  }

  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  std::string svg = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"28\" text-anchor=\"middle\" font-size=\"16\" font-weight=\"bold\">{3}</text>\n",
      kWidth, kHeight, kLeft + plot_w / 2, xml_escape(title));

  if (xs.empty()) {
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#666\">no data yet</text>\n</svg>\n",
                       kWidth / 2, kHeight / 2);
    return svg;
  }

  // Axis ranges: x from the first to the last step; y padded by 5% and widened to whole ticks.
  if (xs.hi == xs.lo) { xs.lo -= 1; xs.hi += 1; }
  if (ys.hi == ys.lo) { ys.lo -= 0.5; ys.hi += 0.5; }
  const double x_step = nice_step(xs.hi - xs.lo, 6);
  const double pad = 0.05 * (ys.hi - ys.lo);
  const double y_step = nice_step(ys.hi - ys.lo + 2 * pad, 5);
  const double y_lo = std::floor((ys.lo - pad) / y_step) * y_step;
  const double y_hi = std::ceil((ys.hi + pad) / y_step) * y_step;
  const double x_lo = xs.lo, x_hi = xs.hi;

  auto px = [&](double x) { return kLeft + (x - x_lo) / (x_hi - x_lo) * plot_w; };
  auto py = [&](double y) { return kTop + (y_hi - y) / (y_hi - y_lo) * plot_h; };

  // Grid, ticks and tick labels.
  svg += "<g stroke=\"#e0e0e0\" stroke-width=\"1\">\n";
  for (double y = y_lo; y <= y_hi + y_step * 1e-6; y += y_step)
    svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>\n", kLeft, py(y), kLeft + plot_w, py(y));
  const double first_x = std::ceil(x_lo / x_step - 1e-9) * x_step;
  for (double x = first_x; x <= x_hi + x_step * 1e-6; x += x_step)
    svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>\n", px(x), kTop, px(x), kTop + plot_h);
  svg += "</g>\n<g fill=\"#333\">\n";
  for (double y = y_lo; y <= y_hi + y_step * 1e-6; y += y_step)
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", kLeft - 8, py(y) + 4, tick_label(y, y_step));
  for (double x = first_x; x <= x_hi + x_step * 1e-6; x += x_step)
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", px(x), kTop + plot_h + 18, tick_label(x, x_step));
  svg += "</g>\n";

  // Axes and their labels.
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\n"
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">step</text>\n"
      "<text x=\"18\" y=\"{}\" text-anchor=\"middle\" transform=\"rotate(-90 18 {})\">loss (nats)</text>\n",
      kLeft, kTop, plot_w, plot_h, kLeft + plot_w / 2, kHeight - 16, kTop + plot_h / 2,
      kTop + plot_h / 2);

  // The lines, broken at non-finite values, with markers when there are few points.
  for (const LossSeries& s : series) {
    std::vector<std::string> segments(1);
    std::size_t finite = 0;
    for (std::size_t i = 0; i < s.steps.size(); ++i) {
      if (!(std::isfinite(s.steps[i]) && std::isfinite(s.values[i]))) {
        if (!segments.back().empty()) segments.emplace_back();
        continue;
      }
      ++finite;
      segments.back() += fmt::format("{:.1f},{:.1f} ", px(s.steps[i]), py(s.values[i]));
    }
    const std::string color = xml_escape(s.color);
    for (const std::string& points : segments) {
      if (points.empty()) continue;
      svg += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>\n",
                         color, points.substr(0, points.size() - 1));
    }
    if (finite <= 60) {
      svg += fmt::format("<g fill=\"{}\">\n", color);
      for (std::size_t i = 0; i < s.steps.size(); ++i) {
        if (std::isfinite(s.steps[i]) && std::isfinite(s.values[i]))
          svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\"/>\n", px(s.steps[i]), py(s.values[i]));
      }
      svg += "</g>\n";
    }
  }

  // Legend, top right inside the plot.
  const double legend_w = 130, row = 20;
  const double lx = kLeft + plot_w - legend_w - 10, ly = kTop + 10;
  svg += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{}\" height=\"{}\" fill=\"white\" "
                     "fill-opacity=\"0.9\" stroke=\"#999\"/>\n",
                     lx, ly, legend_w, row * static_cast<double>(series.size()) + 8);
  for (std::size_t i = 0; i < series.size(); ++i) {
    const double y = ly + 4 + row * (static_cast<double>(i) + 0.5);
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"{3}\" stroke-width=\"2\"/>\n"
        "<text x=\"{4:.1f}\" y=\"{5:.1f}\">{6}</text>\n",
        lx + 8, y, lx + 32, xml_escape(series[i].color), lx + 40, y + 4, xml_escape(series[i].label));
  }
  svg += "</svg>\n";
  return svg;
}

std::string loss_plot_svg(const std::vector<double>& steps, const std::vector<double>& train_loss,
                          const std::vector<double>& val_loss, const std::string& title) {
  std::vector<LossSeries> series(2);
  series[0] = {"train", steps, train_loss, "#1f77b4"};
  series[1] = {"validation", steps, val_loss, "#d62728"};
  return loss_plot_svg(series, title);
}

}  // namespace glass
