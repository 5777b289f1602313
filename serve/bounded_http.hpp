#pragma once
// An HTTP server (cpp-httplib's routing and answers) whose requests are read whole, within
// limits, before a worker thread sees them: the defence of `glass serve` against slow or
// oversized requests.
//
// cpp-httplib gives each connection a worker thread that reads the request with a timeout per
// read, so a client sending one header line a second (slowloris) holds a worker for as long as
// it likes, and a body sent with `Transfer-Encoding: chunked` is read whole whatever its size.
// Here one reception thread reads every connection's request (poll(2), non-blocking) and
//   - gives the whole request (head and body) a deadline: past it, 408 and the connection closed;
//   - caps the connections still sending their request: past the cap the oldest of them, the
//     slowest, is answered 408 and closed, so a new request is always read; room is made after
//     the bytes that arrived are read, so a flood of silent connections that came in after a
//     request cannot push it out;
//   - bounds the head (431) and the body, whether sent with Content-Length or chunked (413 as
//     soon as the declared length or the chunks read so far pass the limit, without reading on);
// and only a complete request goes to one of the worker threads, which answers it (one request
// per connection: every answer says `Connection: close`).

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

namespace glass {

/// The limits of BoundedHttpServer.
struct RequestLimits {
  std::size_t max_head_bytes = 16 * 1024;  ///< request line and headers; more answers 431
  std::size_t max_body_bytes = 64 * 1024;  ///< body after chunked decoding; more answers 413
  double deadline_seconds = 10;  ///< to send the whole request, from the connection; then 408
  std::size_t max_reading =
      32;  ///< connections still sending their request; past it the oldest gets 408
  std::size_t max_queued = 64;  ///< complete requests waiting for or in a worker; past it 503
  std::size_t workers = 16;     ///< threads answering complete requests
};

/// What a request's bytes read so far amount to (see examine_request).
struct RequestScan {
  enum class State { Incomplete, Complete, Refused } state = State::Incomplete;
  int status = 0;       ///< the HTTP status when Refused
  std::string message;  ///< why, when Refused
  std::size_t end = 0;  ///< when Complete: the request's length in bytes (what follows is not read)
};

/// The request read so far from one connection, and where its parse stands (used by the
/// reception thread; public so that the parser can be tested on its own).
struct PartialRequest {
  std::string bytes;           ///< as received (Expect headers taken out once the head is whole)
  std::size_t body_start = 0;  ///< 0 until the head is whole
  bool chunked = false;
  bool expect_continue = false;  ///< the client waits for "100 Continue" before it sends the body
  std::size_t content_length = 0;
  // The chunked body's parse: the next byte to look at, the decoded size so far, the phase.
  std::size_t cursor = 0, decoded = 0, chunk_left = 0;
  enum class Phase { Size, Data, Trailers } phase = Phase::Size;
};

/// Looks at `r.bytes` (call again as more arrive): Complete with the request's length, Refused
/// with 400 (malformed framing), 413 (body over `limits.max_body_bytes`), 431 (head over
/// `limits.max_head_bytes`) or 501 (a transfer coding other than chunked), else Incomplete.
/// Content-Length beside chunked, or two different Content-Lengths, are refused (400): the two
/// readings of such a request are how requests are smuggled (RFC 9112, section 6.3).
RequestScan examine_request(PartialRequest& r, const RequestLimits& limits);

/// cpp-httplib's server with the reception above. Use bind_to_port/bind_to_any_port and
/// listen_after_bind as usual; shutdown() after stop() closes the connections being read and
/// joins the workers.
class BoundedHttpServer : public httplib::Server {
 public:
  explicit BoundedHttpServer(RequestLimits limits);
  ~BoundedHttpServer() override;
  BoundedHttpServer(const BoundedHttpServer&) = delete;
  BoundedHttpServer& operator=(const BoundedHttpServer&) = delete;

  /// Closes every connection still being read and joins the reception and worker threads (the
  /// answers being written end at their next write). Call after stop(); safe to call twice.
  void shutdown();

 private:
  bool process_and_close_socket(socket_t sock) override;  // on the accept thread: hand it over
  void reception_loop();
  void hand_over(int fd, std::string request);  // a complete request to a worker
  void answer(int fd, std::string request);     // on a worker thread

  RequestLimits limits_;
  std::mutex incoming_mutex_;
  std::vector<int> incoming_;  // accepted, not yet seen by the reception thread
  int wake_[2] = {-1, -1};     // a pipe: a byte wakes the reception thread
  std::atomic<bool> closing_{false};
  std::atomic<std::size_t> queued_{0};
  std::unique_ptr<httplib::ThreadPool> workers_;
  std::thread reception_;
};

}  // namespace glass
