// The server of `glass serve`: construction (checking the options, loading the checkpoint),
// binding and stopping, the rules a request must pass before any route (refusal), and the model
// served. The routes are in routes.cpp, routes_model.cpp and routes_run.cpp; watching the run
// directory in evaluations.cpp. See server.hpp.

#include "serve/server.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <httplib.h>

#include "checkpoint/checkpoint.hpp"
#include "checkpoint/run_dir.hpp"
#include "serve/bounded_http.hpp"
#include "serve/requests.hpp"

namespace glass {

namespace fs = std::filesystem;
using serve_api::lower_case;
using serve_api::NoModel;

bool is_loopback_host(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

Server::Server(ServeOptions options)
    : options_(std::move(options)),
      step_log_((fs::path(options_.checkpoint) / "steps.csv").string()) {
  std::error_code ec;
  if (!fs::is_directory(options_.checkpoint, ec))
    throw ServeError("checkpoint directory '" + options_.checkpoint +
                     "' does not exist (train one with: glass train --out DIR)");
  if (options_.port < 0 || options_.port > 65535)
    throw ServeError(
        fmt::format("port {} is out of range (1 to 65535, or 0 for any free port)", options_.port));
  std::string error;
  if (!load_if_new(checkpoint_files_dir(options_.checkpoint), &error) &&
      holds_checkpoint(options_.checkpoint))
    throw CheckpointError(error);
}

Server::~Server() { stop(); }

std::string Server::refusal(const std::string& host, const std::string& method,
                            const std::string& content_type, const std::string& origin,
                            int& status) const {
  // The Host header: a DNS-rebinding page sends its own name there, whatever address it reached.
  std::vector<std::string> names = {"127.0.0.1", "localhost", "[::1]"};
  auto add = [&](const std::string& name) {
    if (name.empty()) return;
    names.push_back(name.find(':') != std::string::npos && name.front() != '[' ? "[" + name + "]"
                                                                               : name);
  };
  add(options_.host);
  for (const std::string& name : options_.allowed_hosts) add(name);
  const std::string given = lower_case(host);
  bool known = false;
  std::string list;
  for (const std::string& name : names) {
    const std::string with_port = lower_case(name) + ":" + std::to_string(port_);
    known = known || given == with_port || (port_ == 80 && given == lower_case(name));
    if (list.find(name + ":") == std::string::npos)
      list += (list.empty() ? "" : ", ") + name + ":" + std::to_string(port_);
  }
  if (!known) {
    status = 421;
    return fmt::format(
        "this server answers requests addressed to {} only, not to Host '{}' (a page of another site "
        "reaching it by DNS rebinding sends its own name); to use another name, start it with "
        "--allow-host NAME",
        list, host);
  }
  if (method != "POST") return "";
  // A POST computes: only this server's own page (same origin) or a program (no Origin) may ask.
  if (!origin.empty() && lower_case(origin) != "http://" + given) {
    status = 403;
    return fmt::format(
        "a POST is accepted from this server's own page (Origin http://{}) or from a "
        "program that sends no Origin, not from Origin '{}'",
        host, origin);
  }
  const std::string media = lower_case(content_type.substr(0, content_type.find(';')));
  const std::size_t a = media.find_first_not_of(" \t"), b = media.find_last_not_of(" \t");
  if (a == std::string::npos || media.substr(a, b - a + 1) != "application/json") {
    status = 415;
    return fmt::format("a POST body is JSON sent with Content-Type: application/json (got '{}')",
                       content_type);
  }
  return "";
}

std::shared_ptr<const Checkpoint> Server::model() const {
  std::lock_guard lock(state_mutex_);
  if (!model_) throw NoModel(status_.empty() ? "no model loaded yet" : status_);
  return model_;
}

std::string Server::status() const {
  std::lock_guard lock(state_mutex_);
  return status_;
}

std::string Server::url() const {
  const bool v6 = options_.host.find(':') != std::string::npos;
  return fmt::format("http://{}{}{}:{}/", v6 ? "[" : "", options_.host, v6 ? "]" : "", port_);
}

int Server::start() {
  // Requests are read whole, within a deadline and size limits, by one reception thread before
  // one of 16 worker threads answers them (enough for a page's polling, a streamed sample and a
  // few scripts at once): a slow or oversized request never holds a worker (bounded_http.hpp).
  RequestLimits limits;
  limits.max_body_bytes = options_.max_body_bytes;
  limits.deadline_seconds = options_.request_seconds;
  limits.max_reading = options_.max_reading;
  limits.workers = 16;
  http_ = std::make_unique<BoundedHttpServer>(limits);
  http_->set_payload_max_length(options_.max_body_bytes);
  http_->set_read_timeout(5, 0);
  http_->set_write_timeout(5, 0);
  http_->set_default_headers(
      {{"X-Content-Type-Options", "nosniff"}, {"Cache-Control", "no-store"}});
  // SO_REUSEADDR (a restarted server may bind at once) but not httplib's default SO_REUSEPORT,
  // with which a second server on the same port would silently share its connections.
  // The socket is kept to widen its queue of connections once bound (below).
  auto listening = std::make_shared<socket_t>(-1);
  http_->set_socket_options([listening](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    *listening = sock;
  });
  add_routes();
  const std::string& host = options_.host;
  errno = 0;
  if (options_.port == 0) {
    port_ = http_->bind_to_any_port(host);
  } else {
    port_ = http_->bind_to_port(host, options_.port) ? options_.port : -1;
  }
  if (port_ <= 0) {
    const int err = errno;
    http_.reset();
    throw ServeError(fmt::format(
        "cannot listen on {}:{}{}{}: the port is in use by another program, or the address is not "
        "one of this machine's; choose another with --port (or --host)",
        host, options_.port, err != 0 ? " (" : "",
        err != 0 ? std::string(std::strerror(err)) + ")" : ""));
  }
  // cpp-httplib listens with a queue of 5 connections not yet accepted. A burst of clients
  // overflows it whenever the accepting thread is a moment late (a loaded machine): the kernel
  // then drops handshakes, and one completed by a SYN cookie while the queue is still full is
  // reset before the server ever sees it (the client reads "connection reset" instead of an
  // answer). listen() again on the bound socket sets the queue to the system's maximum.
  if (*listening >= 0) ::listen(*listening, SOMAXCONN);
  listen_thread_ = std::thread([this] { http_->listen_after_bind(); });
  // stop() only reaches a server that is already listening: wait until it is (a moment).
  for (int i = 0; i < 5000 && !http_->is_running(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  watch_thread_ = std::thread([this] { watch_loop(); });
  return port_;
}

void Server::stop() {
  {
    std::lock_guard lock(stop_mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (http_) http_->stop();
  if (listen_thread_.joinable()) listen_thread_.join();
  if (http_) http_->shutdown();
  if (watch_thread_.joinable()) watch_thread_.join();
}

}  // namespace glass
