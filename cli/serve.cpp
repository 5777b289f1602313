// `glass serve`: the model in the browser, live (serve/server.hpp does the work).
//
//   glass serve -m/--checkpoint DIR [--port 8080] [--host 127.0.0.1] [--allow-host NAME]...
//               [--probe TEXT] [--data FILE] [-t/--threads N]

#include "cli/serve.hpp"

#include <chrono>
#include <csignal>
#include <iostream>
#include <thread>

#include <fmt/format.h>

#include "data/text.hpp"
#include "cli/commands.hpp"
#include "cli/threads.hpp"
#include "cli/validators.hpp"
#include "checkpoint/checkpoint.hpp"

namespace glass::cli {

namespace {

volatile std::sig_atomic_t g_serve_stop = 0;

extern "C" void on_serve_signal(int signo) { g_serve_stop = signo; }

}  // namespace

std::unique_ptr<Server> start_server(const ServeOptions& options, std::ostream& out) {
  try {
    utf8_to_u32(options.probe);
  } catch (const Utf8Error& e) {
    throw CommandError(std::string("--probe is not valid UTF-8: ") + e.what());
  }
  std::unique_ptr<Server> server;
  try {
    // A checkpoint that cannot be read yet is the server's to report (it may watch a run that
    // has not saved).
    server = std::make_unique<Server>(options);
    server->start();
  } catch (const ServeError& e) {
    throw CommandError(e.what());
  } catch (const CheckpointError& e) {
    throw CommandError("cannot load checkpoint '" + options.checkpoint + "': " + e.what());
  }
  if (!is_loopback_host(options.host))
    std::cerr
        << "warning: serving on " << options.host
        << ", not only this machine: anyone who can reach it can use the model and read its "
           "training log (the default --host 127.0.0.1 keeps it private). Browsers must name it "
           "as 127.0.0.1, localhost, [::1], "
        << options.host << " or a name given with --allow-host\n";
  if (!server->status().empty()) std::cerr << "note: " << server->status() << "\n";
  out << "serving " << options.checkpoint << " at " << server->url() << " (Ctrl-C to stop)"
      << std::endl;
  return server;
}

void serve_until_signal(Server& server, std::ostream& out) {
  g_serve_stop = 0;
  auto previous_int = std::signal(SIGINT, on_serve_signal);
  auto previous_term = std::signal(SIGTERM, on_serve_signal);
  while (g_serve_stop == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::signal(SIGINT, previous_int);
  std::signal(SIGTERM, previous_term);
  server.stop();
  out << "\nstopped serving (" << (g_serve_stop == SIGINT ? "Ctrl-C" : "SIGTERM") << ")"
      << std::endl;
}

void add_serve_command(CLI::App& app) {
  auto options = std::make_shared<ServeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "Show a model in the browser, live: type a prompt and see every layer's attention and the\n"
      "next-token probabilities, sample with a temperature, and, pointed at a run directory\n"
      "where glass train is running, watch the loss fall and the attention change at each save.");
  cmd->add_option("-m,--checkpoint", options->checkpoint,
                  "checkpoint or run directory written by glass train (watched for new saves)")
      ->required();
  cmd->add_option("--port", options->port, "TCP port (0 = any free port)")
      ->check(integer_in(0, 65535, "an integer from 0 to 65535"))
      ->capture_default_str();
  cmd->add_option("--host", options->host,
                  "address to listen on; anything but 127.0.0.1 lets other machines in")
      ->capture_default_str();
  cmd->add_option(
      "--allow-host", options->allowed_hosts,
      "another name or address (repeatable) by which browsers may reach the server, e.g. "
      "this machine's name on the network; requests naming any other Host are refused (421)");
  cmd->add_option(
      "--probe", options->probe,
      "prompt whose attention is kept at every save (default: the start of the training text)");
  cmd->add_option("--data", options->data_path,
                  "the training text (its start is the default probe)")
      ->check(CLI::ExistingFile);
  auto threads = std::make_shared<int>(0);
  glass::cli::add_threads_option(cmd, *threads);
  cmd->footer(
      "Examples:\n"
      "  glass serve --checkpoint runs/domcasmurro          then open http://127.0.0.1:8080/\n"
      "  glass serve -m runs/domcasmurro -t 1 --port 0      one thread, any free port\n"
      "  glass train --serve                                 train and watch it in the browser\n"
      "See docs/en/cli.md (Live in the browser: glass serve).");
  cmd->callback([options, threads] {
    apply_threads(*threads);  // the forward passes of /api/inspect, /api/sample and /api/next
    std::unique_ptr<Server> server = start_server(*options, std::cout);
    serve_until_signal(*server, std::cout);
  });
}

}  // namespace glass::cli
