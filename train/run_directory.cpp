// The run directory a Trainer owns. See train/run_directory.hpp.

#include "train/run_directory.hpp"

#include <signal.h>

#include <filesystem>
#include <optional>
#include <ostream>
#include <vector>

#include <fmt/format.h>

#include "checkpoint/checkpoint.hpp"
#include "checkpoint/checkpoint_files.hpp"
#include "checkpoint/manifest.hpp"
#include "checkpoint/safetensors.hpp"
#include "train/errors.hpp"

namespace glass {

namespace fs = std::filesystem;

namespace {

/// Holds SIGINT and SIGTERM back from this thread while it lives (they stay pending and are
/// handled when it ends). Held over the switch of `current` and the store of saved_step, so that
/// a handler running on this thread sees both before or both after: never a `current` that names
/// the new save next to a saved_step that still names the one before.
class SignalsHeld {
 public:
  SignalsHeld() {
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    ::pthread_sigmask(SIG_BLOCK, &stop, &before_);
  }
  ~SignalsHeld() { ::pthread_sigmask(SIG_SETMASK, &before_, nullptr); }
  SignalsHeld(const SignalsHeld&) = delete;
  SignalsHeld& operator=(const SignalsHeld&) = delete;

 private:
  sigset_t before_;
};

}  // namespace

RunDirectory::RunDirectory(std::string out_dir, bool may_replace_run, std::atomic<long>* saved_step,
                           std::ostream& out)
    : out_dir_(std::move(out_dir)),
      may_replace_run_(may_replace_run),
      saved_step_(saved_step),
      out_(out) {}

RunDirectory::~RunDirectory() = default;

void RunDirectory::lock() {
  if (lock_ || !fs::is_directory(out_dir_)) return;
  lock_ = std::make_unique<RunLock>(out_dir_);  // FileError naming the other trainer's pid
  if (!lock_->warning().empty()) out_ << "warning: " << lock_->warning() << "\n";
  if (!may_replace_run_ && holds_checkpoint(out_dir_)) throw RunExistsError(out_dir_);
}

void RunDirectory::set_last_saved_step(long step) {
  last_saved_step_ = step;
  if (saved_step_ != nullptr) saved_step_->store(step);
}

void RunDirectory::prepare(const std::string& run_id, const std::string& relink) {
  ensure_writable_directory(out_dir_);  // FileError naming the directory and the reason
  lock();
  if (!relink.empty()) {
    commit_save(out_dir_, (fs::path(out_dir_) / relink).string());
    const std::string warning = finish_save(out_dir_);
    if (!warning.empty()) out_ << "warning: " << warning << "\n";
  }
  // A run killed during a save leaves a step directory that never became current (and, in a
  // checkpoint of the flat layout, temporary files); the current save itself is whole.
  check_run_layout(out_dir_);
  std::size_t stale = remove_stale_saves(out_dir_);
  const std::vector<std::string> checkpoint_files = {
      "model.safetensors", "best.safetensors", "train_state.safetensors",
      "train_state.json",  "config.json",      "tokenizer.json",
      "log.csv",           "loss.html",        "steps.csv"};
  stale += remove_stale_temp_files(out_dir_, checkpoint_files);
  if (stale > 0)
    out_ << "note: removed " << stale << " incomplete save(s) or temporary file(s) left in "
         << out_dir_ << " by an interrupted run\n";
  // Complete saves of this run that are not current: a kill between a save's switch of
  // `current` and the removal of the save before it, or a save a kill kept from its switch.
  if (const std::size_t unused = remove_unused_saves(out_dir_, run_id); unused > 0)
    out_ << "note: removed " << unused << " complete save(s) of this run that were no longer "
         << "current, left in " << out_dir_ << " by an interrupted run\n";
}

void RunDirectory::carry_best(const SaveSite& site, bool new_best, bool has_best,
                              const std::string& run_id) const {
  const fs::path files(site.step_dir), previous(site.previous);
  const std::string best = (files / "best.safetensors").string();
  if (new_best) {
    link_or_copy((files / "model.safetensors").string(), best);
    return;
  }
  if (!has_best || !fs::exists(previous / "best.safetensors")) return;
  // A hard link when the best weights belong to this run; rewritten with this run's id when
  // they do not (a best.safetensors without it would be refused as another run's).
  const std::string previous_best = (previous / "best.safetensors").string();
  SafetensorsContents weights = load_safetensors(previous_best);
  const auto it = weights.metadata.find("run_id");
  if (it != weights.metadata.end() && it->second == run_id) {
    link_or_copy(previous_best, best);
    return;
  }
  weights.metadata["run_id"] = run_id;
  save_safetensors(best, weights.tensors, weights.metadata);
}

void RunDirectory::save(long step, const std::string& run_id,
                        const std::function<void(const SaveSite&)>& write_files) {
  const fs::path previous = checkpoint_files_dir(out_dir_);  // the last complete save, if any
  SaveSite site;
  site.step = step;
  site.previous = previous.string();
  std::optional<SignalsHeld> held;  // from the switch of `current` to the store of saved_step
  try {
    site.step_dir = begin_save(out_dir_, step);
    write_files(site);
    // Last: the checksums of every file above (checkpoint/manifest.hpp); a save without them
    // never becomes current.
    write_manifest(site.step_dir, run_id, step);
    held.emplace();
    commit_save(out_dir_, site.step_dir);
  } catch (const std::exception& e) {
    if (!site.step_dir.empty()) {
      std::error_code ec;
      fs::remove_all(site.step_dir, ec);
    }
    throw CheckpointError(fmt::format(
        "saving the checkpoint of step {} failed: {}. {}", step, e.what(),
        last_saved_step_ >= 0
            ? fmt::format("The last complete checkpoint in {} (step {}) is kept; fix the problem "
                          "(e.g. free disk space) and resume the run from it.",
                          out_dir_, last_saved_step_)
            : std::string("No checkpoint of this run was complete yet.")));
  }
  set_last_saved_step(step);
  held.reset();
  const std::string previous_save =
      previous == fs::path(out_dir_) ? std::string() : previous.filename().string();
  const std::string warning = finish_save(out_dir_, previous_save);
  if (!warning.empty()) out_ << "warning: " << warning << "\n";
  // Earlier saves a reader was still using when they were replaced, now released.
  remove_unused_saves(out_dir_, run_id);
}

}  // namespace glass
