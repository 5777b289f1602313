#pragma once
// How many threads GlassLLM computes with: one setting for every command (`--threads N`).

#include <cstddef>

#include "autograd/scalar.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

/// The cores this process may run on (its CPU affinity: under `mpirun`, `taskset` or a container
/// fewer than the machine's; else std::thread::hardware_concurrency, at least 1): the default of
/// `--threads`.
std::size_t available_cores();

/// Sets the number of threads GlassLLM computes with (n >= 1; 0 means available_cores()), for
/// every command. Training (train/data_parallel.hpp) runs n threads of its own, each on a part
/// of the batch, with the BLAS library single-threaded inside them; everything else (generation,
/// evaluation outside training, the reference path) gets its parallelism from the BLAS
/// library's own products, which this sets to n threads (openblas_set_num_threads). Only one of
/// the two thread pools is busy at any time, so they never compete for the cores.
void set_num_threads(std::size_t n);

/// The number set by set_num_threads (1 until it is called).
std::size_t num_threads();

/// Sets the BLAS library's own thread count, leaving num_threads() as it is (the data-parallel
/// training step sets 1 while its threads run; see train/data_parallel.hpp).
void set_blas_threads(std::size_t n);

}  // namespace GLASS_PRECISION
}  // namespace glass
