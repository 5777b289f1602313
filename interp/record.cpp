#include "data/json_no_duplicates.hpp"
#include "interp/record.hpp"

#include <chrono>
#include <cmath>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "interp/ablation.hpp"
#include "interp/head_scores.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

InterpProbe make_probe(const std::vector<std::int32_t>& text, std::size_t window,
                       const ModelConfig& config, const ProbeSpec& spec) {
  if (text.size() < 3)
    throw std::invalid_argument("make_probe: the probe text needs at least 3 tokens, got " +
                                std::to_string(text.size()));
  for (std::int32_t id : text)
    if (id < 0 || static_cast<std::size_t>(id) >= config.vocab_size)
      throw std::invalid_argument("make_probe: token id " + std::to_string(id) +
                                  " is outside the vocabulary of " +
                                  std::to_string(config.vocab_size));
  if (window == 0 || spec.tokens < 2 || spec.period == 0)
    throw std::invalid_argument("make_probe: window, tokens and period must be positive");
  std::size_t T = std::min({window, config.context_length, spec.tokens});
  T = std::max<std::size_t>(2, std::min(T, text.size() - 1));
  const std::size_t W = std::max<std::size_t>(1, std::min(spec.tokens / T, (text.size() - 1) / T));
  InterpProbe probe;
  probe.spec = spec;
  probe.spec.tokens = W * T;
  probe.spec.period = std::min(spec.period, T / 2);
  probe.inputs = Ids::from_shape({W, T});
  probe.targets = Ids::from_shape({W, T});
  for (std::size_t w = 0; w < W; ++w)
    for (std::size_t t = 0; t < T; ++t) {
      probe.inputs(w, t) = text[w * T + t];
      probe.targets(w, t) = text[w * T + t + 1];
    }
  probe.repeated = repeated_random_tokens(probe.spec.period, config.vocab_size, probe.spec.seed);
  return probe;
}

TextHeadScores text_head_scores(const Decoder& model, const Ids& windows) {
  const auto& c = model.config();
  if (windows.dimension() != 2 || windows.shape()[1] < 2)
    throw std::invalid_argument("text_head_scores: windows must be (W, T) with T >= 2, got " +
                                shape_str(shape_of(windows)));
  const std::size_t W = windows.shape()[0], n = windows.shape()[1];
  TextHeadScores scores{Array(xt::zeros<Scalar>({c.n_layers, c.n_heads})),
                        Array(xt::zeros<Scalar>({c.n_layers, c.n_heads}))};
  // Sums in double over the windows, read by a hook on each layer's attention pattern
  // (B, n_heads, n, n): no snapshot is kept.
  std::vector<double> prev(c.n_layers * c.n_heads, 0.0), first(c.n_layers * c.n_heads, 0.0);
  Tracer tracer;
  tracer.set_recording(false);
  for (std::size_t L = 0; L < c.n_layers; ++L) {
    tracer.add_hook(attention_point(L, "softmax"), [&, L](const std::string&, Array& pattern) {
      Array one = Array::from_shape({n, n});
      for (std::size_t b = 0; b < W; ++b)
        for (std::size_t h = 0; h < c.n_heads; ++h) {
          const Scalar* data = pattern.data() + (b * c.n_heads + h) * n * n;
          std::copy(data, data + n * n, one.data());
          prev[L * c.n_heads + h] += previous_token_score(one);
          first[L * c.n_heads + h] += first_position_share(one);
        }
    });
  }
  run_with_hooks(model, windows, tracer);
  for (std::size_t i = 0; i < prev.size(); ++i) {
    scores.previous_token.data()[i] = static_cast<Scalar>(prev[i] / static_cast<double>(W));
    scores.first_position.data()[i] = static_cast<Scalar>(first[i] / static_cast<double>(W));
  }
  return scores;
}

namespace {

void check_finite(const Array& values, const char* name) {
  for (Scalar v : values)
    if (!std::isfinite(static_cast<double>(v)))
      throw std::invalid_argument(std::string("record_interp: ") + name + " is not finite");
}

nlohmann::json table_json(const Array& table) {
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t L = 0; L < table.shape()[0]; ++L) {
    nlohmann::json row = nlohmann::json::array();
    for (std::size_t h = 0; h < table.shape()[1]; ++h)
      row.push_back(static_cast<double>(table(L, h)));
    rows.push_back(std::move(row));
  }
  return rows;
}

Array table_from_json(const nlohmann::json& doc, const char* key, std::size_t n_layers,
                      std::size_t n_heads) {
  const std::string where = std::string("interp record: \"") + key + "\"";
  if (!doc.contains(key) || !doc[key].is_array() || doc[key].size() != n_layers)
    throw std::invalid_argument(
        where + " must be a list of n_layers = " + std::to_string(n_layers) + " rows");
  Array table = Array::from_shape({n_layers, n_heads});
  for (std::size_t L = 0; L < n_layers; ++L) {
    const nlohmann::json& row = doc[key][L];
    if (!row.is_array() || row.size() != n_heads)
      throw std::invalid_argument(where + " row " + std::to_string(L) +
                                  " must hold n_heads = " + std::to_string(n_heads) + " numbers");
    for (std::size_t h = 0; h < n_heads; ++h) {
      if (!row[h].is_number() || !std::isfinite(row[h].get<double>()))
        throw std::invalid_argument(where + " [" + std::to_string(L) + "][" + std::to_string(h) +
                                    "] is not a finite number");
      table(L, h) = static_cast<Scalar>(row[h].get<double>());
    }
  }
  return table;
}

}  // namespace

