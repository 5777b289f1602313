// The loss curve's data and page. See loss_plot.hpp; the chart is drawn by web/loss_chart.js.

#include "train/inspect/loss_plot.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "train/inspect/web_page.hpp"

namespace glass {

std::vector<LossPoint> read_loss_log(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {};
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
  auto column = [&](const std::string& name) -> long {
    auto it = std::find(header.begin(), header.end(), name);
    return it == header.end() ? -1 : static_cast<long>(it - header.begin());
  };
  const long step_col = column("step"), train_col = column("train_loss"), val_col = column("val_loss");
  if (step_col < 0 || train_col < 0)
    throw std::runtime_error(path + " has no 'step' and 'train_loss' columns (header: " + line + ")");
  auto number = [](const std::vector<std::string>& fields, long col) {
    if (col < 0 || static_cast<std::size_t>(col) >= fields.size() || fields[col].empty())
      return std::numeric_limits<double>::quiet_NaN();
    try {
      return std::stod(fields[col]);
    } catch (const std::exception&) {
      return std::numeric_limits<double>::quiet_NaN();
    }
  };
  std::vector<LossPoint> points;
  while (std::getline(in, line)) {
    if (line.empty() || line == "\r") continue;
    const std::vector<std::string> fields = split(line);
    LossPoint p{number(fields, step_col), number(fields, train_col), number(fields, val_col)};
    if (std::isfinite(p.step)) points.push_back(p);
  }
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

std::string loss_plot_html(const std::vector<LossPoint>& points, const std::string& title) {
  return with_json(loss_page(), "glass-loss", loss_json(points, title));
}

}  // namespace glass
