// The `glass` program: train, sample, chat, eval, inspect, export, serve, gradcheck. Each subcommand
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
#include <vector>

#include <CLI/CLI.hpp>

#include "autograd/blas_core.hpp"
#include "cli/commands.hpp"
#include "cli/malloc_tuning.hpp"
#include "cli/suggest.hpp"

#ifndef GLASS_VERSION
#define GLASS_VERSION "unknown"
#endif

namespace {

/// The command table: every subcommand of `glass`, in the order `glass --help` lists them.
constexpr glass::cli::CommandAdder kCommands[] = {
    glass::cli::add_train_command,     glass::cli::add_finetune_command,
    glass::cli::add_sample_command,    glass::cli::add_chat_command,
    glass::cli::add_eval_command,      glass::cli::add_inspect_command,
    glass::cli::add_export_command,    glass::cli::add_serve_command,
    glass::cli::add_gradcheck_command, glass::cli::add_sae_command,
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

/// The program with its help, version and every command of kCommands.
void add_commands(CLI::App& app) {
  app.require_subcommand(1);
  app.set_version_flag("-v,-V,--version",
                       "glass " GLASS_VERSION "\n" + glass::blas_core::description());
  app.footer(
      "Examples:\n"
      "  glass train --data input.txt --out runs/mine     train on your own text\n"
      "  glass sample -m runs/mine -p 'Once upon' -n 200  continue a prompt\n"
      "  glass inspect -m runs/mine -p 'Once' --html inspect.html\n"
      "Run glass COMMAND --help for the flags of a command.");
  for (const glass::cli::CommandAdder add : kCommands) add(app);
}

/// The command argv[1] names, or nullptr when argv[1] is a flag (or absent). An unknown word is
/// an error here ("did you mean"), which CLI11 would report as a missing subcommand: `message`
/// gets it.
CLI::App* command_named(CLI::App& app, int argc, char** argv, std::string& message) {
  if (argc < 2 || argv[1][0] == '-') return nullptr;
  std::vector<std::string> names;
  CLI::App* command = nullptr;
  for (CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
    if (sub->get_name() == argv[1]) command = sub;
  }
  if (command != nullptr) return command;
  const std::optional<std::string> guess = glass::cli::nearest(argv[1], names);
  std::string list;
  for (const std::string& name : names) list += (list.empty() ? "" : ", ") + name;
  message =
      std::string("unknown command '") + argv[1] + "'" +
      (guess ? "; did you mean '" + *guess + "'? The commands are: " : "; the commands are: ") +
      list + "\nRun glass --help for what each does.";
  return nullptr;
}

/// Prints "error: <message>" and returns `code`.
int refuse(const std::string& message, int code) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return code;
}

/// The answer to a command line CLI11 refused, in the command's words where they say more:
/// a misspelt flag, a missing option (with the flag an argument probably lacks), an option given
/// twice; else CLI11's own message (also --help and --version). Returns the exit code.
int answer_parse_error(CLI::App& app, const CLI::App* command, const CLI::ParseError& e, int argc,
                       char** argv) {
  using namespace glass::cli;
  const std::string flag = command ? unknown_flag(*command, argc, argv, 2) : "";
  std::string m;
  if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr)
    m = !flag.empty() ? unknown_flag_message(*command, flag)
        : command     ? missing_option_message(*command, argc, argv, 2)
                      : "";
  else if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr)
    m = !flag.empty() ? unknown_flag_message(*command, flag) : "";
  else if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr && command != nullptr)
    m = repeated_option_message(*command, argc, argv, 2);
  if (!m.empty()) return refuse(m, e.get_exit_code());
  const int code = app.exit(e);
  return code != 0 ? code : stdout_error();
}

}  // namespace

int main(int argc, char** argv) {
  glass::blas_core::choose_at_start(argv);  // may start the program again (blas_core.hpp)
  glass::tune_malloc_for_training();
  CLI::App app{
      "glass: a glass-box LLaMA-style language model that reads characters (or BPE tokens,\n"
      "--tokenizer bpe). Train it on a text file, sample from it, look inside it.",
      "glass"};
  add_commands(app);

  // No arguments at all: the help, as a question ("what can this do?"), not an error.
  if (argc == 1) {
    std::cout << app.help();
    return stdout_error();
  }
  // llama.cpp's GPU offload, before the parser (which would read -ngl as -n gl).
  if (const std::string gpu = glass::cli::gpu_flag_message(argc, argv); !gpu.empty())
    return refuse(gpu, 1);
  std::string unknown;
  CLI::App* command = command_named(app, argc, argv, unknown);
  if (!unknown.empty()) return refuse(unknown, 1);
  // A long flag with one dash ("-temp"), before CLI11 reads it as a short one ("-t emp").
  if (command != nullptr) {
    if (const std::string m = glass::cli::single_dash_word_message(*command, argc, argv, 2);
        !m.empty())
      return refuse(m, static_cast<int>(CLI::ExitCodes::ExtrasError));
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return answer_parse_error(app, command, e, argc, argv);
  } catch (const std::bad_alloc&) {
    return refuse(
        "out of memory: the model, the batch or the input is too large for this machine (try a "
        "smaller --batch-size, --context or model)",
        1);
  } catch (const std::exception& e) {
    return refuse(e.what(), 1);
  }
  return stdout_error();
}
