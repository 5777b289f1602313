// The SVG loss chart: well-formed structure, both series drawn, escaping, errors.
// (Rendering was also checked by hand: python3 xml.etree parses the output.)

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "train/inspect/loss_plot.hpp"

namespace {
std::size_t count(const std::string& s, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = s.find(needle); pos != std::string::npos; pos = s.find(needle, pos + 1)) ++n;
  return n;
}
}  // namespace

TEST(LossPlot, DrawsTrainAndValWithAxesAndLegend) {
  const std::vector<double> steps = {0, 250, 500, 750, 1000};
  const std::vector<double> train = {4.17, 2.5, 2.0, 1.8, 1.7};
  const std::vector<double> val = {4.17, 2.6, 2.1, 1.95, 1.9};
  const std::string svg = glass::loss_plot_svg(steps, train, val, "tiny <shakespeare> & co");
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("<svg xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  EXPECT_EQ(count(svg, "<svg"), 1u);
  EXPECT_EQ(count(svg, "</svg>"), 1u);
  EXPECT_EQ(count(svg, "<polyline"), 2u);
  EXPECT_EQ(count(svg, "<circle"), 10u);  // few points: one marker each
  EXPECT_NE(svg.find("tiny &lt;shakespeare&gt; &amp; co"), std::string::npos);
  EXPECT_NE(svg.find(">train</text>"), std::string::npos);
  EXPECT_NE(svg.find(">validation</text>"), std::string::npos);
  EXPECT_NE(svg.find(">step</text>"), std::string::npos);
  // x ticks every 200 steps (nice_step(1000 / 6) = 200), y ticks every 0.5 nats.
  EXPECT_NE(svg.find(">1000</text>"), std::string::npos);
  EXPECT_NE(svg.find(">400</text>"), std::string::npos);
  EXPECT_NE(svg.find(">2.0</text>"), std::string::npos);
  EXPECT_NE(svg.find(">4.5</text>"), std::string::npos);
}

TEST(LossPlot, NonFiniteValuesBreakTheLine) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  glass::LossSeries s{"train", {1, 2, 3, 4, 5}, {3, 2.5, nan, 2.0, 1.9}, "#000"};
  const std::string svg = glass::loss_plot_svg({s}, "t");
  EXPECT_EQ(count(svg, "<polyline"), 2u);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(count(svg, "<circle"), 4u);
}

TEST(LossPlot, EmptyAndSinglePoint) {
  const std::string empty = glass::loss_plot_svg({}, {}, {});
  EXPECT_NE(empty.find("no data yet"), std::string::npos);
  EXPECT_EQ(count(empty, "</svg>"), 1u);
  const std::string one = glass::loss_plot_svg({10}, {2.0}, {2.1});
  EXPECT_EQ(count(one, "<circle"), 2u);
  EXPECT_EQ(one.find("nan"), std::string::npos);
  EXPECT_EQ(one.find("inf"), std::string::npos);
}

TEST(LossPlot, MismatchedLengthsThrow) {
  EXPECT_THROW(glass::loss_plot_svg({1, 2}, {1.0}, {1.0, 2.0}), std::invalid_argument);
}
