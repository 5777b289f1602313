// The thread flag of the commands and their defaults. See threads.hpp.

#include "cli/threads.hpp"

#include <algorithm>
#include <thread>

#include <fmt/format.h>

#include "autograd/threads.hpp"
#include "cli/validators.hpp"

namespace glass::cli {

std::size_t default_threads(Work work, double n_parameters, std::size_t cores) {
  switch (work) {
    case Work::training:
      return cores;
    case Work::generation:
      return n_parameters >= kGenerationThreadsFromParameters ? cores : 1;
    case Work::forward:
      return n_parameters >= kForwardThreadsFromParameters ? cores : 1;
  }
  return cores;
}

void add_threads_option(CLI::App* cmd, int& threads, Work work) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t available = glass::available_cores();
  const std::string default_text =
      work == Work::training
          ? fmt::format("every core this process may use, {} here", available)
          : fmt::format(
                "1 for models under {:.0f}M parameters, where one thread is faster; else every "
                "core this process may use, {} here",
                (work == Work::generation ? kGenerationThreadsFromParameters
                                          : kForwardThreadsFromParameters) /
                    1e6,
                available);
  cmd->add_option("-t,--threads", threads,
                  fmt::format("threads to compute with (default: {})", default_text))
      ->check(integer_in(1, 4LL * cores,
                         fmt::format("an integer from 1 to {} (4 per core)", 4 * cores)));
}

std::size_t apply_threads(int threads, Work work, double n_parameters) {
  const std::size_t n = threads > 0 ? static_cast<std::size_t>(threads)
                                    : default_threads(work, n_parameters, glass::available_cores());
  glass::set_num_threads(n);
  return n;
}

}  // namespace glass::cli
