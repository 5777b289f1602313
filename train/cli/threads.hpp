#pragma once
// The thread flag every command that runs the model shares: -t/--threads N.

#include <CLI/CLI.hpp>

namespace glass::cli {

/// Adds -t/--threads to `cmd`, stored in `threads` (0 = not given). Accepts 1 to 4 per core of
/// this machine (more only makes threads wait for each other; beyond that it is a typo).
void add_threads_option(CLI::App* cmd, int& threads);

/// Applies the thread count of add_threads_option before the model runs: the number of threads
/// OpenBLAS's matrix products use. 0 leaves OpenBLAS's own choice (all cores, or
/// OPENBLAS_NUM_THREADS).
void apply_threads(int threads);

}  // namespace glass::cli
