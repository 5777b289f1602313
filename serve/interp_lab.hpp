#pragma once
// The interpretability lab of `glass serve` (inside serve/ only): what its routes
// (serve/routes_interp.cpp) keep between requests.
//
//   InterpHistory   the per-save interpretability records of the saves the server has seen,
//                   with each save's step and losses: GET /api/interp.
//   reading a record, checked: check_interp_record, parse_interp_record.
//
// glass train writes, in each save:
//   interp.json           that save's record: {"format": "glass-interp-1", "step": 2000,
//                         "probe": {...}, "probe_loss": 1.62, "n_layers": 4, "n_heads": 4,
//                         "previous_token": [[...n_heads...], ...n_layers rows], "induction",
//                         "first_position", "ablation_delta_loss" (the same shape), "seconds"}
//   interp_history.json   every record of the run up to that save, in step order:
//                         {"format": "glass-interp-history-1", "run_id": ID, "records": [...]}
// both listed in the save's manifest. A trainer keeps only its current save on disk, so the
// history file is how a server started after (or during) a run sees its earlier saves; the
// server also keeps each record it reads while it watches.

#include <cstddef>
#include <map>
#include <optional>
#include <mutex>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace glass::serve_api {

/// The record's file name inside a save, and its format name.
inline constexpr const char* kInterpRecordFile = "interp.json";
inline constexpr const char* kInterpRecordFormat = "glass-interp-1";
/// The file of every record of the run up to a save, and its format name.
inline constexpr const char* kInterpHistoryFile = "interp_history.json";
inline constexpr const char* kInterpHistoryFormat = "glass-interp-history-1";
// The most bytes of an interp.json (a 64-layer, 64-head model's record is about 200 KB) or an
// interp_history.json the server reads are those of data/file_limits.hpp's table; a larger file
// is reported, not read.
/// The score tables of a record, each (n_layers, n_heads), in the order the page draws them.
inline constexpr const char* kInterpKinds[] = {"previous_token", "induction", "first_position",
                                               "ablation_delta_loss"};

/// A record (the JSON object of interp.json) checked against the format: "format"
/// "glass-interp-1", integer "step" >= 0, "n_layers" and "n_heads" >= 1, and each of
/// kInterpKinds a (n_layers, n_heads) array of finite numbers; "probe" (an object),
/// "probe_loss" and "seconds" (finite numbers) are kept when present. Returns the object with
/// those fields only. Throws std::runtime_error saying which field is wrong.
nlohmann::json check_interp_record(const nlohmann::json& j);
/// check_interp_record of the text of an interp.json (not JSON, or a key given twice:
/// std::runtime_error too).
nlohmann::json parse_interp_record(const std::string& text);

/// The records of the saves seen so far, by step; thread-safe.
class InterpHistory {
 public:
  /// At most this many saves are kept: the first and the newest (a long run saving often
  /// stays bounded in memory and in the answer).
  static constexpr std::size_t kMaxSaves = 1000;

  /// Reads the records of each complete save of `checkpoint` not read before: every step
  /// directory with a manifest.json (a save still being written has none yet) whose run id is
  /// the current save's (a save of another run, left by `glass train --overwrite`, is never
  /// shown; when the current save's run changes, what was read of the old run is dropped) and the
  /// directory the checkpoint's files are read from (a flat checkpoint or a step directory
  /// given directly). A save removed while it is read is skipped. Cheap when nothing is new
  /// (one directory listing).
  void look(const std::string& checkpoint);

  /// {"saves": [...], "recorded": how many hold scores, "kinds": kInterpKinds}, oldest step
  /// first. Each save: {"save": its directory's name (null for a step known only from a later
  /// save's interp_history.json), "step", "train_loss", "val_loss" (the row of that step in the
  /// log.csv of the save read; null when absent), "recorded": true and "interp": the
  /// check_interp_record object, or "recorded": false (no interp.json: an older run, or the
  /// recording off) with "error" when the file is there but cannot be used (too large, not
  /// what the save's manifest lists, not the format); "history_error" when the save's
  /// interp_history.json cannot be used}.
  nlohmann::json to_json() const;

 private:
  /// Adds the entry of one step: a save's own entry replaces an entry of that step taken from
  /// a history file; an entry from a history file never replaces one. Under mutex_.
  void add(nlohmann::json entry, bool own);

  mutable std::mutex mutex_;
  std::set<std::string> read_;                   // the save directories read
  std::map<long long, nlohmann::json> by_step_;  // step -> entry (negative: no step known)
  long long unknown_steps_ = 0;                  // entries without a step so far
  std::optional<std::string> run_id_;            // the run of the saves read (the current's)
};

}  // namespace glass::serve_api
