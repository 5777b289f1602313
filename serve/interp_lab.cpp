// The per-save interpretability records `glass serve` reads (SAVE/interp.json and
// SAVE/interp_history.json) and the history of the saves it has seen. See interp_lab.hpp.

#include "serve/interp_lab.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <optional>

#include "checkpoint/atomic_file.hpp"
#include "checkpoint/manifest.hpp"
#include "checkpoint/run_dir.hpp"
#include "data/json_no_duplicates.hpp"
#include "inspect/interp_report.hpp"
#include "inspect/loss_plot.hpp"

namespace glass::serve_api {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

/// A finite JSON number, or throws naming `what`.
double finite_number(const json& v, const std::string& what) {
  if (!v.is_number() || !std::isfinite(v.get<double>()))
    throw std::runtime_error(fmt::format("'{}' must be a finite number (got {})", what, v.dump()));
  return v.get<double>();
}

/// An integer >= `lo`, or throws naming `what`.
long long integer_at_least(const json& j, const char* what, long long lo) {
  if (!j.contains(what)) throw std::runtime_error(fmt::format("'{}' is missing", what));
  const json& v = j[what];
  if (!v.is_number_integer() || v.get<long long>() < lo)
    throw std::runtime_error(
        fmt::format("'{}' must be an integer of at least {} (got {})", what, lo, v.dump()));
  return v.get<long long>();
}

/// JSON text as an object, refusing a key given twice.
json parse_object(const std::string& text) {
  json j;
  try {
    j = parse_json_no_duplicate_keys(text);
  } catch (const DuplicateKeyError& e) {
    throw std::runtime_error(std::string("a key is given twice: ") + e.what());
  } catch (const JsonTooDeepError& e) {
    throw std::runtime_error(e.what());
  } catch (const json::exception&) {
    throw std::runtime_error("not valid JSON");
  }
  if (!j.is_object()) throw std::runtime_error("not a JSON object");
  return j;
}

/// The step a save directory's name gives ("step-000250", "step-000250.1" -> 250), or -1.
long long step_of_name(const std::string& name) {
  if (!is_step_dir_name(name)) return -1;
  const std::size_t dot = name.find('.');
  return std::stoll(name.substr(5, dot == std::string::npos ? std::string::npos : dot - 5));
}

/// An entry of the history: `save` (or null), `step` (or null when < 0), no losses yet.
json entry(const json& save, long long step) {
  return json{{"save", save},
              {"step", step >= 0 ? json(step) : json()},
              {"train_loss", nullptr},
              {"val_loss", nullptr},
              {"recorded", false}};
}

/// What one save directory holds: its own entry and the entries of interp_history.json.
struct SaveEntries {
  json own;
  std::vector<json> history;
};

/// `file` of the save `dir` (within the size limit of data/file_limits.hpp), checked against
/// the save's manifest, as a JSON object (std::runtime_error otherwise).
json read_checked_json(const fs::path& dir, const Manifest& manifest, const char* file) {
  const std::string text = read_checkpoint_file((dir / file).string());
  check_against_manifest(manifest, dir.string(), file, text);
  return parse_object(text);
}

/// Refuses a record whose n_layers or n_heads are not those of the model of the save `dir`
/// (its config.json, checked against the manifest): a resealed record of 1000 x 1000 heads on
/// a 1 x 2 model.
void check_fits_model(const json& record, const fs::path& dir, const Manifest& manifest) {
  const json config = read_checked_json(dir, manifest, "config.json");
  const json model = config.value("model", json::object());
  for (const char* key : {"n_layers", "n_heads"})
    if (!model.is_object() || model.value(key, json()) != record[key])
      throw std::runtime_error(
          fmt::format("'{}' is {}, the model's is {}", key, record[key].dump(),
                      model.is_object() ? model.value(key, json()).dump() : "unknown"));
}

/// The save's own record (SAVE/interp.json) into `own`, its step into `step` (the record's
/// step must be the save's when that is known); a bad record is `own`'s "error".
void read_own_record(const fs::path& dir, const Manifest& manifest, long long& step, json& own) {
  try {
    json record = check_interp_record(read_checked_json(dir, manifest, kInterpRecordFile));
    check_fits_model(record, dir, manifest);
    if (step >= 0 && record["step"] != step)
      throw std::runtime_error(
          fmt::format("it records step {}, the save is of step {}", record["step"].dump(), step));
    step = record["step"].get<long long>();
    own["step"] = step;
    own["interp"] = std::move(record);
    own["recorded"] = true;
  } catch (const std::exception& e) {
    own["error"] = fmt::format("{}/{}: {}", dir.filename().string(), kInterpRecordFile, e.what());
  }
}

/// The entries of SAVE/interp_history.json (the records of the steps before the save's, none
/// after `step`); throws std::runtime_error naming the first thing wrong.
std::vector<json> read_history_records(const fs::path& dir, const Manifest& manifest,
                                       long long step) {
  const json doc = read_checked_json(dir, manifest, kInterpHistoryFile);
  if (doc.value("format", json()) != kInterpHistoryFormat)
    throw std::runtime_error(fmt::format("'format' must be \"{}\"", kInterpHistoryFormat));
  if (manifest.present && doc.value("run_id", json()) != manifest.run_id)
    throw std::runtime_error(fmt::format("'run_id' must be the save's, {}", manifest.run_id));
  if (!doc.contains("records") || !doc["records"].is_array())
    throw std::runtime_error("'records' must be an array");
  std::vector<json> history;
  for (std::size_t i = 0; i < doc["records"].size(); ++i) {
    try {
      json record = check_interp_record(doc["records"][i]);
      check_fits_model(record, dir, manifest);
      const long long at = record["step"].get<long long>();
      if (step >= 0 && at > step)
        throw std::runtime_error(fmt::format("step {} comes after the save's", at));
      json e = entry(nullptr, at);
      e["interp"] = std::move(record);
      e["recorded"] = true;
      e["from"] = fmt::format("{}/{}", dir.filename().string(), kInterpHistoryFile);
      history.push_back(std::move(e));
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format("records[{}]: {}", i, e.what()));
    }
  }
  return history;
}

