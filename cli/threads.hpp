#pragma once
// The thread flag every command that runs the model shares: -t/--threads N, and the default
// each command uses without it, chosen by the kind and the size of its work.

#include <cstddef>

#include <CLI/CLI.hpp>

namespace glass::cli {

/// What a command computes with its threads; each kind has its own default thread count.
enum class Work {
  training,    ///< data-parallel training steps (train/data_parallel.hpp): every core
  generation,  ///< one token at a time through the KV cache: matrix products of one row
  forward,     ///< forward passes over whole windows (eval, inspect, serve's evaluations)
};

/// Models from this many parameters on generate on every core; smaller ones on one thread.
/// Measured: one thread is faster for generation below it (bench/README.md, "Default thread
/// counts"), because a product of one row is too small to share out among threads.
inline constexpr double kGenerationThreadsFromParameters = 50e6;

/// Models from this many parameters run whole-window forward passes on every core; smaller ones
/// on one thread (same source).
inline constexpr double kForwardThreadsFromParameters = 50e6;

/// The thread count a command uses when -t/--threads is not given, for `work` on a model of
/// `n_parameters` parameters, with `cores` cores available: `cores` for training and for models
/// at or past the thresholds above, 1 below them. `cores` >= 1.
std::size_t default_threads(Work work, double n_parameters, std::size_t cores);

/// Adds -t/--threads to `cmd`, stored in `threads` (0 = not given). Accepts 1 to 4 per core of
/// this machine (more only makes threads wait for each other; beyond that it is a typo).
/// `work` words the help's default.
void add_threads_option(CLI::App* cmd, int& threads, Work work);

/// Applies the thread count before the model runs (glass::set_num_threads,
/// autograd/threads.hpp): `threads` if it was given (> 0), else default_threads(work,
/// n_parameters, glass::available_cores()). Returns the count applied.
std::size_t apply_threads(int threads, Work work, double n_parameters);

}  // namespace glass::cli
