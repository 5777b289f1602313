// The thread flag of the commands. See threads.hpp.

#include "cli/threads.hpp"

#include <algorithm>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "autograd/threads.hpp"
#include "cli/validators.hpp"

namespace glass::cli {

void add_threads_option(CLI::App* cmd, int& threads) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  cmd->add_option(
         "-t,--threads", threads,
         fmt::format("threads to compute with (default: every core this process may use, {} "
                     "here; outside training, the cores no other process is busy on)",
                     glass::available_cores()))
      ->check(integer_in(1, 4LL * cores,
                         fmt::format("an integer from 1 to {} (4 per core)", 4 * cores)));
}

std::size_t idle_cores() {
  const std::size_t cores = glass::available_cores();
  std::ifstream in("/proc/loadavg");
  double one_minute = 0, five = 0, fifteen = 0;
  std::size_t running = 0;
  char slash = 0;
  if (!(in >> one_minute >> five >> fifteen >> running >> slash) || slash != '/' || running == 0)
    return cores;
  const std::size_t others = running - 1;  // this process's own thread is one of them
  return others >= cores ? 1 : cores - others;
}

void apply_threads(int threads, bool training) {
  if (threads > 0) {
    glass::set_num_threads(static_cast<std::size_t>(threads));
    return;
  }
  glass::set_num_threads(training ? 0 : idle_cores());  // 0: every core
}

}  // namespace glass::cli
