// The thread count of every command (autograd/threads.hpp).

#include "autograd/threads.hpp"

#include <cblas.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <thread>

namespace glass {
inline namespace GLASS_PRECISION {

namespace {
std::atomic<std::size_t> g_threads{1};
}  // namespace

std::size_t available_cores() {
  // The CPUs this process may run on: fewer than the machine's under mpirun (each process bound
  // to its cores), taskset or a container's CPU set.
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    return static_cast<std::size_t>(CPU_COUNT(&set));
  return std::max<std::size_t>(1, std::thread::hardware_concurrency());
}

void set_num_threads(std::size_t n) {
  if (n == 0) n = available_cores();
  g_threads = n;
  set_blas_threads(n);
}

std::size_t num_threads() { return g_threads; }

void set_blas_threads(std::size_t n) {
  openblas_set_num_threads(static_cast<int>(std::max<std::size_t>(n, 1)));
}

}  // namespace GLASS_PRECISION
}  // namespace glass
