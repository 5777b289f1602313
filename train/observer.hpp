#pragma once
// What the training loop tells the records of a run (train/records.hpp, train/interp_recorder.hpp):
// each step's row, each evaluation's row, and each save. A record is an observer: it keeps its
// own rows and writes its own file into every save; the loop knows none of them by name.

#include <string>

#include "train/train_state.hpp"

namespace glass {

/// Where a save is being written: the new step directory, before its manifest (which then
/// covers what the observers wrote).
struct SaveSite {
  long step = 0;         ///< the save's step
  std::string step_dir;  ///< the new step directory; files go here
  std::string previous;  ///< the last complete save's directory (out_dir itself when none)
};

/// An observer of the training loop (Trainer::add_observer). Every call is made in every process
/// of a data-parallel run, except on_save (rank 0 alone writes the saves).
class TrainObserver {
 public:
  virtual ~TrainObserver() = default;
  /// After each optimizer step, with its row of steps.csv.
  virtual void on_step(const StepRow& /*row*/) {}
  /// After each evaluation, with its row of log.csv.
  virtual void on_eval(const LogRow& /*row*/) {}
  /// Before the save of `step` is written: the place for a measurement all processes share.
  virtual void before_save(long /*step*/) {}
  /// While the save is written (rank 0): write this record's files into site.step_dir.
  /// An exception aborts the save (the previous one stays current).
  virtual void on_save(const SaveSite& /*site*/) {}
};

}  // namespace glass
