// Reading requests whole, within limits, before a worker answers them. See bounded_http.hpp.

#include "serve/bounded_http.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace glass {

namespace {

using Clock = std::chrono::steady_clock;

/// The longest chunk-size line (hex digits and extensions) or trailer line accepted.
constexpr std::size_t kMaxChunkLine = 1024;

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  const std::size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

RequestScan refused(int status, std::string message) {
  RequestScan s;
  s.state = RequestScan::State::Refused;
  s.status = status;
  s.message = std::move(message);
  return s;
}

/// Parses the head (request line and headers) once it is whole: framing headers, Expect.
/// Returns a Refused scan or an Incomplete one (go on with the body).
RequestScan parse_head(PartialRequest& r, std::size_t head_end, const RequestLimits& limits) {
  bool have_length = false, have_coding = false;
  std::uint64_t length = 0;
  std::string kept = r.bytes.substr(0, r.bytes.find("\r\n") + 2);  // the request line
  std::size_t pos = kept.size();
  while (pos < head_end) {
    const std::size_t eol = r.bytes.find("\r\n", pos);
    const std::string line = r.bytes.substr(pos, eol - pos);
    pos = eol + 2;
    const std::size_t colon = line.find(':');
    const std::string name = lower(trim(line.substr(0, colon)));
    const std::string value = colon == std::string::npos ? "" : trim(line.substr(colon + 1));
    if (name == "expect") {  // answered here: the worker must not answer "100 Continue" again
      r.expect_continue = lower(value) == "100-continue";
      continue;
    }
    kept += line + "\r\n";
    if (name == "transfer-encoding") {
      if (lower(value) != "chunked")
        return refused(501, "the only transfer coding accepted is chunked (got '" + value + "')");
      have_coding = true;
    } else if (name == "content-length") {
      std::uint64_t v = 0;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (value.empty() || ec != std::errc() || end != value.data() + value.size())
        return refused(400, "Content-Length must be a decimal integer (got '" + value + "')");
      if (have_length && v != length) return refused(400, "two different Content-Length headers");
      have_length = true;
      length = v;
    }
  }
  if (have_length && have_coding)
    return refused(400, "Content-Length and Transfer-Encoding: chunked together are ambiguous");
  if (have_length && length > limits.max_body_bytes)
    return refused(413, fmt::format("the request body is too large: {} bytes; the limit is {}",
                                    length, limits.max_body_bytes));
  kept += "\r\n";
  r.bytes = kept + r.bytes.substr(head_end + 4);
  r.body_start = kept.size();
  r.cursor = r.body_start;
  r.chunked = have_coding;
  r.content_length = static_cast<std::size_t>(length);
  return {};
}

/// The position of the "\r\n" ending the line at `from`, or npos; Refused (400) through
/// `scan` when the line is longer than kMaxChunkLine.
std::size_t line_end(const PartialRequest& r, std::size_t from, RequestScan& scan) {
  const std::size_t eol = r.bytes.find("\r\n", from);
  const std::size_t len = (eol == std::string::npos ? r.bytes.size() : eol) - from;
  if (len > kMaxChunkLine) scan = refused(400, "a chunk-size or trailer line is too long");
  return eol;
}

}  // namespace

