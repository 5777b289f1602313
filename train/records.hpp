#pragma once
// The two tables of a run, as observers of the loop (train/observer.hpp): log.csv (one row per
// evaluation) and steps.csv (one row per optimizer step, also appended live to DIR/steps.csv so
// a reader can follow the run).

#include <iosfwd>
#include <string>
#include <vector>

#include "train/observer.hpp"
#include "train/train_state.hpp"

namespace glass {

/// log.csv: the evaluations' rows, written into every save.
class LogRecord : public TrainObserver {
 public:
  /// Starts from the rows of the save resumed (none for a new run).
  void restore(std::vector<LogRow> rows) { rows_ = std::move(rows); }
  const std::vector<LogRow>& rows() const { return rows_; }
  void on_eval(const LogRow& row) override { rows_.push_back(row); }
  void on_save(const SaveSite& site) override;

 private:
  std::vector<LogRow> rows_;
};

/// steps.csv: one row per optimizer step, written into every save and appended to the live copy
/// DIR/steps.csv after each step.
class StepsRecord : public TrainObserver {
 public:
  /// `out` receives a warning when the live copy cannot be appended to (the saves keep the log).
  explicit StepsRecord(std::ostream& out) : out_(out) {}
  ~StepsRecord() override;
  StepsRecord(const StepsRecord&) = delete;
  StepsRecord& operator=(const StepsRecord&) = delete;

  /// Starts from the rows of the save resumed `save_dir` up to `step` (none in a save written
  /// before steps.csv; rows numbered from 0 by older saves are renumbered). Throws
  /// CheckpointError for a bad file.
  void restore(const std::string& save_dir, long step);
  const std::vector<StepRow>& rows() const { return rows_; }
  /// Writes DIR/steps.csv from the rows so far (the saved ones) and opens it for appending.
  /// Throws FileError.
  void open_live(const std::string& out_dir);
  void on_step(const StepRow& row) override;
  void on_save(const SaveSite& site) override;

 private:
  std::ostream& out_;
  std::vector<StepRow> rows_;
  std::string csv_ = steps_csv({});  // steps_csv(rows_), kept up to date row by row
  std::string live_path_;
  int live_fd_ = -1;  // DIR/steps.csv, appended to after each step; -1 when not open
};

}  // namespace glass
