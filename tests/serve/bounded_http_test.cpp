// BoundedHttpServer (serve/bounded_http.hpp) on its own, with one route: connections that
// connect and send nothing hold no worker, so a real request is answered at once whatever
// their number; each of them is answered 408 and closed (evicted to make room, or at the
// request deadline).

#include "serve/bounded_http.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <httplib.h>

#include "raw_http.hpp"

namespace {

/// Listens on a thread; stops and joins it on the way out, whether the test passed or not.
struct Listening {
  explicit Listening(glass::BoundedHttpServer& s)
      : server(s), thread([&s] { s.listen_after_bind(); }) {}
  ~Listening() {
    server.stop();
    thread.join();
    server.shutdown();
  }
  glass::BoundedHttpServer& server;
  std::thread thread;
};

TEST(BoundedHttpServer, IdleConnectionsNeverLockOutARealRequest) {
  glass::RequestLimits limits;
  limits.deadline_seconds = 6;  // what a request queued behind the idle ones would wait for
  glass::BoundedHttpServer server(limits);
  server.Get("/ping", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("pong", "text/plain");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  const Listening listening(server);
  for (int i = 0; i < 5000 && !server.is_running(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(server.is_running());

  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(5, 0);
  client.set_read_timeout(30, 0);
  // Two floods of 80 connections that send nothing: more than the 16 workers and the 32
  // connections that may be sending at once. After each, a real request is answered long
  // before the 6 s deadline (the bound is loose: this is no speed measurement).
  std::vector<int> idle;
  for (int flood = 0; flood < 2; ++flood) {
    for (int i = 0; i < 80; ++i) {
      idle.push_back(glass_test::connect_local(port));  // and sends nothing
      ASSERT_GE(idle.back(), 0);
    }
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = client.Get("/ping");
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_TRUE(r) << httplib::to_string(r.error());
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "pong");
    EXPECT_LT(seconds, 3.0) << "flood " << flood;
  }
  // Every idle connection was answered 408 and closed.
  int timed_out = 0;
  for (int fd : idle) {
    timed_out += glass_test::status_line(fd).rfind("HTTP/1.1 408", 0) == 0 ? 1 : 0;
    close(fd);
  }
  EXPECT_EQ(timed_out, 160);
}

/// Everything the server sends on `fd` until it closes the connection (or 10 s pass).
std::string whole_reply(int fd) {
  std::string reply;
  char buf[512];
  for (ssize_t n; (n = recv(fd, buf, sizeof(buf), 0)) > 0;)
    reply.append(buf, static_cast<std::size_t>(n));
  return reply;
}

TEST(BoundedHttpServer, AFullQueueIsTheDesignedBusyAnswer503WithRetryAfter) {
  glass::RequestLimits limits;
  limits.workers = 1;
  limits.max_queued = 1;  // one request in its worker fills the queue
  glass::BoundedHttpServer server(limits);
  std::atomic<bool> release{false};
  std::atomic<int> entered{0};
  server.Get("/slow", [&](const httplib::Request&, httplib::Response& res) {
    ++entered;
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    res.set_content("done", "text/plain");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  const Listening listening(server);
  const std::string request = "GET /slow HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  const int first = glass_test::connect_local(port);
  ASSERT_GE(first, 0);
  ASSERT_EQ(send(first, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
  for (int i = 0; i < 10000 && entered == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(entered, 1);
  const int second = glass_test::connect_local(port);
  ASSERT_GE(second, 0);
  ASSERT_EQ(send(second, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
  const std::string busy = whole_reply(second);
  close(second);
  EXPECT_EQ(busy.rfind("HTTP/1.1 503 Service Unavailable\r\n", 0), 0u) << busy;
  EXPECT_NE(busy.find("\r\nRetry-After: 1\r\n"), std::string::npos) << busy;
  EXPECT_NE(busy.find("the server is busy"), std::string::npos) << busy;
  release = true;
  EXPECT_EQ(glass_test::status_line(first).rfind("HTTP/1.1 200", 0), 0u);
  close(first);
}

}  // namespace
