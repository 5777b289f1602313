// The lab report's direct logit attribution and attribution patching views (interp_report.hpp):
// as JSON and as terminal tables, with the tokens' text next to the numbers.

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "inspect/interp_report.hpp"
#include "inspect/text_cells.hpp"

namespace glass {

using text_cells::pad_left;
using text_cells::pad_right;

namespace {

using ojson = nlohmann::ordered_json;

ojson json_number(double v) { return std::isfinite(v) ? ojson(v) : ojson(nullptr); }

ojson token_json(const InterpReport& r, std::int32_t id) {
  return {{"id", id}, {"text", r.label(id)}};
}

// An array of any rank as nested JSON lists.
ojson nested_json(const Array& a, std::size_t axis = 0, std::size_t offset = 0) {
  ojson out = ojson::array();
  std::size_t stride = 1;
  for (std::size_t k = axis + 1; k < a.dimension(); ++k) stride *= a.shape()[k];
  for (std::size_t i = 0; i < a.shape()[axis]; ++i) {
    if (axis + 1 == a.dimension())
      out.push_back(json_number(a.data()[offset + i]));
    else
      out.push_back(nested_json(a, axis + 1, offset + i * stride));
  }
  return out;
}

ojson effects_json(const PatchingEffects& e) {
  return {{"heads", nested_json(e.heads)}, {"mlps", nested_json(e.mlps)}};
}

std::string num(double v, int decimals = 3) {
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
  std::string s = fmt::format("{:+.{}f}", v, decimals);
  return s.find_first_not_of("+-0.") == std::string::npos ? s.substr(1) : s;
}

}  // namespace

ojson dla_json(const InterpReport& r) {
  const LogitAttribution& a = *r.dla;
  ojson j = {{"position", a.position}, {"target", token_json(r, a.target)}};
  if (a.other) j["other"] = token_json(r, *a.other);
  j["logit"] = json_number(a.logit);
  j["before_softcap"] = a.capped;
  j["scale"] = json_number(a.scale);
  j["sum"] = json_number(a.total());
  j["embeddings"] = json_number(a.embeddings);
  j["heads"] = nested_json(a.heads);
  j["mlps"] = nested_json(a.mlps);
  return j;
}

ojson attribution_json(const InterpReport& r) {
  const auto& at = *r.attribution;
  const PatchingEffects& e = at.estimate.total;
  ojson corrupted = ojson::array();
  for (std::int32_t id : at.corrupted) corrupted.push_back(token_json(r, id));
  ojson j = {{"corrupted", corrupted},
             {"metric", to_string(e.metric.kind)},
             {"answer", token_json(r, e.metric.answer)}};
  if (e.metric.kind == PatchMetric::Kind::logit_diff) j["other"] = token_json(r, e.metric.other);
  j["clean"] = json_number(e.clean);
  j["corrupted_metric"] = json_number(e.corrupted);
  j["estimate"] = effects_json(e);
  j["exact"] = effects_json(at.exact);
  j["head_positions"] = nested_json(at.estimate.head_positions);
  j["mlp_positions"] = nested_json(at.estimate.mlp_positions);
  j["spearman_heads"] = json_number(at.spearman_heads);
  return j;
}

std::string dla_terminal(const InterpReport& r) {
  const LogitAttribution& a = *r.dla;
  std::string what = fmt::format("logit['{}']", r.label(a.target));
  if (a.other) what += fmt::format(" - logit['{}']", r.label(*a.other));
  if (a.capped) what += " (before the soft cap, which is not linear)";
  std::string out = fmt::format(
      "Direct logit attribution at position {} ('{}'): {} = {}, split into the direct effect of "
      "each part of the residual stream through the final RMSNorm, its scale frozen at the run's "
      "1/rms = {}.\n",
      a.position, r.label(r.prompt[a.position]), what, fmt::format("{:.4f}", a.logit),
      fmt::format("{:.4f}", a.scale));
  const std::size_t L = a.heads.shape()[0], H = a.heads.shape()[1];
  std::string head = "  layer  " + pad_left("mlp", 8);
  for (std::size_t h = 0; h < H; ++h) head += pad_left(fmt::format("head {}", h), 8);
  out += fmt::format("  embeddings {}\n", num(a.embeddings)) + head + "\n";
  for (std::size_t l = 0; l < L; ++l) {
    std::string row = "  " + pad_right(std::to_string(l), 5) + "  " + pad_left(num(a.mlps(l)), 8);
    for (std::size_t h = 0; h < H; ++h) row += pad_left(num(a.heads(l, h)), 8);
    out += row + "\n";
  }
  return out +
         fmt::format("  sum of the parts {} (the logit {})\n", num(a.total(), 4), num(a.logit, 4));
}

std::string attribution_terminal(const InterpReport& r) {
  const auto& at = *r.attribution;
  const PatchingEffects& e = at.estimate.total;
  const std::string metric = e.metric.kind == PatchMetric::Kind::logit_diff
                                 ? fmt::format("logit['{}'] - logit['{}']",
                                               r.label(e.metric.answer), r.label(e.metric.other))
                                 : fmt::format("log p('{}')", r.label(e.metric.answer));
  std::string out = fmt::format(
      "Attribution patching: the change of {} at the last position when a component's clean "
      "activation replaces the corrupted one, estimated as grad . (clean - corrupted) from one "
      "backward pass, next to exact activation patching (one run per component).\nMetric: clean "
      "{}, corrupted {}. Rank correlation (Spearman) over the heads: {}.\n",
      metric, num(e.clean, 4), num(e.corrupted, 4), num(at.spearman_heads));
  out += "  component   estimate      exact\n";
  const std::size_t L = e.heads.shape()[0], H = e.heads.shape()[1];
  auto row = [&](const std::string& name, double est, double ex) {
    out += "  " + pad_right(name, 9) + pad_left(num(est), 11) + pad_left(num(ex), 11) + "\n";
  };
  for (std::size_t l = 0; l < L; ++l) {
    for (std::size_t h = 0; h < H; ++h)
      row(fmt::format("head {}.{}", l, h), e.heads(l, h), at.exact.heads(l, h));
    row(fmt::format("mlp {}", l), e.mlps(l), at.exact.mlps(l));
  }
  return out;
}

}  // namespace glass
