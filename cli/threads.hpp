#pragma once
// The thread flag every command that runs the model shares: -t/--threads N.

#include <CLI/CLI.hpp>

namespace glass::cli {

/// Adds -t/--threads to `cmd`, stored in `threads` (0 = not given). Accepts 1 to 4 per core of
/// this machine (more only makes threads wait for each other; beyond that it is a typo).
void add_threads_option(CLI::App* cmd, int& threads);

/// The cores no other process is running on at this moment: glass::available_cores() minus the
/// runnable tasks of the machine besides this one (the fourth field of /proc/loadavg,
/// "running/total"), at least 1; every available core when /proc/loadavg cannot be read.
std::size_t idle_cores();

/// Applies the thread count of add_threads_option before the model runs
/// (glass::set_num_threads, autograd/threads.hpp). 0, the default, means every core for
/// training (`training` true) and idle_cores() for the rest: a matrix-product thread that shares
/// its core with another running process waits a scheduler time slice at every product, and
/// generation then ran 280x slower on two threads than on one (bench/README.md, *Default thread
/// counts*).
void apply_threads(int threads, bool training = false);

}  // namespace glass::cli
