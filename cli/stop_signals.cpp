// The signal handler of `glass train` and the signal-safe output it writes. See
// cli/stop_signals.hpp.

#include "cli/stop_signals.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace glass::cli {

volatile std::sig_atomic_t g_stop = 0;
volatile std::sig_atomic_t g_serving_only = 0;
std::atomic<long> g_saved_step{-1};

namespace {

// Set by set_stop_messages and install_stop_handlers before the handler can run.
bool g_say_signals = false;
std::string g_after_saved_step;  // "N" follows "the last complete save, of step N"
std::string g_when_nothing_saved;
pid_t g_training_thread = 0;  // the thread that installed the handlers, and saves

/// Writes `text` to standard error with write(2), which a signal handler may call.
void say(const char* text, std::size_t n) {
  while (n > 0) {
    const ssize_t written = ::write(STDERR_FILENO, text, n);
    if (written <= 0) return;
    text += written;
    n -= static_cast<std::size_t>(written);
  }
}
void say(const char* text) { say(text, std::strlen(text)); }
void say(const std::string& text) { say(text.data(), text.size()); }

/// First Ctrl-C (SIGINT) or SIGTERM (what `timeout`, `docker stop` and SLURM send): ask the
/// loop to save and stop after the current step or evaluation; g_stop holds the signal's
/// number. A second one ends the program at once, saying what stays: the last complete save
/// (saves are all-or-nothing, so none is ever half-written), or that none was made yet.
extern "C" void on_stop_signal(int signo) {
  // The kernel may run the handler on any thread of the process (a BLAS or server thread, e.g.
  // while the training thread holds the signals back during a save's switch of `current`). Such
  // a thread passes the signal on to the training thread: there the handler runs while the
  // training is paused, and never between the switch of `current` and the store of g_saved_step
  // (the trainer holds the signals back over both), so the step it names is the save `current`
  // points to when the process ends.
  const int saved_errno = errno;
  if (g_training_thread != 0 && static_cast<pid_t>(::syscall(SYS_gettid)) != g_training_thread) {
    ::syscall(SYS_tgkill, static_cast<pid_t>(::getpid()), g_training_thread, signo);
    errno = saved_errno;
    return;
  }
  const char* name = signo == SIGTERM ? "SIGTERM" : "Ctrl-C";
  if (g_serving_only != 0) {  // `train --serve` after training: stop serving; a second one at once
    if (g_stop != 0) ::_exit(128 + signo);
    g_stop = signo;
    errno = saved_errno;
    return;
  }
  if (g_stop == 0) {
    g_stop = signo;
    if (g_say_signals) {
      say("\n"), say(name);
      say(": stopping after the current step or evaluation, with a save first (");
      say(name), say(" again stops at once, without it)\n");
    }
    errno = saved_errno;
    return;
  }
  if (g_say_signals) {
    say("\n"), say(name),
        say(" again: stopped at once, without the save the first one asked for. ");
    const long step = g_saved_step.load();
    if (step >= 0) {
      char digits[24];
      std::size_t n = 0;
      for (long v = step; n == 0 || v > 0; v /= 10) digits[n++] = static_cast<char>('0' + v % 10);
      say("Nothing else is lost: the last complete save, of step ");
      while (n > 0) say(&digits[--n], 1);
      say(g_after_saved_step);
    } else {
      say(g_when_nothing_saved);
    }
  }
  ::_exit(128 + signo);  // 130 after Ctrl-C, 143 after SIGTERM, as the first signal's exit
}

}  // namespace

void set_stop_messages(bool speak, std::string after_saved_step, std::string when_nothing_saved) {
  g_say_signals = speak;
  g_after_saved_step = std::move(after_saved_step);
  g_when_nothing_saved = std::move(when_nothing_saved);
}

void install_stop_handlers() {
  g_training_thread = static_cast<pid_t>(::syscall(SYS_gettid));
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
}

void install_quiet_stop_handlers() {
  g_serving_only = 1;  // the handler's silent mode (see on_stop_signal)
  install_stop_handlers();
}

void restore_default_signals() {
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

}  // namespace glass::cli
