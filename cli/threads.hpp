#pragma once
// The thread flag every command that runs the model shares: -t/--threads N.

#include <string>

#include <CLI/CLI.hpp>

namespace glass::cli {

/// Adds -t/--threads to `cmd`, stored in `threads` (0 = not given). Accepts 1 to 4 per core of
/// this machine (more only makes threads wait for each other; beyond that it is a typo).
/// `default_text` says what the command does without it (empty: every core this process may
/// use).
void add_threads_option(CLI::App* cmd, int& threads, const std::string& default_text = "");

/// Applies the thread count of add_threads_option before the model runs
/// (glass::set_num_threads, autograd/threads.hpp): 0, the default, means every core.
void apply_threads(int threads);

}  // namespace glass::cli
