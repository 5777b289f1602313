#pragma once
// The run directory of `glass train` (its --out): every save is all-or-nothing.
//
//   DIR/step-000250/          one complete save: model.safetensors, best.safetensors,
//                             config.json, train_state.json, train_state.safetensors, log.csv
//   DIR/current -> step-000250        symbolic link to the last complete save
//   DIR/model.safetensors -> current/model.safetensors   (and the same for the other files),
//                             so DIR reads like one checkpoint directory
//   DIR/steps.csv             the per-step log, appended after every step (each save has a copy)
//   DIR/loss.html             the loss curve, written when the run ends
//   DIR/run.lock              held (flock) by the trainer using DIR; holds its pid
//
// A save writes a new step directory completely (each file fsync'ed), then switches `current`
// with one rename of a symbolic link (atomic on POSIX), and only then removes the previous step
// directory. A process killed at any moment, or a disk that fills up, leaves `current` on the
// last complete save; a half-written step directory is removed by the next run.

#include <string>
#include <vector>

namespace glass {

/// The name of the link to the last complete save inside a run directory.
inline constexpr const char* kCurrentLink = "current";
/// The lock file inside a run directory.
inline constexpr const char* kLockFile = "run.lock";
/// The per-step log: each save holds its complete copy; DIR's own is a regular file the trainer
/// appends to after every step (not a link to the save's).
inline constexpr const char* kStepsFile = "steps.csv";
/// The interpretability record of a save (interp/record.hpp): the head scores of that save,
/// and every record of the run up to it (the saves before are removed, as log.csv keeps every
/// evaluation). Saved but not linked from DIR, like steps.csv.
inline constexpr const char* kInterpFile = "interp.json";
inline constexpr const char* kInterpHistoryFile = "interp_history.json";
/// The probe's attention at every save of the run up to this one (inspect/probe_history.hpp).
/// Saved but not linked from DIR, like steps.csv.
inline constexpr const char* kProbeHistoryFile = "probe_history.json";

/// True for the names begin_save gives a save's directory: "step-" and at least six digits,
/// optionally ".k" ("step-000250", "step-000250.1").
bool is_step_dir_name(const std::string& name);

/// The files one save writes into its step directory (and links from the run directory).
const std::vector<std::string>& checkpoint_file_names();

/// The directory that holds the checkpoint files of `dir`: DIR/<target of DIR/current> when
/// DIR is a run directory with a complete save, else DIR itself (a step directory, or a
/// checkpoint written in one flat directory). The link is read once, so a reader that uses
/// the returned path sees one save even while a trainer switches to the next.
std::string checkpoint_files_dir(const std::string& dir);

/// True when `dir` holds a checkpoint a new run would replace: a `current` link, or (flat
/// layout) a config.json or model.safetensors. Complete step directories without the link
/// (copies, or a first save whose switch a kill prevented) are never replaced nor removed. A directory holding only the remains of a save
/// that never completed, or only run.lock, holds none.
bool holds_checkpoint(const std::string& dir);

/// Refuses (FileError) a run directory whose DIR/current exists but is not a symbolic link
/// (copied with cp -L, or to a file system without links): its next save could not switch it.
void check_run_layout(const std::string& dir);

/// An exclusive lock (flock) on the directory DIR itself and on DIR/run.lock, held until
/// destruction, so that one trainer at a time uses a run directory, even when run.lock is
/// deleted meanwhile. DIR must exist. Throws FileError when another process holds it,
/// naming that process's pid: "another glass train (pid 1234) is using 'runs/x' ...".
/// On a file system without flock (some network file systems) `held()` is false and
/// `warning()` says why; the run goes on unprotected.
class RunLock {
 public:
  explicit RunLock(const std::string& dir);
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;
  bool held() const { return fd_ >= 0; }
  const std::string& warning() const { return warning_; }

