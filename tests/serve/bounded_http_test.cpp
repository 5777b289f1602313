// BoundedHttpServer (serve/bounded_http.hpp) on its own, with one route: connections that
// connect and send nothing hold no worker, so a real request is answered at once whatever
// their number; each of them is answered 408 and closed (evicted to make room, or at the
// request deadline).

#include "serve/bounded_http.hpp"

#include <unistd.h>

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

}  // namespace
