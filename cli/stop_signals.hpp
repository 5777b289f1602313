#pragma once
// Ctrl-C (SIGINT) and SIGTERM during `glass train`: the first asks the training loop to save and
// stop; a second stops at once and says what stays (the last complete save and how to continue
// it), using only what a signal handler may call (write(2), readlink(2), _exit(2)).

#include <atomic>
#include <csignal>
#include <string>

namespace glass::cli {

/// The stop flag the trainer polls (TrainOptions::stop_flag): the first signal's number, 0 = none.
extern volatile std::sig_atomic_t g_stop;
/// Set when `train --serve` has finished training and only serves: a signal then stops the
/// server (g_stop), without the training's messages.
extern volatile std::sig_atomic_t g_serving_only;
/// The step of the last complete save (TrainOptions::saved_step); -1: none yet.
extern std::atomic<long> g_saved_step;

/// What the handler says, set before it is installed (a handler may only write(2)): whether this
/// process speaks (rank 0 under mpirun), the end of "the last complete save, of step N" and what
/// a second signal says when nothing was saved yet.
void set_stop_messages(bool speak, std::string after_saved_step, std::string when_nothing_saved);

/// Installs the handler of SIGINT and SIGTERM. Remembers out_dir/current and its target now: a
/// second signal reads the link again, so that it names the save that is current even when a
/// save switched the link an instant before g_saved_step was updated.
void install_stop_handlers(const std::string& out_dir);

/// SIGINT and SIGTERM back to their default action.
void restore_default_signals();

}  // namespace glass::cli