 private:
  int fd_ = -1;      // run.lock
  int dir_fd_ = -1;  // DIR
  std::string warning_;
};

/// A new random run id (16 hexadecimal digits). Each file of a save records its run's id, so
/// that files of two runs are never mixed unnoticed.
std::string new_run_id();

/// Starts the save of `step`: creates the empty directory DIR/step-<step, 6 digits> and returns
/// its path. A directory of that name left by a save that never completed is removed first;
/// when the name is the current save's (a save at the step resumed from), ".1", ".2", ... is
/// appended. Throws FileError.
std::string begin_save(const std::string& dir, long step);

/// Makes `step_dir` (filled after begin_save) the current save: fsyncs it, points a new link at
/// it and renames that link over DIR/current, then fsyncs DIR. Throws FileError when that
/// fails, and `current` is then unchanged. Call finish_save afterwards.
void commit_save(const std::string& dir, const std::string& step_dir);

/// After commit_save: makes DIR/<file> a link to current/<file> for each checkpoint file (once;
/// a regular file of a flat-layout checkpoint is replaced by the link) and removes
/// `previous_save`, the step directory that was current before (its name; "" for none). Other
/// step directories, e.g. copies a user made, are left alone. Returns "" or a warning saying
/// what could not be done (the save itself is complete either way).
std::string finish_save(const std::string& dir, const std::string& previous_save = "");

/// Removes the step directories of DIR that a save left incomplete (killed or out of disk
/// before its last file); complete ones, current or not, are kept. Returns how many were
/// removed. Best effort.
std::size_t remove_stale_saves(const std::string& dir);

/// A shared lock (flock LOCK_SH) on the save a reader uses, held until destruction, so that the
/// trainer's cleanup never removes it under the reader: the trainer skips a pinned save and
/// removes it at a later save (remove_unused_saves). Resolves DIR/current once
/// (checkpoint_files_dir), opens and locks that directory, and checks that it was not removed
/// in between (then resolves `current` again). dir() is the pinned directory: the save's, or
/// DIR itself for a checkpoint without a `current` link. Never throws: a directory that cannot
/// be opened is left to the reader's own error message.
class SavePin {
 public:
  explicit SavePin(const std::string& run_dir);
  ~SavePin();
  SavePin(const SavePin&) = delete;
  SavePin& operator=(const SavePin&) = delete;
  const std::string& dir() const { return dir_; }

 private:
  int fd_ = -1;
  std::string dir_;
};

/// Removes the save directory `save` unless a reader pins it (SavePin): takes an exclusive
/// flock without waiting, and returns false at once (nothing removed) when a reader holds it.
/// Throws FileError when the removal itself fails.
bool remove_save_unless_pinned(const std::string& save);

/// Removes the complete saves of run `run_id` in DIR that are not current and that no reader
/// pins: the previous saves a reader pinned at the time they were replaced, and a save a kill
/// left complete but never switched to. Only a step directory whose name matches the step its
/// manifest records is taken for one (a copy the user made under another name is kept), and only
/// when its manifest records `run_id`. Returns how many were removed. Best effort.
std::size_t remove_unused_saves(const std::string& dir, const std::string& run_id);

/// The name of the newest complete save in DIR ("step-000060"), for a run directory whose
/// `current` link was lost: the complete step directory with the highest step (its manifest's,
/// or its name's for a save written before manifests), or "" when there is none.
std::string newest_complete_save(const std::string& dir);

/// The save a reader or a resume reads in DIR, decided in one place for both.
struct SaveToRead {
  /// The directory whose files to read: DIR itself (its files lead through `current`), or
  /// DIR/<fallback>.
  std::string dir;
  /// The newest complete save (newest_complete_save), read because `current` does not lead to
  /// a complete save; "" when `current` is right (or DIR is a checkpoint of the flat layout, or
  /// it holds no complete save to fall back on).
  std::string fallback;
  /// With a fallback, what is wrong with the link: "DIR/current (the link to the last complete
  /// save) is missing", "... points to step-000030, which is gone", "..., which is a file, not a
  /// save", "..., a save that did not complete" (a file or its manifest missing), or "... is a
  /// file, not a link to a save". Each caller adds what it does about it (a reader reads the
  /// fallback; a resume links `current` to it again).
  std::string reason;
};

/// Where DIR's save to read is (SaveToRead). Reads only directory entries, links, and the
/// manifests of the saves (config.json of a save without one); never throws.
SaveToRead save_to_read(const std::string& dir);

/// Makes `to` a hard link of `from` (both in the run directory's file system), or a copy when
/// the file system has no hard links. Throws FileError.
void link_or_copy(const std::string& from, const std::string& to);

}  // namespace glass
