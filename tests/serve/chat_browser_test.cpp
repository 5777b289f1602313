// The chat panel of the live page (web/chat.js) in headless Chromium: on a chat checkpoint the
// page sends the message of #chat=TEXT and shows the user's line and the answer, which is the
// chat code's greedy answer (the panel's default temperature is 0); on a base model the panel
// is greyed out and says why. A screenshot goes to the build tree
// (build/serve-chat-browser/chat.png) for a human to look at.
//
// Chromium is required, as for tests/serve/lab_browser_test.cpp: without it the test FAILS;
// GLASS_SKIP_BROWSER=1 skips it explicitly, GLASS_CHROMIUM=/path overrides the binary.

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

#include <gtest/gtest.h>

#include "checkpoint/checkpoint.hpp"
#include "fixtures.hpp"
#include "sample/chat.hpp"
#include "sample/chat_fixtures.hpp"
#include "serve/server.hpp"
#include "test_paths.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;
using glass_test::quote;
using glass_test::read_file;

namespace {

int run(const std::string& cmd) {
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string find_chromium() {
  if (const char* env = std::getenv("GLASS_CHROMIUM")) return env;
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"})
    if (run(std::string("command -v ") + name + " > /dev/null 2>&1") == 0) return name;
  return "";
}

/// Headless, no network services, no proxy, a fresh profile (append its directory).
const std::string kFlags =
    " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --no-proxy-server"
    " --disable-background-networking --disable-component-update --disable-sync"
    " --disable-extensions --disable-dev-shm-usage --user-data-dir=";

/// `text` as the DOM writes an element's text (& < > escaped).
std::string dom_text(const std::string& text) {
  std::string out;
  for (char c : text)
    out += c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : std::string(1, c);
  return out;
}

/// A server on the checkpoint `dir`, on a free port.
std::unique_ptr<glass::Server> serve(const fs::path& dir) {
  glass::ServeOptions options;
  options.checkpoint = dir.string();
  options.port = 0;
  auto server = std::make_unique<glass::Server>(options);
  server->start();
  return server;
}

}  // namespace

TEST(ChatBrowser, ThePanelChatsWithAChatModelAndIsGreyForABaseModel) {
  const char* skip = std::getenv("GLASS_SKIP_BROWSER");
  if (skip && std::string(skip) == "1") GTEST_SKIP() << "GLASS_SKIP_BROWSER=1";
  const std::string chromium = find_chromium();
  ASSERT_FALSE(chromium.empty())
      << "Chromium is not installed, so the live page cannot be tested in a browser.\n"
         "Install it with: apt-get install chromium (scripts/install-deps.sh does), or set\n"
         "GLASS_SKIP_BROWSER=1 to skip this test explicitly.";
  const fs::path dir = fs::path(glass_test::binary_dir()) / "serve-chat-browser";
  fs::remove_all(dir);
  fs::create_directories(dir);
  glass_test::write_chat_checkpoint((dir / "chat").string(), 128, 7);
  glass_test::write_small_checkpoint((dir / "base").string(), 16, 3);
  auto dump = [&](const std::string& name, const std::string& url, const std::string& more) {
    const fs::path file = dir / (name + ".out");
    const int rc =
        run("timeout 120 " + chromium + kFlags + quote((dir / ("profile-" + name)).string()) +
            " --virtual-time-budget=20000 " + more + quote(url) + " > " + quote(file.string()) +
            " 2> " + quote((dir / (name + ".log")).string()));
    EXPECT_EQ(rc, 0) << read_file(dir / (name + ".log"));
    fs::remove_all(dir / ("profile-" + name));
    return read_file(file);
  };

  auto server = serve(dir / "chat");
  const std::string url =
      "http://127.0.0.1:" + std::to_string(server->port()) + "/#chat=inverta%20casa";
  const std::string dom = dump("chat", url, "--dump-dom ");
  // The chat code's greedy answer, at most the panel's 200 tokens.
  const glass::Checkpoint loaded = glass::load_checkpoint((dir / "chat").string());
  glass::ChatOptions options;
  options.sampling.temperature = 0;
  options.max_tokens = 200;
  const glass::ChatAnswer expected = glass::ChatSession(loaded, options).answer("inverta casa");
  EXPECT_NE(dom.find("data-chat=\"yes\""), std::string::npos);
  EXPECT_NE(dom.find("data-chat-answers=\"1\""), std::string::npos) << "one answer arrived";
  EXPECT_NE(dom.find("<span class=\"chat-text\">inverta casa</span>"), std::string::npos);
  EXPECT_NE(dom.find("<span class=\"chat-text\">" + dom_text(expected.text) + "</span>"),
            std::string::npos)
      << "the answer shown is the chat code's: " << expected.text;
  const std::string end = expected.end == glass::AnswerEnd::kEndOfTurn    ? "end_of_turn"
                          : expected.end == glass::AnswerEnd::kWindowFull ? "window_full"
                                                                          : "token_cap";
  EXPECT_NE(dom.find("data-chat-end=\"" + end + "\""), std::string::npos);

  const fs::path png = dir / "chat.png";
  dump("shot", url, "--screenshot=" + quote(png.string()) + " --window-size=1280,2400 ");
  EXPECT_GT(read_file(png).size(), 10000u) << "screenshot too small to show the page";
  std::cout << "screenshot: " << png.string() << "\n";
  server.reset();

  server = serve(dir / "base");
  const std::string base =
      dump("base", "http://127.0.0.1:" + std::to_string(server->port()) + "/#chat=to%20be",
           "--dump-dom ");
  EXPECT_NE(base.find("data-chat=\"no\""), std::string::npos);
  EXPECT_NE(base.find("id=\"chat-section\" class=\"disabled\""), std::string::npos);
  EXPECT_NE(base.find("this model has no chat tokens"), std::string::npos);
  EXPECT_EQ(base.find("data-chat-answers="), std::string::npos) << "nothing was sent";
}
