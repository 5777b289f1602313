#pragma once
// The run directory a Trainer owns (checkpoint/run_dir.hpp): its lock, its saves (each one
// all-or-nothing: a new step directory, then one switch of DIR/current), the restoring of a lost
// `current`, and the removal of what interrupted runs left. Only rank 0 of a data-parallel run
// has one.

#include <atomic>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>

#include "checkpoint/run_dir.hpp"
#include "train/observer.hpp"

namespace glass {

/// One run directory, used by one Trainer at a time.
class RunDirectory {
 public:
  /// `out_dir`: the directory (created by prepare when missing). `may_replace_run`: a run it
  /// holds may be continued or replaced (resume or overwrite); otherwise lock() refuses it.
  /// `saved_step`, when set, receives the step of every complete save (lock-free, for a signal
  /// handler). Notes and warnings go to `out`.
  RunDirectory(std::string out_dir, bool may_replace_run, std::atomic<long>* saved_step,
               std::ostream& out);
  ~RunDirectory();

  /// Locks out_dir when it exists (FileError naming the trainer that holds it), before what it
  /// holds is read or judged; refuses a run it holds unless may_replace_run (RunExistsError).
  void lock();
  /// Makes the directory ready before the first step: created and writable (FileError naming
  /// the reason), locked, DIR/current pointed to the save `relink` when not "" (a resume whose
  /// link was lost), and the incomplete saves, temporary files and unused saves of `run_id`
  /// left by interrupted runs removed (each said on `out`).
  void prepare(const std::string& run_id, const std::string& relink);

  /// The step of the last complete save of this run (-1: none yet).
  long last_saved_step() const { return last_saved_step_; }
  /// Sets it (a resumed run: the step of the save it continues) and stores it in saved_step.
  void set_last_saved_step(long step);

  /// Writes the save of `step`: `write_files(site)` fills a new step directory, then its
  /// manifest covers every file, one switch of DIR/current makes it the last complete save and
  /// the save before it is removed. Throws CheckpointError saying what is kept when any part
  /// fails; `current` then still names the previous save.
  void save(long step, const std::string& run_id,
            const std::function<void(const SaveSite&)>& write_files);
  /// Into site.step_dir (whose model.safetensors is written): best.safetensors, a link to the new
  /// weights when `new_best`, else the previous save's best weights when `has_best` and it has
  /// them (rewritten with `run_id` when they belong to no run or another: a checkpoint written
  /// before run ids, continued).
  void carry_best(const SaveSite& site, bool new_best, bool has_best,
                  const std::string& run_id) const;

 private:
  std::string out_dir_;
  bool may_replace_run_;
  std::atomic<long>* saved_step_;
  std::ostream& out_;
  std::unique_ptr<RunLock> lock_;  // held for the RunDirectory's lifetime
  long last_saved_step_ = -1;
};

}  // namespace glass
