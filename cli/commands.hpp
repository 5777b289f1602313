#pragma once
// The commands of the `glass` program, one file of this folder each (train.cpp, sample.cpp,
// ...). Each file defines its add_*_command, which adds the subcommand and its flags to the
// CLI11 app; main.cpp lists them, in the order of `glass --help`, in its command table.
// A subcommand's callback reports failure by throwing glass::cli::CommandError (or any
// std::exception): main prints "error: <message>" on stderr and exits with 1. To exit with
// another code (e.g. gradcheck FAIL = 1 with no message), throw CLI::RuntimeError(code).

#include <stdexcept>
#include <string>

#include <CLI/CLI.hpp>

namespace glass::cli {

/// Adds one subcommand (its flags, help and callback) to the app.
using CommandAdder = void (*)(CLI::App&);

void add_train_command(CLI::App& app);      ///< glass train (train.cpp)
void add_finetune_command(CLI::App& app);   ///< glass finetune (finetune.cpp)
void add_sample_command(CLI::App& app);     ///< glass sample (sample.cpp)
void add_eval_command(CLI::App& app);       ///< glass eval (eval.cpp)
void add_chat_command(CLI::App& app);       ///< glass chat (chat.cpp)
void add_inspect_command(CLI::App& app);    ///< glass inspect (inspect.cpp)
void add_export_command(CLI::App& app);     ///< glass export (export.cpp)
void add_serve_command(CLI::App& app);      ///< glass serve (serve.cpp)
void add_gradcheck_command(CLI::App& app);  ///< glass gradcheck (gradcheck.cpp)
void add_sae_command(CLI::App& app);        ///< glass sae (sae.cpp)

/// An error the user can fix (bad input); printed as "error: <what>".
struct CommandError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace glass::cli