RequestScan examine_request(PartialRequest& r, const RequestLimits& limits) {
  if (r.body_start == 0) {
    const std::size_t head_end = r.bytes.find("\r\n\r\n");
    if (head_end == std::string::npos || head_end + 4 > limits.max_head_bytes) {
      if (r.bytes.size() > limits.max_head_bytes || (head_end != std::string::npos))
        return refused(431, fmt::format("the request line and headers are longer than {} bytes",
                                        limits.max_head_bytes));
      return {};
    }
    const RequestScan head = parse_head(r, head_end, limits);
    if (head.state != RequestScan::State::Incomplete) return head;
  }
  if (!r.chunked) {
    if (r.bytes.size() < r.body_start + r.content_length) return {};
    RequestScan done;
    done.state = RequestScan::State::Complete;
    done.end = r.body_start + r.content_length;
    return done;
  }
  // Chunked (RFC 9112, section 7.1): size line, data and CRLF, ... a last chunk of size 0, trailer
  // lines, an empty line. Each complete element is looked at once (the cursor moves past it).
  RequestScan scan;
  while (scan.state == RequestScan::State::Incomplete) {
    // Framing (size lines with extensions, trailers) may not make the bytes held much larger
    // than the body they carry.
    if (r.cursor - r.body_start > 2 * limits.max_body_bytes + limits.max_head_bytes)
      return refused(413,
                     fmt::format("the chunked request body (with its framing) is larger than the "
                                 "limit of {} bytes",
                                 limits.max_body_bytes));
    if (r.phase == PartialRequest::Phase::Size) {
      const std::size_t eol = line_end(r, r.cursor, scan);
      if (eol == std::string::npos || scan.state != RequestScan::State::Incomplete) return scan;
      std::string digits = r.bytes.substr(r.cursor, eol - r.cursor);
      digits = trim(digits.substr(0, digits.find(';')));
      std::uint64_t size = 0;
      const auto [end, ec] =
          std::from_chars(digits.data(), digits.data() + digits.size(), size, 16);
      if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size())
        return refused(400, "a chunk size is not a hexadecimal number");
      r.cursor = eol + 2;
      if (size == 0) {
        r.phase = PartialRequest::Phase::Trailers;
        continue;
      }
      if (size > limits.max_body_bytes - r.decoded)
        return refused(413,
                       fmt::format("the chunked request body is larger than the limit of {} bytes",
                                   limits.max_body_bytes));
      r.decoded += static_cast<std::size_t>(size);
      r.chunk_left = static_cast<std::size_t>(size);
      r.phase = PartialRequest::Phase::Data;
    } else if (r.phase == PartialRequest::Phase::Data) {
      if (r.bytes.size() < r.cursor + r.chunk_left + 2) return scan;
      if (r.bytes.compare(r.cursor + r.chunk_left, 2, "\r\n") != 0)
        return refused(400, "a chunk's data is not followed by CRLF");
      r.cursor += r.chunk_left + 2;
      r.phase = PartialRequest::Phase::Size;
    } else {  // trailer lines up to an empty one
      const std::size_t eol = line_end(r, r.cursor, scan);
      if (eol == std::string::npos || scan.state != RequestScan::State::Incomplete) return scan;
      const bool last = eol == r.cursor;
      r.cursor = eol + 2;
      if (last) {
        scan.state = RequestScan::State::Complete;
        scan.end = r.cursor;
      }
    }
  }
  return scan;
}

namespace {

/// httplib's accept loop hands each connection to a task queue; this one runs the task at once
/// (on the accept thread): BoundedHttpServer::process_and_close_socket only passes the socket on.
class InlineQueue : public httplib::TaskQueue {
 public:
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override {}
};

void set_blocking(int fd, bool blocking) {
  const int flags = fcntl(fd, F_GETFL, 0);
  if (flags >= 0) fcntl(fd, F_SETFL, blocking ? (flags & ~O_NONBLOCK) : (flags | O_NONBLOCK));
}

/// The reason phrase of the statuses the reception answers with.
const char* reason(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 408:
      return "Request Timeout";
    case 413:
      return "Payload Too Large";
    case 431:
      return "Request Header Fields Too Large";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    default:
      return "Error";
  }
}

/// Best effort, without blocking: an answer to a request refused before a worker saw it.
void send_refusal(int fd, int status, const std::string& message) {
  const std::string body = nlohmann::json{{"error", message}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
  // 503 is the designed answer of a full queue (RequestLimits::max_queued): a client may try
  // again a second later (RFC 9110, section 10.2.3).
  const std::string text = fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: {}\r\n"
      "{}Connection: close\r\nCache-Control: no-store\r\nX-Content-Type-Options: "
      "nosniff\r\n\r\n{}",
      status, reason(status), body.size(), status == 503 ? "Retry-After: 1\r\n" : "", body);
  [[maybe_unused]] const ssize_t n =
      ::send(fd, text.data(), text.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

void address_of(int fd, bool peer, std::string& ip, int& port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  const int rc = peer ? getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len)
                      : getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  if (rc != 0) return;
  char text[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &a->sin_addr, text, sizeof(text));
    port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof(text));
    port = ntohs(a->sin6_port);
  }
  ip = text;
}

