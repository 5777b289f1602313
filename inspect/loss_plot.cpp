// The loss curve's data and page. See loss_plot.hpp; the chart is drawn by web/loss_chart.js.

#include "inspect/loss_plot.hpp"

#include <algorithm>
#include <filesystem>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "checkpoint/manifest.hpp"
#include "inspect/web_page.hpp"

namespace glass {

namespace {

/// The rows of a CSV file as numbers, in the order of `columns` (found by header name; a
/// missing or unreadable value is NaN). `required` columns must exist (std::runtime_error).
/// Empty input gives no rows; `path` names the source in messages.
std::vector<std::vector<double>> read_csv_columns(std::istream& in, const std::string& path,
                                                  const std::vector<std::string>& columns,
                                                  std::size_t required) {
  std::string line;
  if (!std::getline(in, line)) return {};
  auto split = [](const std::string& s) {
    std::vector<std::string> fields;
    std::stringstream ss(s);
    std::string f;
    while (std::getline(ss, f, ',')) {
      while (!f.empty() && (f.back() == '\r' || f.back() == ' ')) f.pop_back();
      fields.push_back(f);
    }
    return fields;
  };
  const std::vector<std::string> header = split(line);
  std::vector<long> index;
  std::string names;
  for (std::size_t c = 0; c < columns.size(); ++c) {
    auto it = std::find(header.begin(), header.end(), columns[c]);
    index.push_back(it == header.end() ? -1 : static_cast<long>(it - header.begin()));
    if (c < required) names += (names.empty() ? "'" : " and '") + columns[c] + "'";
  }
  for (std::size_t c = 0; c < required; ++c)
    if (index[c] < 0)
      throw std::runtime_error(path + " has no " + names + " columns (header: " + line + ")");
  auto number = [](const std::vector<std::string>& fields, long col) {
    if (col < 0 || static_cast<std::size_t>(col) >= fields.size() || fields[col].empty())
      return std::numeric_limits<double>::quiet_NaN();
    try {
      return std::stod(fields[col]);
    } catch (const std::exception&) {
      return std::numeric_limits<double>::quiet_NaN();
    }
  };
  std::vector<std::vector<double>> rows;
  while (std::getline(in, line)) {
    if (line.empty() || line == "\r") continue;
    const std::vector<std::string> fields = split(line);
    std::vector<double> row;
    for (long col : index) row.push_back(number(fields, col));
    if (std::isfinite(row[0])) rows.push_back(row);
  }
  return rows;
}

}  // namespace

std::vector<LossPoint> parse_loss_log(const std::string& text, const std::string& source) {
  std::istringstream in(text);
  std::vector<LossPoint> points;
  for (const auto& r : read_csv_columns(in, source, {"step", "train_loss", "val_loss"}, 2))
    points.push_back({r[0], r[1], r[2]});
  return points;
}

std::vector<LossPoint> read_loss_log(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {};
  std::ostringstream text;
  text << in.rdbuf();
  return parse_loss_log(text.str(), path);
}

std::vector<LossPoint> read_save_loss_log(const std::string& save_dir) {
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::path(save_dir) / "log.csv", ec)) return {};
  return parse_loss_log(read_verified_file(save_dir, "log.csv"),
                        (std::filesystem::path(save_dir) / "log.csv").string());
}

std::vector<StepPoint> read_steps_log(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {};
  std::vector<StepPoint> points;
  for (const auto& r : read_csv_columns(in, path, {"step", "loss", "lr"}, 2))
    points.push_back({r[0], r[1], r[2]});
  return points;
}

std::string loss_json(const std::vector<LossPoint>& points, const std::string& title) {
  auto number = [](double v) { return std::isfinite(v) ? nlohmann::ordered_json(v) : nullptr; };
  nlohmann::ordered_json j;
  j["title"] = title;
  j["step"] = nlohmann::ordered_json::array();
  j["train"] = nlohmann::ordered_json::array();
  j["val"] = nlohmann::ordered_json::array();
  for (const LossPoint& p : points) {
    j["step"].push_back(number(p.step));
    j["train"].push_back(number(p.train_loss));
    j["val"].push_back(number(p.val_loss));
  }
  return j.dump();
}

std::string loss_json(const LossCurve& curve) {
  auto number = [](double v) { return std::isfinite(v) ? nlohmann::ordered_json(v) : nullptr; };
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(loss_json(curve.evals, curve.title));
  nlohmann::ordered_json steps;
  steps["step"] = nlohmann::ordered_json::array();
  steps["loss"] = nlohmann::ordered_json::array();
  steps["lr"] = nlohmann::ordered_json::array();
  for (const StepPoint& p : curve.steps) {
    steps["step"].push_back(number(p.step));
    steps["loss"].push_back(number(p.loss));
    steps["lr"].push_back(number(p.lr));
  }
  j["steps"] = steps;
  j["vocab_size"] = curve.vocab_size;
  j["unit"] = curve.unit;
  return j.dump();
}

std::string loss_plot_html(const std::vector<LossPoint>& points, const std::string& title) {
  return with_json(loss_page(), "glass-loss", loss_json(points, title));
}

std::string loss_plot_html(const LossCurve& curve) {
  return with_json(loss_page(), "glass-loss", loss_json(curve));
}

}  // namespace glass
