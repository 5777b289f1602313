// The thread flag of the commands. See threads.hpp.

#include "train/cli/threads.hpp"

#include <algorithm>
#include <thread>

#include <cblas.h>
#include <fmt/format.h>

#include "train/cli/validators.hpp"

namespace glass::cli {

void add_threads_option(CLI::App* cmd, int& threads) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  cmd->add_option("-t,--threads", threads,
                  fmt::format("threads of the matrix products (default: OpenBLAS's own choice; "
                              "this machine has {} cores)", cores))
      ->check(integer_in(1, 4LL * cores, fmt::format("an integer from 1 to {} (4 per core)", 4 * cores)));
}

void apply_threads(int threads) {
  if (threads > 0) openblas_set_num_threads(threads);
}

}  // namespace glass::cli