/// The stream httplib answers on: reads come from the request already read whole, writes go
/// to the socket (blocking, with the socket's send timeout).
class BufferedStream : public httplib::Stream {
 public:
  BufferedStream(int fd, std::string request) : fd_(fd), request_(std::move(request)) {}
  bool is_readable() const override { return at_ < request_.size(); }
  bool is_writable() const override {
    pollfd p{fd_, POLLOUT, 0};
    return ::poll(&p, 1, 5000) > 0 && (p.revents & (POLLERR | POLLHUP)) == 0;
  }
  ssize_t read(char* ptr, size_t size) override {
    const std::size_t n = std::min(size, request_.size() - at_);
    std::memcpy(ptr, request_.data() + at_, n);
    at_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    for (;;) {
      const ssize_t n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
      if (n >= 0 || errno != EINTR) return n;
    }
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    address_of(fd_, true, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    address_of(fd_, false, ip, port);
  }
  socket_t socket() const override { return fd_; }

 private:
  int fd_;
  std::string request_;
  std::size_t at_ = 0;
};

/// A connection whose request is being read, or one refused that is drained a moment before it
/// is closed (closing with unread bytes would reset the connection and lose the answer).
struct Reading {
  int fd = -1;
  Clock::time_point since;
  PartialRequest request;
  bool sent_continue = false;
  bool draining = false;
};

/// A refused client is drained until it closes, for at most 5 s: a loaded machine can take
/// over a second to send what the client had queued, and closing before would reset it.
constexpr auto kDrainTime = std::chrono::seconds(5);

/// Answers `status` with `message`, stops writing, and drains the connection from now on.
void refuse(Reading& c, int status, const std::string& message) {
  send_refusal(c.fd, status, message);
  ::shutdown(c.fd, SHUT_WR);
  c.draining = true;
  c.since = Clock::now();
}

/// Too many connections still sending their request: the oldest (the slowest) make room.
void make_room(std::vector<Reading>& conns, std::size_t max_reading) {
  std::size_t reading = 0;
  for (const Reading& c : conns) reading += c.draining ? 0 : 1;
  for (Reading& c : conns) {
    if (reading <= max_reading) break;
    if (c.draining) continue;
    refuse(c, 408,
           fmt::format("closed to make room: more than {} connections were sending their "
                       "request at once, and this one had taken longest",
                       max_reading));
    --reading;
  }
}

/// Refuses the requests past their deadline and closes the connections drained long enough,
/// and the draining ones beyond limits.max_reading (fd set to -1: see erase_closed).
void close_expired(std::vector<Reading>& conns, const RequestLimits& limits) {
  const auto deadline = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(limits.deadline_seconds));
  const Clock::time_point now = Clock::now();
  for (Reading& c : conns) {
    if (c.draining && now - c.since > kDrainTime) {
      ::close(c.fd);
      c.fd = -1;
    } else if (!c.draining && now - c.since > deadline) {
      refuse(c, 408,
             fmt::format("the request (its headers and body) must arrive within {:g} s",
                         limits.deadline_seconds));
    }
  }
  // Draining ones beyond the cap are closed at once.
  std::size_t draining = 0;
  for (Reading& c : conns)
    if (c.fd >= 0 && c.draining && ++draining > limits.max_reading) {
      ::close(c.fd);
      c.fd = -1;
    }
}

/// Forgets the connections closed or handed over (fd -1).
void erase_closed(std::vector<Reading>& conns) {
  conns.erase(std::remove_if(conns.begin(), conns.end(), [](const Reading& c) { return c.fd < 0; }),
              conns.end());
}

/// Waits up to 100 ms for bytes on the wake pipe (`wake`, emptied here) or any connection:
/// fds[0] is the pipe, fds[i + 1] conns[i]. False when poll(2) fails.
bool wait_for_bytes(const std::vector<Reading>& conns, int wake, std::vector<pollfd>& fds) {
  fds.assign(1, pollfd{wake, POLLIN, 0});
  for (const Reading& c : conns) fds.push_back(pollfd{c.fd, POLLIN, 0});
  if (::poll(fds.data(), fds.size(), 100) < 0 && errno != EINTR) return false;
  if (fds[0].revents != 0) {
    char sink[64];
    while (::read(wake, sink, sizeof(sink)) > 0) {}
  }
  return true;
}

