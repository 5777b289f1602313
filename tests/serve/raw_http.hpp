#pragma once
// Plain TCP connections to a local server, for the tests that speak HTTP byte by byte (slow,
// idle, malformed or oversized requests) where cpp-httplib's client would not.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>

namespace glass_test {

/// A TCP connection to 127.0.0.1:`port` whose reads wait at most 10 s; -1 when it cannot be
/// made (errno says why).
inline int connect_local(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int why = errno;
    if (fd >= 0) close(fd);
    errno = why;
    return -1;
  }
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

/// The first line of the server's reply on `fd` (its status line), or what came before the
/// server closed the connection or 10 s passed (connect_local's receive timeout).
inline std::string status_line(int fd) {
  std::string reply;
  char buf[256];
  while (reply.find("\r\n") == std::string::npos) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    reply.append(buf, static_cast<std::size_t>(n));
  }
  return reply.substr(0, reply.find("\r\n"));
}

}  // namespace glass_test
