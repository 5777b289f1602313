#pragma once
// Ctrl-C (SIGINT) and SIGTERM during `glass train`: the first asks the training loop to save and
// stop; a second stops at once and says what stays (the last complete save and how to continue
// it), using only what a signal handler may call (write(2), tgkill(2), _exit(2)).

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

/// Installs the handler of SIGINT and SIGTERM, to be called by the thread that trains (and
/// saves): a signal the kernel hands to another thread is passed on to it, so the handler reads
/// g_saved_step only while the training is paused, never between a save's switch of `current`
/// and the store of its step (the trainer holds the signals back over both, train/trainer.hpp).
void install_stop_handlers();

/// For a command that stops a piece of work and goes on (glass chat stops an answer, not the
/// session): the same handler, silent; a signal sets g_stop, which the command clears once the
/// work stopped; a second signal before that ends the program at once (exit 130 after Ctrl-C).
void install_quiet_stop_handlers();

/// SIGINT and SIGTERM back to their default action.
void restore_default_signals();

}  // namespace glass::cli