/// Reads what connection `c` has sent: closes it when the client left, refuses a request
/// examine_request refuses, sends "100 Continue" once when the client waits for it. Returns
/// the request once it is complete (its bytes up to its end), the connection still open.
std::optional<std::string> receive(Reading& c, const RequestLimits& limits) {
  char buf[16 * 1024];
  const ssize_t n = ::recv(c.fd, buf, sizeof(buf), 0);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return std::nullopt;
  if (n <= 0) {  // the client left (or an error)
    ::close(c.fd);
    c.fd = -1;
    return std::nullopt;
  }
  if (c.draining) return std::nullopt;
  c.request.bytes.append(buf, static_cast<std::size_t>(n));
  const RequestScan scan = examine_request(c.request, limits);
  if (scan.state == RequestScan::State::Refused) {
    refuse(c, scan.status, scan.message);
  } else if (scan.state == RequestScan::State::Complete) {
    return c.request.bytes.substr(0, scan.end);
  } else if (c.request.expect_continue && !c.sent_continue && c.request.body_start > 0) {
    static const char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
    [[maybe_unused]] const ssize_t w =
        ::send(c.fd, kContinue, sizeof(kContinue) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    c.sent_continue = true;
  }
  return std::nullopt;
}

}  // namespace

BoundedHttpServer::BoundedHttpServer(RequestLimits limits) : limits_(limits) {
  new_task_queue = [] { return new InlineQueue; };
  if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) throw std::runtime_error("cannot create a pipe");
  workers_ = std::make_unique<httplib::ThreadPool>(limits_.workers);
  reception_ = std::thread([this] { reception_loop(); });
}

BoundedHttpServer::~BoundedHttpServer() {
  shutdown();
  ::close(wake_[0]);
  ::close(wake_[1]);
}

void BoundedHttpServer::shutdown() {
  if (closing_.exchange(true)) return;
  [[maybe_unused]] const ssize_t n = ::write(wake_[1], "x", 1);
  if (reception_.joinable()) reception_.join();
  workers_->shutdown();
}

bool BoundedHttpServer::process_and_close_socket(socket_t sock) {
  if (closing_) {
    ::close(sock);
    return false;
  }
  set_blocking(sock, false);
  {
    std::lock_guard lock(incoming_mutex_);
    incoming_.push_back(sock);
  }
  [[maybe_unused]] const ssize_t n = ::write(wake_[1], "x", 1);
  return true;
}

void BoundedHttpServer::reception_loop() {
  std::vector<Reading> conns;
  std::vector<pollfd> fds;
  while (!closing_) {
    {
      std::lock_guard lock(incoming_mutex_);
      for (int fd : incoming_) conns.push_back(Reading{fd, Clock::now(), {}, false, false});
      incoming_.clear();
    }
    close_expired(conns, limits_);
    erase_closed(conns);
    if (!wait_for_bytes(conns, wake_[0], fds)) break;
    for (std::size_t i = 0; i < conns.size(); ++i) {
      if (fds[i + 1].revents == 0) continue;
      Reading& c = conns[i];
      std::optional<std::string> request = receive(c, limits_);
      if (!request) continue;
      if (queued_ >= limits_.max_queued) {
        refuse(c, 503, "the server is busy: try again in a moment");
        continue;
      }
      hand_over(c.fd, std::move(*request));
      c.fd = -1;
    }
    // Room is made after reading, not before: a client whose request has arrived is served
    // even when a flood of silent connections came in after it (made before, the flood's
    // newer connections would have pushed it out as the oldest).
    erase_closed(conns);
    make_room(conns, limits_.max_reading);
    erase_closed(conns);
  }
  for (const Reading& c : conns) ::close(c.fd);
  std::lock_guard lock(incoming_mutex_);
  for (int fd : incoming_) ::close(fd);
  incoming_.clear();
}

void BoundedHttpServer::hand_over(int fd, std::string request) {
  ++queued_;
  workers_->enqueue(
      [this, fd, request = std::move(request)]() mutable { answer(fd, std::move(request)); });
}

void BoundedHttpServer::answer(int fd, std::string request) {
  set_blocking(fd, true);
  if (!closing_) {
    BufferedStream stream(fd, std::move(request));
    bool closed = true;
    process_request(stream, /*close_connection=*/true, closed, nullptr);
  }
  ::shutdown(fd, SHUT_RDWR);
  ::close(fd);
  --queued_;
}

}  // namespace glass
