// The JSON bodies of `glass serve`'s answers. See payloads.hpp.

#include "serve/payloads.hpp"

#include <charconv>
#include <cmath>
#include <utility>
#include <vector>

#include "checkpoint/config_json.hpp"
#include "data/text.hpp"

namespace glass::serve_api {

using json = nlohmann::json;

double rounded(double v) { return std::round(v * 1e4) / 1e4; }

json step_json(const std::string& weights_step) {
  long long step = 0;
  const char* end = weights_step.data() + weights_step.size();
  const auto [ptr, ec] = std::from_chars(weights_step.data(), end, step);
  if (weights_step.empty() || ec != std::errc() || ptr != end) return nullptr;
  return step;
}

json model_sizes_json(const ModelConfig& config) {
  const json model = json::parse(model_config_to_json(config));  // config.json's "model"
  json j;
  for (const char* key : {"vocab_size", "d_model", "n_layers", "n_heads", "n_kv_heads",
                          "ffn_hidden", "context_length"})
    j[key] = model.at(key);
  j["head_dim"] = config.head_dim();
  return j;
}

json attention_json(const Inspection& ins) {
  json layers = json::array();
  for (std::size_t l = 0; l < ins.config.n_layers; ++l) {
    const Array& a = ins.get("layers." + std::to_string(l) + ".attn.softmax");  // (H, n, n)
    const std::size_t heads = a.shape()[0], n = a.shape()[1], m = a.shape()[2];
    json per_head = json::array();
    for (std::size_t h = 0; h < heads; ++h) {
      json rows = json::array();
      for (std::size_t i = 0; i < n; ++i) {
        json row = json::array();
        for (std::size_t k = 0; k < m; ++k) row.push_back(rounded(a.data()[(h * n + i) * m + k]));
        rows.push_back(std::move(row));
      }
      per_head.push_back(std::move(rows));
    }
    layers.push_back(std::move(per_head));
  }
  return layers;
}

json chars_json(const std::u32string& text) {
  json chars = json::array();
  for (char32_t c : text) chars.push_back(char_to_utf8(c));
  return chars;
}

/// A top token's "char": its character when a token is one character (a character model; ""
/// for its unknown id 0), "" when tokens span several (BPE: read "text").
static std::string char_field(const Inspection& ins, const TopToken& t) {
  const TextTokenizer& tokenizer = *ins.tokenizer;
  if (tokenizer.tokens_span_characters() || !tokenizer.has_text(t.id)) return "";
  return char_to_utf8(t.character);
}

/// The answer of /api/inspect.
json inspect_json(const Inspection& ins, std::size_t k, std::size_t unknown) {
  json j;
  j["prompt"] = u32_to_utf8(ins.prompt);
  j["chars"] = chars_json(ins.prompt);
  j["tokenizer"] = ins.tokenizer->kind_name();
  j["tokens"] = ins.tokens;
  j["token_texts"] = ins.token_texts;
  j["unknown"] = unknown;
  j["attention"] = attention_json(ins);
  const std::size_t n = ins.n(), V = ins.config.vocab_size;
  json logits = json::array(), top = json::array();
  for (std::size_t i = 0; i < n; ++i) {
    json row = json::array();
    for (std::size_t v = 0; v < V; ++v) row.push_back(rounded(ins.logits.data()[i * V + v]));
    logits.push_back(std::move(row));
    json best = json::array();
    for (const TopToken& t : top_k(ins, i, k))
      best.push_back({{"id", t.id},
                      {"char", char_field(ins, t)},
                      {"text", ins.tokenizer->has_text(t.id) ? t.text : std::string()},
                      {"p", rounded(t.prob)}});
    top.push_back(std::move(best));
  }
  j["logits"] = std::move(logits);
  j["top"] = std::move(top);
  json snaps = json::array();
  auto add = [&](const std::string& name, const Array& a) {
    const Summary s = summarize(a);
    snaps.push_back({{"name", name},
                     {"shape", std::vector<std::size_t>(a.shape().begin(), a.shape().end())},
                     {"min", s.min},
                     {"max", s.max},
                     {"mean", s.mean}});
  };
  for (const auto& [name, a] : ins.snapshots) add(name, a);
  add("logits", ins.logits);
  add("probs", ins.probs);
  j["snapshots"] = std::move(snaps);
  return j;
}

/// The rows of `table` as objects {column: value}; NaN becomes null. Only rows whose "step" is
/// greater than `since` (all when the table has no step column).
json rows_json(const CsvTable& table, long long since) {
  json rows = json::array();
  const int step = table.column("step");
  for (const auto& r : table.rows) {
    if (step >= 0 && !(r[static_cast<std::size_t>(step)] > static_cast<double>(since))) continue;
    json row = json::object();
    for (std::size_t c = 0; c < table.columns.size(); ++c) {
      if (std::isfinite(r[c]))
        row[table.columns[c]] = r[c];
      else
        row[table.columns[c]] = nullptr;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace glass::serve_api
