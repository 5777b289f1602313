// The thread flag of the commands. See threads.hpp.

#include "cli/threads.hpp"

#include <algorithm>
#include <thread>

#include <fmt/format.h>

#include "autograd/threads.hpp"
#include "cli/validators.hpp"

namespace glass::cli {

void add_threads_option(CLI::App* cmd, int& threads, const std::string& default_text) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  cmd->add_option(
         "-t,--threads", threads,
         fmt::format("threads to compute with (default: {})",
                     default_text.empty() ? fmt::format("every core this process may use, {} here",
                                                        glass::available_cores())
                                          : default_text))
      ->check(integer_in(1, 4LL * cores,
                         fmt::format("an integer from 1 to {} (4 per core)", 4 * cores)));
}

void apply_threads(int threads) {
  glass::set_num_threads(static_cast<std::size_t>(threads));  // 0: every core
}

}  // namespace glass::cli
