// The per-save interpretability records `glass serve` reads (SAVE/interp.json) and the history
// of the saves it has seen. See interp_lab.hpp.

#include "serve/interp_lab.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "checkpoint/manifest.hpp"
#include "checkpoint/run_dir.hpp"
#include "data/json_no_duplicates.hpp"
#include "inspect/loss_plot.hpp"

namespace glass {

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

/// The whole file, at most `limit` bytes (std::runtime_error past it or when unreadable).
std::string read_bounded(const fs::path& path, std::size_t limit) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) throw std::runtime_error("cannot read " + path.string() + ": " + ec.message());
  if (size > limit)
    throw std::runtime_error(fmt::format("{} has {} bytes, more than the {} a record may have",
                                         path.filename().string(), size, limit));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The step a save directory's name gives ("step-000250", "step-000250.1" -> 250), or -1.
long long step_of_name(const std::string& name) {
  if (!is_step_dir_name(name)) return -1;
  return std::stoll(
      name.substr(5, name.find('.') == std::string::npos ? std::string::npos : name.find('.') - 5));
}

}  // namespace

json parse_interp_record(const std::string& text) {
  json j;
  try {
    j = parse_json_no_duplicate_keys(text);
  } catch (const DuplicateKeyError& e) {
    throw std::runtime_error(std::string("a key is given twice: ") + e.what());
  } catch (const json::exception&) {
    throw std::runtime_error("not valid JSON");
  }
  if (!j.is_object()) throw std::runtime_error("not a JSON object");
  if (!j.contains("format") || j["format"] != kInterpFormat)
    throw std::runtime_error(fmt::format("'format' must be \"{}\" (got {})", kInterpFormat,
                                         j.contains("format") ? j["format"].dump() : "nothing"));
  json out;
  out["format"] = kInterpFormat;
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
  for (const char* name : {"probe_loss", "seconds"})
    if (j.contains(name)) out[name] = finite_number(j[name], name);
  if (j.contains("probe")) {
    if (!j["probe"].is_object()) throw std::runtime_error("'probe' must be an object");
    out["probe"] = j["probe"];
  }
  return out;
}

json read_save_record(const std::string& save_dir) {
  const fs::path dir(save_dir);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw std::runtime_error(save_dir + " is gone");
  json r;
  r["save"] = dir.filename().string();
  // The step: the manifest's, else the name's (a flat checkpoint: the record's, below).
  Manifest manifest;
  long long step = step_of_name(dir.filename().string());
  try {
    manifest = read_manifest(save_dir);
    if (manifest.present) step = manifest.step;
  } catch (const std::exception& e) {
    r["step"] = step >= 0 ? json(step) : json(nullptr);
    r["recorded"] = false;
    r["error"] = e.what();
    return r;
  }
  r["train_loss"] = nullptr;
  r["val_loss"] = nullptr;
  r["recorded"] = false;
  const fs::path file = dir / kInterpFile;
  if (fs::exists(file, ec)) {
    try {
      const std::string text = read_bounded(file, kMaxInterpBytes);
      check_against_manifest(manifest, save_dir, kInterpFile, text);
      json record = parse_interp_record(text);
      if (step >= 0 && record["step"] != step)
        throw std::runtime_error(
            fmt::format("it records step {}, the save is of step {}", record["step"].dump(), step));
      step = record["step"].get<long long>();
      r["interp"] = std::move(record);
      r["recorded"] = true;
    } catch (const std::exception& e) {
      r["error"] = fmt::format("{}/{}: {}", dir.filename().string(), kInterpFile, e.what());
    }
  }
  r["step"] = step >= 0 ? json(step) : json(nullptr);
  try {
    for (const LossPoint& p : read_loss_log((dir / "log.csv").string())) {
      if (step < 0 || static_cast<long long>(p.step) != step) continue;
      if (std::isfinite(p.train_loss)) r["train_loss"] = p.train_loss;
      if (std::isfinite(p.val_loss)) r["val_loss"] = p.val_loss;
    }
  } catch (const std::exception&) {}  // no log.csv: no losses
  return r;
}

void InterpHistory::look(const std::string& checkpoint) {
  std::vector<std::string> candidates;
  std::error_code ec;
  for (fs::directory_iterator it(checkpoint, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (is_step_dir_name(name) && fs::exists(it->path() / kManifestFile, ec))
      candidates.push_back(it->path().string());
  }
  try {
    // (A run directory before its first save is no save: it has no config.json yet.)
    const std::string files = checkpoint_files_dir(checkpoint);
    if (fs::exists(fs::path(files) / "config.json", ec))
      candidates.push_back((fs::path(files) == fs::path(checkpoint)) ? checkpoint : files);
  } catch (const std::exception&) {}
  for (const std::string& dir : candidates) {
    const std::string key = fs::weakly_canonical(dir, ec).string();
    {
      std::lock_guard lock(mutex_);
      if (by_dir_.count(key) != 0) continue;
    }
    json record;
    try {
      record = read_save_record(dir);
    } catch (const std::exception&) {
      continue;  // removed meanwhile
    }
    std::lock_guard lock(mutex_);
    by_dir_.emplace(key, std::move(record));
    if (by_dir_.size() > kMaxSaves) {  // drop the oldest but the first
      std::vector<std::pair<long long, std::string>> order;
      for (const auto& [k, v] : by_dir_)
        order.emplace_back(v["step"].is_number() ? v["step"].get<long long>() : -1, k);
      std::sort(order.begin(), order.end());
      by_dir_.erase(order[1].second);
    }
  }
}

json InterpHistory::to_json() const {
  std::vector<json> saves;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [key, record] : by_dir_) saves.push_back(record);
  }
  auto step = [](const json& r) { return r["step"].is_number() ? r["step"].get<long long>() : -1; };
  std::stable_sort(saves.begin(), saves.end(), [&](const json& a, const json& b) {
    return step(a) < step(b) || (step(a) == step(b) && a["save"] < b["save"]);
  });
  std::size_t recorded = 0;
  for (const json& r : saves) recorded += r["recorded"].get<bool>() ? 1 : 0;
  json j;
  j["saves"] = std::move(saves);
  j["recorded"] = recorded;
  j["kinds"] = kInterpKinds;
  return j;
}

}  // namespace glass
