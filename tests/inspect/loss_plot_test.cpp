// The loss curve's data (inspect/loss_plot.hpp): log.csv read by column name, the JSON the
// page draws from, and the self-contained page. The drawing itself (web/loss_chart.js) is
// checked in headless Chromium by InspectBrowser.LossPageDrawsTheChart (tests/cli).

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "test_util.hpp"
#include "inspect/loss_plot.hpp"

namespace glass {
namespace {

/// The JSON inside <script type="application/json" id="ID">...</script> of a page.
nlohmann::json json_tag(const std::string& html, const std::string& id) {
  const std::string open = "<script type=\"application/json\" id=\"" + id + "\">";
  const std::size_t begin = html.find(open);
  EXPECT_NE(begin, std::string::npos) << id;
  const std::size_t from = begin + open.size();
  return nlohmann::json::parse(html.substr(from, html.find("</script>", from) - from));
}

TEST(LossPlot, LogIsReadByColumnName) {
  const std::filesystem::path dir = glass_test::temp_dir("glass-loss-log");
  const std::string path = (dir / "log.csv").string();
  std::ofstream(path) << "step,lr,train_loss,val_loss,tokens_per_s,elapsed_s\n"
                         "0,0.001,4.17,4.18,1000,0.5\n"
                         "50,0.001,2.5,,1000,10\n";
  const std::vector<LossPoint> points = read_loss_log(path);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[1].step, 50);
  EXPECT_EQ(points[1].train_loss, 2.5);
  EXPECT_TRUE(std::isnan(points[1].val_loss));
  EXPECT_EQ(points[0].val_loss, 4.18);
  EXPECT_TRUE(read_loss_log((dir / "missing.csv").string()).empty());
  std::ofstream(path) << "a,b\n1,2\n";
  EXPECT_THROW(read_loss_log(path), std::runtime_error);
}

TEST(LossPlot, JsonHasTheSeriesWithNullForMissingValues) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const nlohmann::json j =
      nlohmann::json::parse(loss_json({{0, 4.17, 4.18}, {250, 2.5, nan}, {500, 2.0, 2.1}}, "tiny"));
  EXPECT_EQ(j["title"], "tiny");
  EXPECT_EQ(j["step"], nlohmann::json::parse("[0, 250, 500]"));
  EXPECT_EQ(j["train"], nlohmann::json::parse("[4.17, 2.5, 2.0]"));
  EXPECT_EQ(j["val"], nlohmann::json::parse("[4.18, null, 2.1]"));
  const nlohmann::json empty = nlohmann::json::parse(loss_json({}, ""));
  EXPECT_TRUE(empty["step"].empty());
}

TEST(LossPlot, PageIsSelfContainedAndCarriesTheData) {
  const std::string html =
      loss_plot_html({{0, 4.2, 4.3}, {10, 3.1, 3.3}}, "tiny <shakespeare> & co </script>");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  for (const char* banned :
       {"src=\"http", "href=\"http", "<script src=", "<link", "@import", "url("})
    EXPECT_EQ(html.find(banned), std::string::npos) << banned;
  EXPECT_NE(html.find("function lossChartSvg("), std::string::npos)
      << "the chart's script is inline";
  // The title cannot close the data tag: '<', '>' and '&' are \u escapes inside the JSON.
  EXPECT_EQ(html.find("<shakespeare>"), std::string::npos);
  const nlohmann::json j = json_tag(html, "glass-loss");
  EXPECT_EQ(j["title"], "tiny <shakespeare> & co </script>");
  EXPECT_EQ(j["val"], nlohmann::json::parse("[4.3, 3.3]"));
}

}  // namespace
}  // namespace glass

namespace glass {
namespace {

TEST(LossPlot, TheCurveJsonCarriesEveryStepAndV) {
  LossCurve curve;
  curve.title = "t";
  curve.evals = {{0, 4.2, 4.3}};
  curve.steps = {{0, 4.25, 1e-4}, {1, 4.1, 2e-4}};
  curve.vocab_size = 65;
  const nlohmann::json j = nlohmann::json::parse(loss_json(curve));
  EXPECT_EQ(j["step"], nlohmann::json::parse("[0]"));
  EXPECT_EQ(j["steps"]["step"], nlohmann::json::parse("[0, 1]"));
  EXPECT_EQ(j["steps"]["loss"], nlohmann::json::parse("[4.25, 4.1]"));
  EXPECT_EQ(j["steps"]["lr"], nlohmann::json::parse("[1e-4, 2e-4]"));
  EXPECT_EQ(j["vocab_size"], 65);
  EXPECT_EQ(j["unit"], "character") << "a character model's words by default";
  curve.unit = "token";  // a BPE run: "nats per token", "among the V tokens"
  EXPECT_EQ(nlohmann::json::parse(loss_json(curve))["unit"], "token");
  const std::string page = loss_plot_html(curve);
  EXPECT_NE(page.find("nats per <span class=\"unit\">character</span>"), std::string::npos);
  EXPECT_NE(page.find("\"unit\":\"token\""), std::string::npos);
  const std::filesystem::path dir = glass_test::temp_dir("glass-steps-log");
  std::ofstream((dir / "steps.csv").string()) << "step,loss,lr,grad_norm,tokens_per_s,elapsed_s\n"
                                                 "0,4.25,1.0e-04,1.5,100.0,0.1\n";
  const std::vector<StepPoint> read = read_steps_log((dir / "steps.csv").string());
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(read[0].loss, 4.25);
  EXPECT_EQ(read[0].lr, 1e-4);
}

}  // namespace
}  // namespace glass
