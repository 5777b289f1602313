#pragma once
// How subcommands join the `glass` program: each cli/<name>.cpp defines a function that
// adds its subcommand to the CLI11 app and registers it with a static CommandRegistration, e.g.
//
//   static void add_sample_command(CLI::App& app) { auto* cmd = app.add_subcommand(...); ... }
//   static glass::cli::CommandRegistration reg(30, &add_sample_command);
//
// `order` sets the order of the subcommands in `glass --help`.
// A subcommand's callback reports failure by throwing glass::cli::CommandError (or any
// std::exception): main prints "error: <message>" on stderr and exits with 1. To exit with
// another code (e.g. gradcheck FAIL = 1 with no message), throw CLI::RuntimeError(code).

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

namespace glass::cli {

using CommandAdder = void (*)(CLI::App&);

/// Subcommands registered so far, with their order keys.
std::vector<std::pair<int, CommandAdder>>& command_registry();

/// Registering a subcommand: construct one static instance per subcommand file.
struct CommandRegistration {
  CommandRegistration(int order, CommandAdder adder) { command_registry().emplace_back(order, adder); }
};

/// An error the user can fix (bad input); printed as "error: <what>".
struct CommandError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace glass::cli
