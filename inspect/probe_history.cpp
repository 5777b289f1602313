// The probe's attention over a run. See inspect/probe_history.hpp.

#include "inspect/probe_history.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>
#include <stdexcept>

#include <fmt/format.h>

#include "checkpoint/checkpoint.hpp"
#include "checkpoint/manifest.hpp"
#include "data/json_no_duplicates.hpp"
#include "data/text.hpp"
#include "interp/head_scores.hpp"
#include "interp/run.hpp"
#include "sample/sampler.hpp"

namespace glass {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::u32string default_probe(const std::u32string& text, std::size_t window) {
  return first_nonblank_chars(text, std::min(kProbeChars, window));
}

std::size_t blank_prefix_tokens(const TextTokenizer& tokenizer,
                                const std::vector<std::int32_t>& ids) {
  std::size_t skip = 0;
  for (; skip < ids.size(); ++skip) {
    const std::u32string text = tokenizer.decode({ids[skip]});
    if (!std::all_of(text.begin(), text.end(), is_blank_char)) break;
  }
  return skip;
}

ProbeTokens probe_tokens(const TextTokenizer& tokenizer, const std::u32string& probe,
                         std::size_t window) {
  std::u32string text = probe.substr(0, window);
  if (text.empty()) throw std::invalid_argument("the probe prompt is empty");
  // A BPE probe of more tokens than the window (the dummy prefix, byte tokens) loses characters
  // at its end until it fits.
  std::vector<std::int32_t> ids = tokenizer.encode_prompt(text, UnknownPolicy::kMapToUnknownId);
  while (text.size() > 1 && ids.size() > window) {
    text.pop_back();
    ids = tokenizer.encode_prompt(text, UnknownPolicy::kMapToUnknownId);
  }
  ProbeTokens p;
  p.probe = u32_to_utf8(text);
  p.tokens = ids;
  // Each position's text: the vocabulary's; the unknown id 0 (a character model's: one token a
  // character) shows the prompt's own character.
  for (std::size_t i = 0; i < ids.size(); ++i)
    p.token_texts.push_back(tokenizer.has_text(ids[i]) ? tokenizer.token_text(ids[i])
                                                       : char_to_utf8(text[i]));
  return p;
}

ProbeRecord look_at_probe(const Decoder& model, const TextTokenizer& tokenizer,
                          const ProbeTokens& probe, std::size_t window, long step,
                          std::size_t sample_tokens, std::mutex* compute) {
  const ModelConfig& c = model.config();
  const std::size_t n = probe.tokens.size();
  ProbeRecord r;
  r.step = step;
  r.attention.assign(c.n_layers, std::vector<std::vector<std::vector<int>>>(c.n_heads));
  // Each layer's attention pattern (1, n_heads, n, n), read by a hook: no snapshot is kept.
  Tracer tracer;
  tracer.set_recording(false);
  for (std::size_t L = 0; L < c.n_layers; ++L)
    tracer.add_hook(attention_point(L, "softmax"), [&, L](const std::string&, Array& pattern) {
      for (std::size_t h = 0; h < c.n_heads; ++h)
        for (std::size_t i = 0; i < n; ++i) {
          std::vector<int> row(n, 0);
          for (std::size_t j = 0; j <= i; ++j)
            row[j] = static_cast<int>(std::lround(1000.0 * pattern.data()[(h * n + i) * n + j]));
          r.attention[L][h].push_back(std::move(row));
        }
    });
  std::vector<std::int32_t> ids;
  {
    std::unique_lock<std::mutex> lock;
    if (compute != nullptr) lock = std::unique_lock(*compute);
    run_with_hooks(model, as_batch(probe.tokens), tracer);
    SamplingOptions sampling;
    std::mt19937_64 rng(kProbeSampleSeed);
    ids = generate(model, {tokenizer.start_id()}, sample_tokens, window, sampling, rng);
  }
  r.sample = tokenizer.decode_generated(ids);
  return r;
}

namespace {

/// A record's JSON, as probe_history.json holds it (the causal part of each row).
json record_json(const ProbeRecord& r) {
  json layers = json::array();
  for (const auto& heads : r.attention) {
    json per_head = json::array();
    for (const auto& rows : heads) {
      json causal = json::array();
      for (std::size_t i = 0; i < rows.size(); ++i)
        causal.push_back(std::vector<int>(rows[i].begin(), rows[i].begin() + i + 1));
      per_head.push_back(std::move(causal));
    }
    layers.push_back(std::move(per_head));
  }
  auto loss = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
  return {{"step", r.step},
          {"train_loss", loss(r.train_loss)},
          {"val_loss", loss(r.val_loss)},
          {"sample", r.sample},
          {"attention", std::move(layers)}};
}

}  // namespace

void append_probe_record(ProbeHistory& history, ProbeRecord record) {
  auto& records = history.records;
  records.erase(std::find_if(records.begin(), records.end(),
                             [&](const ProbeRecord& r) { return r.step >= record.step; }),
                records.end());
  const std::size_t bytes = record_json(record).dump().size();
  records.push_back(std::move(record));
  const std::size_t cap =
      std::max<std::size_t>(2, std::min(kMaxProbeRecords, kProbeHistoryBudgetBytes / bytes));
  // Every other record between the first and the last goes, until the cap holds: the same
  // records whichever process writes them, a straight run or a resumed one.
  while (records.size() > cap) {
    std::vector<ProbeRecord> kept;
    for (std::size_t i = 0; i < records.size(); ++i)
      if (i % 2 == 0 || i + 1 == records.size()) kept.push_back(std::move(records[i]));
    records = std::move(kept);
  }
}

std::string probe_history_json(const ProbeHistory& h) {
  json records = json::array();
  for (const ProbeRecord& r : h.records) records.push_back(record_json(r));
  const json doc = {{"format", kProbeHistoryFormat},
                    {"run_id", h.run_id},
                    {"probe", h.probe.probe},
                    {"tokens", h.probe.tokens},
                    {"token_texts", h.probe.token_texts},
                    {"n_layers", h.n_layers},
                    {"n_heads", h.n_heads},
                    {"records", std::move(records)}};
  return doc.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

namespace {

[[noreturn]] void refuse(const std::string& what) { throw std::invalid_argument(what); }

/// doc[key] as an unsigned count no larger than `most`.
std::size_t count_of(const json& doc, const char* key, std::size_t most) {
  if (!doc.contains(key) || !doc[key].is_number_unsigned() || doc[key].get<std::uint64_t>() > most)
    refuse(fmt::format("\"{}\" must be a count from 0 to {}", key, most));
  return doc[key].get<std::size_t>();
}

/// A loss: a finite number from 0 to 1e4 nats, or null (NaN).
double loss_of(const json& r, const char* key) {
  if (!r.contains(key) || r[key].is_null()) return NAN;
  if (!r[key].is_number() || !(r[key].get<double>() >= 0 && r[key].get<double>() <= 1e4))
    refuse(fmt::format("\"{}\" must be null or a loss from 0 to 10000 nats", key));
  return r[key].get<double>();
}

ProbeRecord parse_record(const json& r, std::size_t L, std::size_t H, std::size_t n) {
  if (!r.is_object()) refuse("a record is not an object");
  ProbeRecord rec;
  if (!r.contains("step") || !r["step"].is_number_integer() || r["step"].get<long>() < 0)
    refuse("a record's \"step\" must be an integer >= 0");
  rec.step = r["step"].get<long>();
  rec.train_loss = loss_of(r, "train_loss");
  rec.val_loss = loss_of(r, "val_loss");
  if (!r.contains("sample") || !r["sample"].is_string() ||
      r["sample"].get_ref<const std::string&>().size() > 64 * 1024)
    refuse(fmt::format("the record of step {}: \"sample\" must be a text of at most 64 KiB",
                       rec.step));
  rec.sample = r["sample"].get<std::string>();
  const std::string where = fmt::format("the record of step {}: \"attention\"", rec.step);
  const json& a = r.value("attention", json());
  if (!a.is_array() || a.size() != L) refuse(fmt::format("{} must hold {} layers", where, L));
  rec.attention.assign(L, std::vector<std::vector<std::vector<int>>>(H));
  for (std::size_t l = 0; l < L; ++l) {
    if (!a[l].is_array() || a[l].size() != H)
      refuse(fmt::format("{}: layer {} must hold {} heads", where, l, H));
    for (std::size_t h = 0; h < H; ++h) {
      const json& rows = a[l][h];
      if (!rows.is_array() || rows.size() != n)
        refuse(fmt::format("{}: head {}.{} must hold {} rows", where, l, h, n));
      for (std::size_t i = 0; i < n; ++i) {
        if (!rows[i].is_array() || rows[i].size() != i + 1)
          refuse(
              fmt::format("{}: row {} of head {}.{} must hold {} weights", where, i, l, h, i + 1));
        std::vector<int> row(n, 0);
        for (std::size_t j = 0; j <= i; ++j) {
          const json& w = rows[i][j];
          if (!w.is_number_unsigned() || w.get<std::uint64_t>() > 1000)
            refuse(fmt::format("{}: head {}.{} row {} has a weight that is not 0..1000", where, l,
                               h, i));
          row[j] = w.get<int>();
        }
        rec.attention[l][h].push_back(std::move(row));
      }
    }
  }
  return rec;
}

}  // namespace

ProbeHistory parse_probe_history(const std::string& text, const ProbeHistoryCheck& check) {
  json doc;
  try {
    doc = parse_json_no_duplicate_keys(text);
  } catch (const std::exception& e) {
    refuse(std::string("not JSON: ") + e.what());
  }
  if (!doc.is_object() || doc.value("format", json()) != kProbeHistoryFormat)
    refuse(fmt::format("not a history of the format {}", kProbeHistoryFormat));
  if (!doc.contains("run_id") || !doc["run_id"].is_string())
    refuse("no \"run_id\": a history names its run");
  ProbeHistory h;
  h.run_id = doc["run_id"].get<std::string>();
  if (h.run_id != check.run_id)
    refuse(fmt::format("it records the run {}, the save is of run {}", h.run_id, check.run_id));
  const ModelConfig& c = check.config;
  h.n_layers = count_of(doc, "n_layers", c.n_layers);
  h.n_heads = count_of(doc, "n_heads", c.n_heads);
  if (h.n_layers != c.n_layers || h.n_heads != c.n_heads)
    refuse(fmt::format("it has {} x {} heads, the model {} layers of {} heads", h.n_layers,
                       h.n_heads, c.n_layers, c.n_heads));
  if (!doc.contains("probe") || !doc["probe"].is_string()) refuse("no \"probe\" text");
  h.probe.probe = doc["probe"].get<std::string>();
  const json& tokens = doc.value("tokens", json());
  const json& texts = doc.value("token_texts", json());
  if (!tokens.is_array() || tokens.empty() || tokens.size() > c.context_length)
    refuse(fmt::format("\"tokens\" must hold 1 to {} ids (the context length)", c.context_length));
  if (!texts.is_array() || texts.size() != tokens.size())
    refuse("\"token_texts\" must hold one text per token");
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (!tokens[i].is_number_unsigned() || tokens[i].get<std::uint64_t>() >= c.vocab_size)
      refuse(fmt::format("token {} is not an id of the vocabulary of {}", i, c.vocab_size));
    if (!texts[i].is_string()) refuse(fmt::format("token_texts[{}] is not a text", i));
    h.probe.tokens.push_back(tokens[i].get<std::int32_t>());
    h.probe.token_texts.push_back(texts[i].get<std::string>());
  }
  const json& records = doc.value("records", json());
  if (!records.is_array() || records.size() > kMaxProbeRecords)
    refuse(fmt::format("\"records\" must be a list of at most {}", kMaxProbeRecords));
  for (const json& r : records) {
    ProbeRecord rec = parse_record(r, h.n_layers, h.n_heads, h.probe.tokens.size());
    if (!h.records.empty() && rec.step <= h.records.back().step)
      refuse(fmt::format("the record of step {} follows that of step {}: steps must increase",
                         rec.step, h.records.back().step));
    if (check.save_step >= 0 && rec.step > check.save_step)
      refuse(
          fmt::format("it records step {}, after its save's step {}", rec.step, check.save_step));
    h.records.push_back(std::move(rec));
  }
  return h;
}

std::optional<ProbeHistory> read_probe_history(const std::string& dir, const ModelConfig& config) {
  const fs::path path = fs::path(dir) / kProbeHistoryFile;
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  const std::string text = read_verified_file(dir, kProbeHistoryFile);
  ProbeHistoryCheck check;
  check.run_id = save_run_id(dir);
  const Manifest manifest = read_manifest(dir);
  check.save_step = manifest.present ? manifest.step : -1;
  check.config = config;
  try {
    return parse_probe_history(text, check);
  } catch (const std::invalid_argument& e) {
    throw CheckpointError(fmt::format("{}: {}", path.string(), e.what()));
  }
}

Array recorded_pattern(const ProbeRecord& record, std::size_t layer, std::size_t head) {
  const auto& rows = record.attention.at(layer).at(head);
  const std::size_t n = rows.size();
  Array pattern = Array::from_shape({n, n});
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) pattern(i, j) = static_cast<Scalar>(rows[i][j] / 1000.0);
  return pattern;
}