/// The losses of each entry's step, from the save's log.csv (every evaluation of the run so
/// far, verified against the save's manifest); none without a log.csv, and none with the
/// reason as the save's "log_error" when it is damaged.
void add_losses(const fs::path& dir, SaveEntries& out) {
  try {
    const std::vector<LossPoint> log = read_save_loss_log(dir.string());
    auto losses = [&log](json& e) {
      if (!e["step"].is_number()) return;
      for (const LossPoint& p : log) {
        if (static_cast<long long>(p.step) != e["step"].get<long long>()) continue;
        if (std::isfinite(p.train_loss)) e["train_loss"] = p.train_loss;
        if (std::isfinite(p.val_loss)) e["val_loss"] = p.val_loss;
      }
    };
    losses(out.own);
    for (json& e : out.history) losses(e);
  } catch (const std::exception& e) {
    out.own["log_error"] = fmt::format("{}/log.csv: {}", dir.filename().string(), e.what());
  }
}

/// Reads the records of the complete save `save_dir`, each file checked against the save's
/// manifest. Throws std::runtime_error only when the directory is gone.
SaveEntries read_save(const std::string& save_dir) {
  const fs::path dir(save_dir);
  const std::string name = dir.filename().string();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw std::runtime_error(save_dir + " is gone");
  SaveEntries out;
  long long step = step_of_name(name);
  Manifest manifest;
  try {
    manifest = read_manifest(save_dir);
    if (manifest.present) step = manifest.step;
  } catch (const std::exception& e) {
    out.own = entry(name, step);
    out.own["error"] = e.what();
    return out;
  }
  out.own = entry(name, step);
  if (fs::exists(dir / kInterpRecordFile, ec)) read_own_record(dir, manifest, step, out.own);
  if (fs::exists(dir / kInterpHistoryFile, ec)) {
    try {
      out.history = read_history_records(dir, manifest, step);
    } catch (const std::exception& e) {
      out.own["history_error"] = fmt::format("{}/{}: {}", name, kInterpHistoryFile, e.what());
    }
  }
  add_losses(dir, out);
  return out;
}

}  // namespace

json check_interp_record(const json& j) {
  if (!j.is_object()) throw std::runtime_error("a record must be a JSON object");
  if (!j.contains("format") || j["format"] != kInterpRecordFormat)
    throw std::runtime_error(fmt::format("'format' must be \"{}\" (got {})", kInterpRecordFormat,
                                         j.contains("format") ? j["format"].dump() : "nothing"));
  json out;
  out["format"] = kInterpRecordFormat;
  out["step"] = integer_at_least(j, "step", 0);
  const long long L = integer_at_least(j, "n_layers", 1), H = integer_at_least(j, "n_heads", 1);
  out["n_layers"] = L;
  out["n_heads"] = H;
  for (const char* kind : kInterpKinds) {
    if (!j.contains(kind)) throw std::runtime_error(fmt::format("'{}' is missing", kind));
    const json& rows = j[kind];
    if (!rows.is_array() || static_cast<long long>(rows.size()) != L)
      throw std::runtime_error(
          fmt::format("'{}' must have one row per layer, {} rows (n_layers)", kind, L));
    json table = json::array();
    for (std::size_t l = 0; l < rows.size(); ++l) {
      if (!rows[l].is_array() || static_cast<long long>(rows[l].size()) != H)
        throw std::runtime_error(
            fmt::format("'{}' row {} must have one value per head, {} (n_heads)", kind, l, H));
      json row = json::array();
      for (std::size_t h = 0; h < rows[l].size(); ++h)
        row.push_back(finite_number(rows[l][h], fmt::format("{}[{}][{}]", kind, l, h)));
      table.push_back(std::move(row));
    }
    out[kind] = std::move(table);
  }
  // A resealed file can hold any number: the shares are mean attention weights, in [0, 1]
  // (with float rounding's slack), a Δloss or loss beyond kMaxRecordedLoss nats is impossible.
  for (const char* kind : kInterpKinds) {
    const bool share = std::string(kind) != "ablation_delta_loss";
    for (const json& row : out[kind])
      for (const json& v : row)
        if (share ? !(v.get<double>() >= -1e-4 && v.get<double>() <= 1 + 1e-4)
                  : std::abs(v.get<double>()) > kMaxRecordedLoss)
          throw std::runtime_error(fmt::format("'{}' holds {}, impossible for {}", kind,
                                               v.get<double>(),
                                               share ? "a mean attention weight" : "a Δloss"));
  }
  for (const char* name : {"probe_loss", "seconds"})
    if (j.contains(name)) {
      out[name] = finite_number(j[name], name);
      const double v = out[name].get<double>();
      if (v < 0 || (std::string(name) == "probe_loss" && v > kMaxRecordedLoss))
        throw std::runtime_error(fmt::format("'{}' is {}, impossible", name, out[name].dump()));
    }
  if (j.contains("probe")) {
    if (!j["probe"].is_object()) throw std::runtime_error("'probe' must be an object");
    out["probe"] = j["probe"];
  }
  return out;
}

