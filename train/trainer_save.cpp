// The files a training run writes (train/trainer.hpp): each save, all-or-nothing and covered by
// its manifest (a new step directory, then one switch of DIR/current), and the live per-step log
// DIR/steps.csv.

#include "train/trainer.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "checkpoint/atomic_file.hpp"
#include "checkpoint/checkpoint.hpp"
#include "checkpoint/checkpoint_files.hpp"
#include "checkpoint/manifest.hpp"
#include "checkpoint/run_dir.hpp"
#include "checkpoint/safetensors.hpp"
#include "train/recipe.hpp"
#include "train/trainer_detail.hpp"

namespace glass {

namespace fs = std::filesystem;
using trainer_detail::seconds_since;

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

// The best weights of the previous save, carried into the new one: a hard link when they
// belong to this run, or rewritten with this run's id when they do not (a checkpoint written
// before run ids existed, continued with --resume: its new files carry a new id, and a
// best.safetensors without it would be refused as coming from another run).
void Trainer::keep_best(const std::string& previous_best, const std::string& best) const {
  SafetensorsContents weights = load_safetensors(previous_best);
  const auto it = weights.metadata.find("run_id");
  if (it != weights.metadata.end() && it->second == run_id_) {
    link_or_copy(previous_best, best);
    return;
  }
  weights.metadata["run_id"] = run_id_;
  save_safetensors(best, weights.tensors, weights.metadata);
}

void Trainer::save(bool also_best) {
  // Measured by every rank together, before rank 0 alone writes the save.
  const std::optional<std::string> record =
      options_.interp_record ? measure_interp_record() : std::nullopt;
  if (!options_.comm.is_root()) return;  // rank 0 writes for all
  const std::string& dir = options_.out_dir;
  const fs::path previous = checkpoint_files_dir(dir);  // the last complete save, if any
  std::string step_dir;
  std::optional<SignalsHeld> held;  // from the switch of `current` to the store of saved_step
  try {
    // All files of the save go into a new step directory; one rename of the `current` link
    // then switches to it (checkpoint/run_dir.hpp).
    step_dir = begin_save(dir, step_);
    const fs::path files(step_dir);
    const nlohmann::json training = {{"context", options_.context},
                                     {"step", step_},
                                     {"run_id", run_id_},
                                     {"data", fs::path(options_.data_path).filename().string()},
                                     {"manifest", kManifestFile}};
    const std::string extra = nlohmann::json{{"training", training}}.dump();
    if (bpe_)  // also writes the save's tokenizer.json (covered by the manifest below)
      save_model(step_dir, *model_, *bpe_, "model.safetensors", extra, step_, run_id_);
    else
      save_model(step_dir, *model_, tokenizer_, "model.safetensors", extra, step_, run_id_);
    if (also_best)
      link_or_copy((files / "model.safetensors").string(), (files / "best.safetensors").string());
    else if (has_best_ && fs::exists(previous / "best.safetensors"))
      keep_best((previous / "best.safetensors").string(), (files / "best.safetensors").string());
    TrainState state;
    state.step = step_;
    state.batch_rng = train_batches_->state();
    std::ostringstream rng_text;
    rng_text << sample_rng_;
    state.sample_rng = rng_text.str();
    state.best_val = best_val_;
    state.has_best = has_best_;
    state.elapsed_s = elapsed_before_ + seconds_since(run_start_);
    state.context = options_.context;
    state.log = log_;
    state.run_id = run_id_;
    state.has_recipe = true;
    state.recipe = recipe_of(options_);
    save_train_state(step_dir, *optimizer_, state);
    write_file_atomic((files / "log.csv").string(), log_csv(log_));
    write_file_atomic((files / "steps.csv").string(), steps_csv(steps_));
    if (record) write_interp_record(step_dir, previous.string(), *record);
    // Last: the checksums of every file above (checkpoint/manifest.hpp); a save without them
    // never becomes current.
    write_manifest(step_dir, run_id_, step_);
    held.emplace();
    commit_save(dir, step_dir);
  } catch (const std::exception& e) {
    if (!step_dir.empty()) {
      std::error_code ec;
      fs::remove_all(step_dir, ec);
    }
    throw CheckpointError(fmt::format(
        "saving the checkpoint of step {} failed: {}. {}", step_, e.what(),
        last_saved_step_ >= 0
            ? fmt::format("The last complete checkpoint in {} (step {}) is kept; fix the problem "
                          "(e.g. free disk space) and continue it with --resume.",
                          dir, last_saved_step_)
            : std::string("No checkpoint of this run was complete yet.")));
  }
  last_saved_step_ = step_;
  if (options_.saved_step != nullptr) options_.saved_step->store(step_);
  held.reset();
  const std::string previous_save =
      previous == fs::path(dir) ? std::string() : previous.filename().string();
  const std::string warning = finish_save(dir, previous_save);
  if (!warning.empty()) out_ << "warning: " << warning << "\n";
  // Earlier saves a reader was still using when they were replaced, now released.
  remove_unused_saves(dir, run_id_);
}

// The live steps.csv starts from the rows of the last save (all of them on --resume, none for a
// new run), so it never holds steps that were not saved; each step then appends one whole line
// with one write(2), so a reader following the file sees complete lines.
void Trainer::open_live_steps() {
  if (!options_.comm.is_root()) return;  // with mpirun, only rank 0 writes files
  const std::string path = (fs::path(options_.out_dir) / "steps.csv").string();
  write_file_atomic(path, steps_csv(steps_));
  live_steps_fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (live_steps_fd_ < 0)
    throw FileError(
        fmt::format("cannot open '{}' to append the per-step log: {}", path, std::strerror(errno)));
}

void Trainer::append_step(const StepRow& row) {
  steps_.push_back(row);
  if (live_steps_fd_ < 0) return;
  const std::string line = step_csv_line(row);
  // A full disk may take part of the line (a short write, errno untouched): the rest is written
  // again, and that write's errno (ENOSPC) is the one reported.
  int err = file_op_fault("append", options_.out_dir + "/" + kStepsFile);
  for (std::size_t done = 0; err == 0 && done < line.size();) {
    const ssize_t n = ::write(live_steps_fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      err = n < 0 ? errno : EIO;
    else
      done += static_cast<std::size_t>(n);
  }
  if (err != 0) {
    // The live copy is for watching; the saves keep the complete log. Say so once and go on.
    out_ << "\nwarning: cannot append to " << options_.out_dir << "/steps.csv ("
         << std::strerror(err) << "); the per-step log is still written at every save\n";
    ::close(live_steps_fd_);
    live_steps_fd_ = -1;
  }
}

}  // namespace glass