ProbeHeadShares probe_head_shares(const ProbeRecord& record) {
  const std::size_t L = record.attention.size(), H = L ? record.attention[0].size() : 0;
  ProbeHeadShares s{Array(xt::zeros<Scalar>({L, H})), Array(xt::zeros<Scalar>({L, H}))};
  for (std::size_t l = 0; l < L; ++l)
    for (std::size_t h = 0; h < H; ++h) {
      const Array p = recorded_pattern(record, l, h);
      const bool scored = p.shape()[0] >= 2;
      s.previous_token(l, h) = scored ? static_cast<Scalar>(previous_token_score(p)) : NAN;
      s.first_position(l, h) = scored ? static_cast<Scalar>(first_position_share(p)) : NAN;
    }
  return s;
}

json probe_record_json(const ProbeTokens& probe, const ProbeRecord& r) {
  json layers = json::array();
  for (const auto& heads : r.attention) {
    json per_head = json::array();
    for (const auto& rows : heads) {
      json weights = json::array();
      for (const auto& row : rows) {
        json w = json::array();
        for (int v : row) w.push_back(v / 1000.0);
        weights.push_back(std::move(w));
      }
      per_head.push_back(std::move(weights));
    }
    layers.push_back(std::move(per_head));
  }
  auto loss = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
  return {{"step", r.step},
          {"train_loss", loss(r.train_loss)},
          {"val_loss", loss(r.val_loss)},
          {"sample", r.sample},
          {"tokens", probe.tokens},
          {"token_texts", probe.token_texts},
          {"attention", std::move(layers)}};
}

}  // namespace glass