json parse_interp_record(const std::string& text) {
  return check_interp_record(parse_object(text));
}

void InterpHistory::add(json e, bool own) {
  const long long key = e["step"].is_number() ? e["step"].get<long long>() : -1 - unknown_steps_++;
  if (!own && by_step_.count(key) != 0) return;  // what is known of that step stays
  by_step_[key] = std::move(e);
  if (by_step_.size() > kMaxSaves) by_step_.erase(std::next(by_step_.begin()));  // keep the first
}

namespace {

/// The complete saves of `checkpoint` that belong to the run of its current save: the step
/// directories with a manifest.json whose run id is `run_id` (`glass train --overwrite` leaves
/// the saves of the run it replaced), then the directory the checkpoint's files are read from.
std::vector<std::string> saves_of_run(const std::string& checkpoint, const std::string& files,
                                      const std::optional<std::string>& run_id) {
  std::vector<std::string> saves;
  std::error_code ec;
  for (fs::directory_iterator it(checkpoint, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!is_step_dir_name(name) || !fs::exists(it->path() / kManifestFile, ec) || !run_id) continue;
    try {
      if (save_run_id(it->path().string()) == *run_id) saves.push_back(it->path().string());
    } catch (const std::exception&) {}  // whose run cannot be told: not shown as this run's
  }
  if (!files.empty()) saves.push_back(fs::path(files) == fs::path(checkpoint) ? checkpoint : files);
  return saves;
}

}  // namespace

void InterpHistory::look(const std::string& checkpoint) {
  std::string files;
  std::optional<std::string> run_id;  // unknown: only the current save is read
  std::error_code ec;
  try {
    // (A run directory before its first save is no save: it has no config.json yet.)
    const std::string dir = checkpoint_files_dir(checkpoint);
    if (fs::exists(fs::path(dir) / "config.json", ec)) {
      files = dir;
      run_id = save_run_id(dir);
    }
  } catch (const std::exception&) {}
  if (run_id) {
    std::lock_guard lock(mutex_);
    if (run_id_ && *run_id_ != *run_id) {  // a new run in the directory: forget the old one's
      by_step_.clear();
      read_.clear();
      unknown_steps_ = 0;
    }
    run_id_ = run_id;
  }
  const std::vector<std::string> candidates = saves_of_run(checkpoint, files, run_id);
  std::set<std::string> present;
  for (const std::string& dir : candidates) {
    const std::string key = fs::weakly_canonical(dir, ec).string();
    present.insert(key);
    {
      std::lock_guard lock(mutex_);
      if (read_.count(key) != 0) continue;
    }
    SaveEntries entries;
    try {
      entries = read_save(dir);
    } catch (const std::exception&) {
      continue;  // removed meanwhile
    }
    std::lock_guard lock(mutex_);
    // Another thread (the route and the watcher both look) may have read it meanwhile.
    if (!read_.insert(key).second) continue;
    for (json& e : entries.history) add(std::move(e), /*own=*/false);
    add(std::move(entries.own), /*own=*/true);
  }
  // Forget the saves no longer on disk (their entries stay): read_ stays as small as the
  // directory. A save this look did not list may have appeared since and been read by another
  // thread: it is forgotten only once it is gone.
  std::lock_guard lock(mutex_);
  for (auto it = read_.begin(); it != read_.end();)
    it = present.count(*it) != 0 || fs::exists(*it, ec) ? std::next(it) : read_.erase(it);
}

json InterpHistory::to_json() const {
  json saves = json::array();
  std::size_t recorded = 0;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [step, e] : by_step_) {  // negative keys (no step) first
      recorded += e["recorded"].get<bool>() ? 1 : 0;
      saves.push_back(e);
    }
  }
  json j;
  j["saves"] = std::move(saves);
  j["recorded"] = recorded;
  j["kinds"] = kInterpKinds;
  return j;
}

}  // namespace glass::serve_api
