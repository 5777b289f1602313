// The `glass` program: train, sample, eval, inspect, export, serve, gradcheck. Each subcommand
// lives in its own file of this folder (commands.hpp); the command table below lists them.

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <exception>
#include <new>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/commands.hpp"
#include "cli/malloc_tuning.hpp"
#include "cli/suggest.hpp"

#ifndef GLASS_VERSION
#define GLASS_VERSION "unknown"
#endif

namespace {

/// The command table: every subcommand of `glass`, in the order `glass --help` lists them.
constexpr glass::cli::CommandAdder kCommands[] = {
    glass::cli::add_train_command,     glass::cli::add_sample_command,
    glass::cli::add_eval_command,      glass::cli::add_inspect_command,
    glass::cli::add_export_command,    glass::cli::add_serve_command,
    glass::cli::add_gradcheck_command,
};

/// Output that never arrived is a failure: `glass sample > /dev/full` must not exit 0. Flushes
/// std::cout and stdout; on a write error says so on stderr and returns 1, else 0.
int stdout_error() {
  errno = 0;
  std::cout.flush();
  const bool failed = !std::cout.good() || std::fflush(stdout) != 0 || std::ferror(stdout) != 0;
  if (!failed) return 0;
  const int err = errno;
  std::fprintf(stderr, "error: cannot write to standard output%s%s\n", err != 0 ? ": " : "",
               err != 0 ? std::strerror(err) : "");
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  glass::tune_malloc_for_training();
  CLI::App app{
      "glass: a glass-box LLaMA-style language model that reads characters (or BPE tokens,\n"
      "--tokenizer bpe). Train it on a text file, sample from it, look inside it.",
      "glass"};
  app.require_subcommand(1);
  app.set_version_flag("-v,-V,--version", "glass " GLASS_VERSION);
  app.footer(
      "Examples:\n"
      "  glass train --data input.txt --out runs/mine     train on your own text\n"
      "  glass sample -m runs/mine -p 'Once upon' -n 200  continue a prompt\n"
      "  glass inspect -m runs/mine -p 'Once' --html inspect.html\n"
      "Run glass COMMAND --help for the flags of a command.");
  for (const glass::cli::CommandAdder add : kCommands) add(app);

  // No arguments at all: the help, as a question ("what can this do?"), not an error.
  if (argc == 1) {
    std::cout << app.help();
    return stdout_error();
  }

  // llama.cpp's GPU offload, before the parser (which would read -ngl as -n gl).
  if (const std::string gpu = glass::cli::gpu_flag_message(argc, argv); !gpu.empty()) {
    std::fprintf(stderr, "error: %s\n", gpu.c_str());
    return 1;
  }

  // An unknown first word would otherwise be reported by CLI11 as a missing subcommand.
  CLI::App* command = nullptr;
  if (argc > 1 && argv[1][0] != '-') {
    std::vector<std::string> names;
    for (CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
      names.push_back(sub->get_name());
      if (sub->get_name() == argv[1]) command = sub;
    }
    if (command == nullptr) {
      const std::optional<std::string> guess = glass::cli::nearest(argv[1], names);
      std::string list;
      for (const std::string& name : names) list += (list.empty() ? "" : ", ") + name;
      const std::string hint =
          guess ? "; did you mean '" + *guess + "'? The commands are: " : "; the commands are: ";
      std::fprintf(stderr,
                   "error: unknown command '%s'%s%s\nRun glass --help for what each does.\n",
                   argv[1], hint.c_str(), list.c_str());
      return 1;
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ExtrasError& e) {
    // A flag the command does not have (often a typo): name it, guess, show the usage.
    const std::string flag = command ? glass::cli::unknown_flag(*command, argc, argv, 2) : "";
    if (flag.empty()) return app.exit(e);
    std::fprintf(stderr, "error: %s\n", glass::cli::unknown_flag_message(*command, flag).c_str());
    return e.get_exit_code();
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code != 0 ? code : stdout_error();
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr,
                 "error: out of memory: the model, the batch or the input is too large for this "
                 "machine (try a smaller --batch-size, --context or model)\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return stdout_error();
}
