#pragma once
// Running the server of `glass serve` from a command: `glass serve` itself and
// `glass train --serve`, which serves its own run directory while it trains (serve/).

#include <iosfwd>
#include <memory>
#include <string>

#include "serve/server.hpp"

namespace glass::cli {

/// Starts a server on `options` and prints its address on `out` (and a warning on stderr when
/// the host is not a loopback address). Throws CommandError when it cannot start (the port is
/// in use, the directory does not exist, the checkpoint is broken, the probe is not UTF-8).
std::unique_ptr<Server> start_server(const ServeOptions& options, std::ostream& out);

/// Serves until Ctrl-C (SIGINT) or SIGTERM, then stops the server cleanly and returns.
void serve_until_signal(Server& server, std::ostream& out);

}  // namespace glass::cli
