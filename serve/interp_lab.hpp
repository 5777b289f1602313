#pragma once
// The interpretability lab of `glass serve` (inside serve/ only): what its routes
// (serve/routes_interp.cpp) keep between requests.
//
//   InterpHistory   the per-save interpretability records (SAVE/interp.json, format
//                   "glass-interp-1", written by glass train at each save) of every save the
//                   server has seen, with each save's step and losses: GET /api/interp.
//   reading a record, checked: read_interp_record.
//
// A trainer keeps only its current save on disk (the previous one is removed once the next is
// complete), so the history is gathered while the server watches: each look lists the run
// directory's complete saves and reads the record of each save not seen before. A server
// started after the training sees the saves still on disk (usually the last one).

#include <cstddef>
#include <map>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

namespace glass {

/// The record's file name inside a save.
inline constexpr const char* kInterpFile = "interp.json";
/// Its format name (the "format" field).
inline constexpr const char* kInterpFormat = "glass-interp-1";
/// The most bytes of an interp.json the server reads (a 64-layer, 64-head model's record is
/// about 200 KB); a larger file is reported, not read.
inline constexpr std::size_t kMaxInterpBytes = 4 * 1024 * 1024;
/// The score tables of a record, each (n_layers, n_heads), in the order the page draws them.
inline constexpr const char* kInterpKinds[] = {"previous_token", "induction", "first_position",
                                               "ablation_delta_loss"};

/// The interp.json text `text` checked against the format: an object with "format"
/// "glass-interp-1", integer "step" >= 0, "n_layers" and "n_heads" >= 1, and each of
/// kInterpKinds a (n_layers, n_heads) array of finite numbers; "probe", "probe_loss" and
/// "seconds" are kept when present (probe_loss and seconds finite numbers). Returns the
/// object with those fields only. Throws std::runtime_error saying which field is wrong.
nlohmann::json parse_interp_record(const std::string& text);

/// One save as GET /api/interp lists it: {"save": "step-000100", "step": 100, "train_loss",
/// "val_loss" (the save's log.csv row of its step; null when absent), "recorded": true and
/// "interp": the parse_interp_record object} or {"recorded": false} (no interp.json: an older
/// run, or the recording off) or {"recorded": false, "error": why} (a file that is too large,
/// does not match the save's manifest, or is not the format). `save_dir` is a complete save.
/// Throws std::runtime_error only when the directory cannot be read at all (it was removed).
nlohmann::json read_save_record(const std::string& save_dir);

/// The records of the saves seen so far, by step (then name); thread-safe.
class InterpHistory {
 public:
  /// At most this many saves are kept: the first and the newest (a long run saving often
  /// stays bounded in memory and in the answer).
  static constexpr std::size_t kMaxSaves = 1000;

  /// Reads the record of each complete save of `checkpoint` not read before: every step
  /// directory with a manifest.json (a save still being written has none yet) and the
  /// directory the checkpoint's files are read from (a flat checkpoint or a step directory
  /// given directly). A save removed while it is read is skipped. Cheap when nothing is new
  /// (one directory listing).
  void look(const std::string& checkpoint);

  /// {"saves": [...read_save_record, oldest step first], "recorded": how many hold scores}.
  nlohmann::json to_json() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, nlohmann::json> by_dir_;  // the save's path -> its record
};

}  // namespace glass
