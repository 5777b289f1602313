#include "inspect/interp_report.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "checkpoint/atomic_file.hpp"
#include "checkpoint/manifest.hpp"
#include "checkpoint/run_dir.hpp"
#include "data/json_no_duplicates.hpp"
#include "data/tokenizer.hpp"
#include "inspect/inspect.hpp"
#include "inspect/text_cells.hpp"

namespace glass {

namespace fs = std::filesystem;
using text_cells::pad_left;
using text_cells::pad_right;

// ---- tokens -----------------------------------------------------------------------------------

std::vector<std::string> token_labels(const Checkpoint& loaded) {
  const std::size_t V = loaded.config().vocab_size;
  std::vector<std::string> labels(V);
  for (std::size_t id = 0; id < V; ++id)
    labels[id] = id_label(loaded.tokenizer(), static_cast<std::int32_t>(id));
  return labels;
}

std::vector<HeadRef> parse_head_list(const std::string& text, std::size_t n_layers,
                                     std::size_t n_heads) {
  const std::string valid = fmt::format(
      "give heads as LAYER.HEAD separated by commas, e.g. 0.1,2.3 (layers 0..{}, heads 0..{})",
      n_layers - 1, n_heads - 1);
  if (text.empty() || text.front() == ',' || text.back() == ',' ||
      text.find(",,") != std::string::npos)
    throw std::invalid_argument(fmt::format("'{}' has an empty item: {}", text, valid));
  std::vector<HeadRef> heads;
  std::set<std::pair<std::size_t, std::size_t>> seen;
  std::stringstream in(text);
  std::string item;
  auto number = [&](const std::string& s, const std::string& whole) {
    if (s.empty() || s.size() > 6 || !std::all_of(s.begin(), s.end(), ::isdigit))
      throw std::invalid_argument(fmt::format("'{}' is not a head: {}", whole, valid));
    return static_cast<std::size_t>(std::stoul(s));
  };
  while (std::getline(in, item, ',')) {
    const std::size_t dot = item.find('.');
    if (dot == std::string::npos)
      throw std::invalid_argument(fmt::format("'{}' is not a head: {}", item, valid));
    const std::size_t L = number(item.substr(0, dot), item), h = number(item.substr(dot + 1), item);
    if (L >= n_layers)
      throw std::invalid_argument(
          fmt::format("head {}: there is no layer {}, the model has {} "
                      "layers (0..{})",
                      item, L, n_layers, n_layers - 1));
    if (h >= n_heads)
      throw std::invalid_argument(
          fmt::format("head {}: there is no head {}, each layer has {} "
                      "heads (0..{})",
                      item, h, n_heads, n_heads - 1));
    if (seen.insert({L, h}).second) heads.push_back({L, h});
  }
  if (heads.empty()) throw std::invalid_argument("no head given: " + valid);
  return heads;
}

// ---- the recorded history -------------------------------------------------------------------

namespace {

InterpRecord parse_or_throw(const std::string& text, const std::string& where) {
  try {
    return parse_interp_record(text);
  } catch (const std::invalid_argument& e) {
    throw CheckpointError(where + ": " + e.what());
  }
}

/// The records of the current save's interp_history.json (checked against its manifest; it
/// must name the save's run) into `by_step`.
void read_history_file(const std::string& current, const std::string& run_id,
                       std::map<long, InterpRecord>& by_step) {
  const fs::path history = fs::path(current) / kInterpHistoryFile;
  if (!fs::exists(history)) return;
  const std::string text = read_verified_file(current, kInterpHistoryFile);
  nlohmann::json doc;
  try {
    doc = parse_json_no_duplicate_keys(text);
  } catch (const std::exception& e) {
    throw CheckpointError(history.string() + ": not JSON: " + e.what());
  }
  if (!doc.is_object() || !doc.contains("records") || !doc["records"].is_array())
    throw CheckpointError(history.string() + ": no \"records\" list");
  if (doc.contains("run_id") && doc["run_id"] != run_id)
    throw CheckpointError(fmt::format("{}: it records the run {}, the save is of run {}",
                                      history.string(), doc["run_id"].dump(), run_id));
  for (const auto& r : doc["records"]) {
    InterpRecord rec = parse_or_throw(r.dump(), history.string());
    by_step[rec.step] = std::move(rec);
  }
}

/// The first value of `table` outside [lo, hi] (NaN included) as "kind[l][h] = v", or "".
std::string first_outside(const Array& table, const char* kind, double lo, double hi) {
  const std::size_t H = table.shape()[1];
  for (std::size_t i = 0; i < table.size(); ++i) {
    const double v = table.data()[i];
    if (!(v >= lo && v <= hi)) return fmt::format("{}[{}][{}] = {}", kind, i / H, i % H, v);
  }
  return "";
}

}  // namespace

void check_record_values(const InterpRecord& r, const ModelConfig& model, long last_step,
                         const std::string& where) {
  auto refuse = [&](const std::string& what) {
    throw CheckpointError(
        fmt::format("{}: {}: no training of this model writes such a record "
                    "(the file is corrupt or was crafted)",
                    where, what));
  };
  if (last_step >= 0 && r.step > last_step)
    refuse(fmt::format("it records step {}, after its save's step {}", r.step, last_step));
  if (r.n_layers != model.n_layers || r.n_heads != model.n_heads)
    refuse(fmt::format("it has {} x {} heads, the model {} layers of {} heads", r.n_layers,
                       r.n_heads, model.n_layers, model.n_heads));
  const double slack = 1e-4;  // float rounding of a mean of softmax weights
  for (const auto& [table, kind] :
       {std::pair{&r.previous_token, "previous_token"}, std::pair{&r.induction, "induction"},
        std::pair{&r.first_position, "first_position"}}) {
    const std::string bad = first_outside(*table, kind, -slack, 1 + slack);
    if (!bad.empty()) refuse(bad + ", a mean attention weight outside [0, 1]");
  }
  const std::string bad = first_outside(r.ablation_delta_loss, "ablation_delta_loss",
                                        -kMaxRecordedLoss, kMaxRecordedLoss);
  if (!bad.empty()) refuse(fmt::format("{}, beyond {} nats", bad, kMaxRecordedLoss));
  if (!(r.probe_loss >= 0 && r.probe_loss <= kMaxRecordedLoss) || !(r.seconds >= 0))
    refuse(fmt::format("probe_loss {} or seconds {} is impossible", r.probe_loss, r.seconds));
}

std::vector<InterpRecord> read_interp_history(const std::string& run_dir,
                                              const ModelConfig& model) {
  std::map<long, InterpRecord> by_step;
  const std::string current = checkpoint_files_dir(run_dir);
  const std::string run_id = save_run_id(current);
  read_history_file(current, run_id, by_step);
  // Saves kept beside the current one (copies a user made, or a save a reader still held) —
  // of this run only: `glass train --overwrite` leaves the saves of the run it replaced.
  std::error_code ec;
  std::vector<fs::path> dirs = {fs::path(current)};
  if (fs::is_directory(run_dir, ec))
    for (const auto& entry : fs::directory_iterator(run_dir, ec))
      if (entry.is_directory() && is_step_dir_name(entry.path().filename().string()))
        dirs.push_back(entry.path());
  for (const fs::path& dir : dirs) {
    if (!fs::exists(dir / kInterpFile) || !fs::exists(dir / kManifestFile)) continue;
    if (save_run_id(dir.string()) != run_id) continue;
    InterpRecord rec =
        parse_or_throw(read_verified_file(dir.string(), kInterpFile), (dir / kInterpFile).string());
    by_step[rec.step] = std::move(rec);
  }
  const Manifest manifest = read_manifest(current);
  std::vector<InterpRecord> records;
  for (auto& [step, rec] : by_step) {
    check_record_values(rec, model, manifest.present ? manifest.step : -1,
                        fmt::format("{}: the record of step {}", current, step));
    records.push_back(std::move(rec));
  }
  return records;
}

InterpRecord measure_head_scores(const Decoder& model, const std::vector<std::int32_t>& text,
                                 std::size_t window) {
  ProbeSpec spec;
  spec.source = "prompt";
  spec.tokens = text.size() - 1;  // every window the text holds
  return record_interp(model, make_probe(text, window, model.config(), spec), -1);
}

// ---- the report -----------------------------------------------------------------------------

std::string InterpReport::label(std::int32_t id) const {
  return id >= 0 && static_cast<std::size_t>(id) < labels.size() ? labels[id] : "?";
}

std::vector<std::size_t> InterpReport::Ablation::listed() const {
  const std::size_t V = shift.before.size();
  std::vector<std::size_t> ids = top_k_indices(shift.before.data(), V, top_k);
  for (std::size_t id : top_k_indices(shift.after.data(), V, top_k))
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  return ids;
}

// ---- JSON -----------------------------------------------------------------------------------

namespace {

using ojson = nlohmann::ordered_json;

ojson json_number(double v) { return std::isfinite(v) ? ojson(v) : ojson(nullptr); }

ojson token_json(const InterpReport& r, std::int32_t id) {
  return {{"id", id}, {"text", r.label(id)}};
}

ojson record_json(const InterpRecord& rec) { return ojson::parse(interp_record_json(rec)); }

/// A (rows, cols) table as rows of numbers (NaN: null).
ojson table_json(const Array& t) {
  ojson rows = ojson::array();
  for (std::size_t i = 0; i < t.shape()[0]; ++i) {
    ojson row = ojson::array();
    for (std::size_t j = 0; j < t.shape()[1]; ++j) row.push_back(json_number(t(i, j)));
    rows.push_back(std::move(row));
  }
  return rows;
}

ojson lens_json(const InterpReport& r) {
  const LogitLens& lens = *r.lens;
  const std::size_t S = lens.points.size(), T = lens.tokens.size(), k = lens.top_ids.shape()[2];
  ojson top = ojson::array(), next = ojson::array();
  for (std::size_t s = 0; s < S; ++s) {
    ojson rows = ojson::array(), nrow = ojson::array();
    for (std::size_t t = 0; t < T; ++t) {
      ojson cands = ojson::array();
      for (std::size_t j = 0; j < k; ++j) {
        ojson c = token_json(r, lens.top_ids(s, t, j));
        c["prob"] = json_number(lens.top_probs(s, t, j));
        cands.push_back(std::move(c));
      }
      rows.push_back(std::move(cands));
      if (t + 1 < T) nrow.push_back(json_number(lens.next_prob(s, t)));
    }
    top.push_back(std::move(rows));
    next.push_back(std::move(nrow));
  }
  return {{"points", lens.points}, {"top_k", k}, {"top", top}, {"true_next_prob", next}};
}

ojson ablation_json(const InterpReport& r) {
  const auto& a = *r.ablation;
  ojson heads = ojson::array(), before = ojson::array(), after = ojson::array(),
        top = ojson::array();
  for (const HeadRef& h : a.heads) heads.push_back({h.layer, h.head});
  for (std::size_t v = 0; v < a.shift.before.size(); ++v) {
    before.push_back(json_number(a.shift.before(v)));
    after.push_back(json_number(a.shift.after(v)));
  }
  for (std::size_t id : a.listed()) top.push_back(token_json(r, static_cast<std::int32_t>(id)));
  ojson j = {{"heads", heads},
             {"mode", a.mode == AblationMode::zero ? "zero" : "mean"},
             {"kl_divergence", json_number(a.shift.kl_divergence)},
             {"top", top},
             {"before", before},
             {"after", after}};
  if (!a.mean_over.empty()) j["mean_over"] = a.mean_over;
  return j;
}

ojson patching_json(const InterpReport& r) {
  const PatchingResult& res = r.patch->result;
  ojson corrupted = ojson::array(), rec = ojson::array(), pd = ojson::array();
  for (std::int32_t id : r.patch->corrupted) corrupted.push_back(token_json(r, id));
  for (std::size_t i = 0; i < res.rows.size(); ++i) {
    ojson a = ojson::array(), b = ojson::array();
    for (std::size_t t = 0; t < res.recovered.shape()[1]; ++t) {
      a.push_back(json_number(res.recovered(i, t)));
      b.push_back(json_number(res.patched_diff(i, t)));
    }
    rec.push_back(std::move(a));
    pd.push_back(std::move(b));
  }
  return {{"corrupted", corrupted},
          {"answer", token_json(r, res.answer)},
          {"other", token_json(r, res.other)},
          {"clean_diff", json_number(res.clean_diff)},
          {"corrupted_diff", json_number(res.corrupted_diff)},
          {"points", res.rows},
          {"patched_diff", pd},
          {"recovered", rec}};
}

ojson history_json(const InterpReport::History& h) {
  std::map<long, double> val;
  for (const LossPoint& p : h.loss) val[static_cast<long>(p.step)] = p.val_loss;
  ojson steps = ojson::array(), vals = ojson::array(), records = ojson::array();
  for (const InterpRecord& rec : h.records) {
    steps.push_back(rec.step);
    const auto it = val.find(rec.step);
    vals.push_back(it != val.end() ? json_number(it->second) : ojson(nullptr));
    records.push_back(record_json(rec));
  }
  ojson doc = {{"steps", steps}, {"val_loss", vals}, {"records", records}};
  if (h.probe) {  // the recorded file as it is, and each head's shares of each record
    ojson probe = ojson::parse(probe_history_json(*h.probe));
    for (std::size_t i = 0; i < h.probe->records.size(); ++i) {
      const ProbeHeadShares shares = probe_head_shares(h.probe->records[i]);
      probe["records"][i]["previous_token"] = table_json(shares.previous_token);
      probe["records"][i]["first_position"] = table_json(shares.first_position);
    }
    doc["probe_attention"] = std::move(probe);
  }
  return doc;
}

}  // namespace

nlohmann::ordered_json interp_json(const InterpReport& r) {
  ojson doc;
  doc["checkpoint"] = r.checkpoint;
  ojson prompt = ojson::array();
  for (std::int32_t id : r.prompt) prompt.push_back(token_json(r, id));
  doc["prompt"] = std::move(prompt);
  if (r.lens) doc["lens"] = lens_json(r);
  if (r.ablation) doc["ablation"] = ablation_json(r);
  if (r.head_scores) {
    ojson s = record_json(r.head_scores->record);
    s["source"] = r.head_scores->source;
    doc["head_scores"] = std::move(s);
  }
  if (r.patch) doc["patching"] = patching_json(r);
  if (r.history) doc["history"] = history_json(*r.history);
  if (r.dla) doc["dla"] = dla_json(r);
  if (r.attribution) doc["attribution"] = attribution_json(r);
  return doc;
}

}  // namespace glass