InterpRecord record_interp(const Decoder& model, const InterpProbe& probe, long step,
                           HeadShare share) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto& c = model.config();
  InterpRecord record;
  record.step = step;
  record.probe = probe.spec;
  record.n_layers = c.n_layers;
  record.n_heads = c.n_heads;
  TextHeadScores text = text_head_scores(model, probe.inputs);
  record.previous_token = std::move(text.previous_token);
  record.first_position = std::move(text.first_position);
  record.induction = head_scores(model, probe.repeated, probe.spec.period).induction;
  const AblationTable table =
      ablation_table(model, probe.inputs, probe.targets, AblationMode::zero, nullptr, share);
  record.probe_loss = table.base_loss;
  record.ablation_delta_loss = table.delta_loss;
  if (!std::isfinite(record.probe_loss))
    throw std::invalid_argument("record_interp: the probe loss is not finite");
  check_finite(record.previous_token, "a previous-token score");
  check_finite(record.first_position, "a first-position share");
  check_finite(record.induction, "an induction score");
  check_finite(record.ablation_delta_loss, "an ablation delta loss");
  record.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return record;
}

std::string interp_record_json(const InterpRecord& r) {
  nlohmann::ordered_json doc;
  doc["format"] = kInterpRecordFormat;
  doc["step"] = r.step;
  doc["probe"] = {{"source", r.probe.source},
                  {"tokens", r.probe.tokens},
                  {"period", r.probe.period},
                  {"seed", r.probe.seed}};
  doc["probe_loss"] = r.probe_loss;
  doc["n_layers"] = r.n_layers;
  doc["n_heads"] = r.n_heads;
  doc["previous_token"] = table_json(r.previous_token);
  doc["induction"] = table_json(r.induction);
  doc["first_position"] = table_json(r.first_position);
  doc["ablation_delta_loss"] = table_json(r.ablation_delta_loss);
  doc["seconds"] = r.seconds;
  return doc.dump() + "\n";
}

InterpRecord parse_interp_record(const std::string& text) {
  nlohmann::json doc;
  try {
    doc = parse_json_no_duplicate_keys(text);  // nesting bounded: the file may be hostile
  } catch (const std::exception& e) {
    throw std::invalid_argument(std::string("interp record: not JSON: ") + e.what());
  }
  if (!doc.is_object() || doc.value("format", std::string()) != kInterpRecordFormat)
    throw std::invalid_argument(std::string("interp record: not a \"") + kInterpRecordFormat +
                                "\" document");
  auto count = [&doc](const char* key) {
    if (!doc.contains(key) || !doc[key].is_number_integer() || doc[key].get<long long>() < 0)
      throw std::invalid_argument(std::string("interp record: \"") + key +
                                  "\" must be a non-negative integer");
    return doc[key].get<long long>();
  };
  auto number = [](const nlohmann::json& obj, const char* key) {
    if (!obj.contains(key) || !obj[key].is_number() || !std::isfinite(obj[key].get<double>()))
      throw std::invalid_argument(std::string("interp record: \"") + key +
                                  "\" must be a finite number");
    return obj[key].get<double>();
  };
  InterpRecord r;
  r.step = static_cast<long>(count("step"));
  r.n_layers = static_cast<std::size_t>(count("n_layers"));
  r.n_heads = static_cast<std::size_t>(count("n_heads"));
  if (r.n_layers == 0 || r.n_heads == 0 || r.n_layers > 4096 || r.n_heads > 4096)
    throw std::invalid_argument("interp record: n_layers and n_heads must be in [1, 4096]");
  r.probe_loss = number(doc, "probe_loss");
  r.seconds = number(doc, "seconds");
  if (!doc.contains("probe") || !doc["probe"].is_object())
    throw std::invalid_argument("interp record: \"probe\" must be an object");
  const nlohmann::json& p = doc["probe"];
  if (!p.contains("source") || !p["source"].is_string() || !p.contains("tokens") ||
      !p["tokens"].is_number_unsigned() || !p.contains("period") ||
      !p["period"].is_number_unsigned() || !p.contains("seed") || !p["seed"].is_number_unsigned())
    throw std::invalid_argument(
        "interp record: \"probe\" must hold source (text), tokens, period and seed (integers >= 0)");
  r.probe.source = p["source"].get<std::string>();
  r.probe.tokens = p["tokens"].get<std::size_t>();
  r.probe.period = p["period"].get<std::size_t>();
  r.probe.seed = p["seed"].get<std::uint64_t>();
  r.previous_token = table_from_json(doc, "previous_token", r.n_layers, r.n_heads);
  r.induction = table_from_json(doc, "induction", r.n_layers, r.n_heads);
  r.first_position = table_from_json(doc, "first_position", r.n_layers, r.n_heads);
  r.ablation_delta_loss = table_from_json(doc, "ablation_delta_loss", r.n_layers, r.n_heads);
  return r;
}

}  // namespace GLASS_PRECISION
}  // namespace glass
