// `glass serve` and `glass train --serve` through the real binary: the live page in headless
// Chromium (a prompt typed into it, heatmap, line view, next-token bars and a streamed sample
// in the DOM it produced, and a screenshot in the build tree), a short training run whose log
// endpoint grows while it runs, Ctrl-C, a busy port, the --host warning.
//
// Chromium is required (scripts/install-deps.sh installs Debian's `chromium`): without it the
// browser test FAILS. Set GLASS_SKIP_BROWSER=1 to skip it explicitly. GLASS_CHROMIUM=/path
// overrides the browser binary. Every wait has a time limit, so no test can hang.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "fixtures.hpp"
#include "interp/interp.hpp"
#include "interp_fixtures.hpp"
#include "raw_http.hpp"
#include "test_util.hpp"
#include "checkpoint/checkpoint.hpp"
#include "data/bpe_tokenizer.hpp"
#include "data/text.hpp"
#include "sample/sampler.hpp"
#include "serve/server.hpp"
#include "test_paths.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;
using glass_test::quote;
using glass_test::read_file;

namespace {

/// `glass ARGS` running in the background, its stdout and stderr in files of `dir`. Killed
/// (SIGKILL) if still running when destroyed.
class Background {
 public:
  Background(const std::vector<std::string>& args, const fs::path& dir)
      : out_(dir / "stdout.txt"), err_(dir / "stderr.txt") {
    std::vector<std::string> argv = {glass_test::binary_dir("/glass")};
    argv.insert(argv.end(), args.begin(), args.end());
    pid_ = fork();
    if (pid_ == 0) {
      const int in = open("/dev/null", O_RDONLY);
      const int out = open(out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int err = open(err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(in, 0), dup2(out, 1), dup2(err, 2);
      std::vector<char*> c;
      for (auto& a : argv) c.push_back(a.data());
      c.push_back(nullptr);
      execv(c[0], c.data());
      _exit(127);
    }
  }
  ~Background() {
    if (running()) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  bool running() {
    if (exited_) return false;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      exited_ = true;
      code_ = WIFEXITED(status)     ? WEXITSTATUS(status)
              : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                    : -1;
    }
    return !exited_;
  }
  /// Sends `signo`, waits up to `seconds` for the exit; returns the exit code (-2: still running).
  int stop(int signo, int seconds = 60) {
    if (running()) kill(pid_, signo);
    for (int i = 0; i < seconds * 20 && running(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return running() ? -2 : code_;
  }
  /// The port of the "serving DIR at http://HOST:PORT/" line, waiting up to `seconds` for it; 0 if
  /// it never came (the process ended, or too slow).
  int port(int seconds = 120) {
    const std::regex line(R"(at http://[^ ]*:(\d+)/ \(Ctrl-C to stop\))");
    for (int i = 0; i < seconds * 20; ++i) {
      std::smatch m;
      const std::string text = out();
      if (std::regex_search(text, m, line)) return std::stoi(m[1]);
      if (!running()) return 0;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return 0;
  }
  std::string out() const { return read_file(out_); }
  pid_t pid() const { return pid_; }
  std::string err() const { return read_file(err_); }

 private:
  fs::path out_, err_;
  pid_t pid_ = -1;
  bool exited_ = false;
  int code_ = -1;
};

int run(const std::string& cmd) {
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++n;
  return n;
}

std::string find_chromium() {
  if (const char* env = std::getenv("GLASS_CHROMIUM")) return env;
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"})
    if (run(std::string("command -v ") + name + " > /dev/null 2>&1") == 0) return name;
  return "";
}

/// Headless, no network services, no proxy, a fresh profile (append its directory); as in
/// tests/cli/inspect_browser_test.cpp.
const std::string kFlags =
    " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --no-proxy-server"
    " --disable-background-networking --disable-component-update --disable-sync"
    " --disable-extensions --disable-dev-shm-usage --user-data-dir=";

TEST(ServeCli, ThePageInHeadlessChromiumAnswersATypedPrompt) {
  const char* skip = std::getenv("GLASS_SKIP_BROWSER");
  if (skip && std::string(skip) == "1") GTEST_SKIP() << "GLASS_SKIP_BROWSER=1";
  const std::string chromium = find_chromium();
  ASSERT_FALSE(chromium.empty())
      << "Chromium is not installed, so the page of glass serve cannot be tested in a browser.\n"
         "Install it with: apt-get install chromium (scripts/install-deps.sh does), or set\n"
         "GLASS_SKIP_BROWSER=1 to skip this test explicitly.";

  const fs::path dir = fs::path(glass_test::binary_dir()) / "serve-browser";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path checkpoint = dir / "ckpt";
  const glass::ModelConfig config =
      glass_test::write_small_checkpoint(checkpoint.string(), 32, 11, 0.3);
  // The same weights, recording step 0 (as the trainer's first save): the page must show it.
  const glass::Tokenizer tokenizer = glass::Tokenizer::from_text(glass_test::kSmallText);
  glass::save_model(checkpoint.string(), glass::Decoder(config, 11), tokenizer, "model.safetensors",
                    "", 0);
  glass_test::write_file(
      checkpoint / "log.csv",
      "step,lr,train_loss,val_loss,tokens_per_s,elapsed_s\n0,0.001,3.9,3.95,0,0\n"
      "50,0.001,3.1,3.2,900,1\n100,0.0009,2.6,2.8,900,2\n");
  Background server(
      {"serve", "--checkpoint", checkpoint.string(), "--port", "0", "--probe", "that is"}, dir);
  const int port = server.port();
  ASSERT_GT(port, 0) << server.out() << server.err();
  const std::string base = "http://127.0.0.1:" + std::to_string(port) + "/";

  auto dump = [&](const std::string& name, const std::string& hash) {
    const fs::path file = dir / (name + ".html");
    const int rc =
        run("timeout 120 " + chromium + kFlags + quote((dir / ("profile-" + name)).string()) +
            " --virtual-time-budget=20000 --dump-dom " + quote(base + hash) + " > " +
            quote(file.string()) + " 2> " + quote((dir / (name + ".log")).string()));
    EXPECT_EQ(rc, 0) << read_file(dir / (name + ".log"));
    fs::remove_all(dir / ("profile-" + name));
    return read_file(file);
  };

  // 1. A prompt typed into the box one character at a time: the heatmap of layer 1, head 2 and
  // the next-token bars are those of the whole prompt; greedy decoding puts all mass on one bar.
  const std::string prompt = "to be or";  // 8 characters
  const std::size_t n = prompt.size();
  const std::string dom =
      dump("typed", "#type=to%20be%20or&layer=1&head=2&temperature=0&generate=40");
  EXPECT_NE(dom.find("data-rendered=\"yes\""), std::string::npos)
      << "the page's script did not start";
  EXPECT_NE(dom.find("data-prompt=\"to be or\""), std::string::npos)
      << "the answer is for the whole typed prompt";
  EXPECT_NE(dom.find("id=\"attention-heatmap\""), std::string::npos);
  EXPECT_NE(dom.find("Attention: layer 1, head 2"), std::string::npos);
  const std::size_t at = dom.find("id=\"attention-heatmap\"");
  const std::string heatmap = dom.substr(at, dom.find("</table>", at) - at);
  EXPECT_EQ(count(heatmap, "class=\"hm-cell"), n * n);
  EXPECT_EQ(count(heatmap, "class=\"hm-cell masked\""), n * (n - 1) / 2);
  EXPECT_TRUE(
      std::regex_search(heatmap, std::regex(R"(data-i="0" data-j="0" data-value="1.0000")")));
  EXPECT_EQ(count(dom, "class=\"token\""), n) << "one token per character";
  EXPECT_EQ(count(dom, "class=\"next-bar\""), 1u) << "temperature 0: one character can be drawn";
  EXPECT_NE(dom.find("data-p=\"1.0000\""), std::string::npos);
  const std::size_t known = tokenizer.chars().size();
  EXPECT_NE(dom.find("1 of " + std::to_string(known) + " characters can be drawn"),
            std::string::npos);
  // The vocabulary in the words of glass train (vocabulary_words), and the step of the save,
  // 0 included (/api/info gives it as a number).
  EXPECT_NE(dom.find("vocabulary " + std::to_string(known + 1) + " (" + std::to_string(known) +
                     " characters + the unknown id 0)"),
            std::string::npos);
  EXPECT_NE(dom.find("(step 0)"), std::string::npos) << "the step of the save served";
  EXPECT_NE(dom.find("data-generated=\"1\""), std::string::npos) << "the streamed sample arrived";
  EXPECT_NE(dom.find("id=\"live-loss-svg\""), std::string::npos) << "the loss chart from log.csv";
  EXPECT_NE(dom.find("data-evaluations=\"1\""), std::string::npos)
      << "the probe's attention at the save";
  EXPECT_NE(dom.find("id=\"eval-attention\""), std::string::npos);

  // The streamed text is what /api/sample answers for the same request (greedy: seed-free).
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(30, 0);
  const auto r =
      client.Post("/api/sample", json{{"prompt", prompt}, {"temperature", 0}, {"n", 40}}.dump(),
                  "application/json");
  ASSERT_TRUE(r);
  std::string escaped = r->body;  // as the DOM writes text: & < > escaped
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"&", "&amp;"}, {"<", "&lt;"}, {">", "&gt;"}})
    for (std::size_t p = escaped.find(from); p != std::string::npos;
         p = escaped.find(from, p + to.size()))
      escaped.replace(p, from.size(), to);
  EXPECT_NE(dom.find("<b>to be or</b>" + escaped), std::string::npos)
      << "the generated text on the page";

  // 1b. Not greedy: at temperature 0.7 with top-k, top-p and the repetition penalty, the bars
  // are the probabilities of the library's sampler (generation_probs, the one glass sample and
  // /api/sample draw from), computed here without the server: the page has no sampler of its own.
  const std::string sampled =
      dump("sampled", "#prompt=to%20be%20or&temperature=0.7&top_k=5&top_p=0.9&repeat_penalty=1.3");
  EXPECT_NE(sampled.find("data-next-shown="), std::string::npos) << "the distribution arrived";
  const glass::Checkpoint loaded = glass::load_checkpoint(checkpoint.string());
  glass::SamplingOptions sampling;
  sampling.temperature = 0.7;
  sampling.top_k = 5;
  sampling.top_p = 0.9;
  sampling.repeat_penalty = 1.3;  // over the last 64 characters, the page's default
  const std::vector<std::int32_t> ids =
      loaded.tokenizer().chars()->encode(glass::utf8_to_u32(prompt));
  glass::NextTokenLogits next_logits(loaded.model(), config.context_length, sampling);
  const std::vector<double> probs = glass::generation_probs(next_logits(ids), sampling, ids);
  std::vector<std::pair<double, std::int32_t>> expected;  // drawable ids, most probable first
  for (std::size_t id = 0; id < probs.size(); ++id)
    if (probs[id] > 0) expected.emplace_back(-probs[id], static_cast<std::int32_t>(id));
  std::sort(expected.begin(), expected.end());
  ASSERT_GE(expected.size(), 2u) << "more than one character can be drawn";
  const std::regex bar_re(R"re(class="next-bar" data-char="([^"]*)" data-p="([0-9.]+)")re");
  std::vector<std::pair<std::string, std::string>> bars;
  for (auto it = std::sregex_iterator(sampled.begin(), sampled.end(), bar_re);
       it != std::sregex_iterator(); ++it)
    bars.emplace_back((*it)[1], (*it)[2]);
  ASSERT_EQ(bars.size(), std::min<std::size_t>(expected.size(), 10));
  for (std::size_t b = 0; b < bars.size(); ++b) {
    const auto [minus_p, id] = expected[b];
    EXPECT_EQ(bars[b].first, glass::char_to_utf8(loaded.tokenizer().chars()->char_of(id)))
        << "bar " << b;
    EXPECT_EQ(bars[b].second, fmt::format("{:.4f}", -minus_p)) << "bar " << b;
  }
  EXPECT_NE(sampled.find(std::to_string(expected.size()) + " of " + std::to_string(known) +
                         " characters can be drawn"),
            std::string::npos);

  // 2. The line view (BertViz-style) of all heads of layer 0: a line per weight >= 0.01.
  const std::string lines = dump("lines", "#prompt=to%20be%20or&layer=0&view=lines-layer");
  EXPECT_NE(lines.find("id=\"lines-svg\""), std::string::npos);
  const std::size_t drawn = count(lines, "class=\"attn-line\"");
  EXPECT_GE(drawn, 4 * n) << "each head's query i has a key with weight >= 1/(i+1)";
  EXPECT_LE(drawn, 4 * n * (n + 1) / 2) << "never a line to a future key";
  EXPECT_EQ(count(lines, "class=\"q\""), n);
  const std::string all = dump("lines-all", "#prompt=to%20be&view=lines-all");
  EXPECT_NE(all.find("id=\"lines-svg-1\""), std::string::npos) << "one picture per layer";

  // 3. A screenshot, for a human to judge the page.
  const fs::path png = dir / "serve.png";
  ASSERT_EQ(run("timeout 120 " + chromium + kFlags + quote((dir / "profile-shot").string()) +
                " --virtual-time-budget=20000 --screenshot=" + quote(png.string()) +
                " --window-size=1200,1600 --hide-scrollbars " +
                quote(base + "#type=to%20be%20or&layer=1&view=lines-layer") + " > " +
                quote((dir / "shot.log").string()) + " 2>&1"),
            0)
      << read_file(dir / "shot.log");
  const std::string image = read_file(png);
  ASSERT_GT(image.size(), 10000u) << "screenshot too small to show the page";
  EXPECT_EQ(image.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  fs::remove_all(dir / "profile-shot");
  std::cout << "screenshot: " << png.string() << "\n";

  EXPECT_EQ(server.stop(SIGINT), 0) << server.err();
  EXPECT_NE(server.out().find("stopped serving (Ctrl-C)"), std::string::npos) << server.out();
}

TEST(ServeCli, TrainWithServeShowsTheLogGrowingWhileItTrains) {
  const fs::path dir = glass_test::temp_dir("serve_train");
  std::string text;
  for (int i = 0; i < 200; ++i) text += "to be or not to be, that is the question. ";
  glass_test::write_file(dir / "text.txt", text);
  const fs::path run_dir = dir / "run";
  Background trainer({"train",
                      "--data",
                      (dir / "text.txt").string(),
                      "--out",
                      run_dir.string(),
                      "--iters",
                      "3000",
                      "--eval-every",
                      "100",
                      "--eval-iters",
                      "2",
                      "--batch-size",
                      "4",
                      "--context",
                      "16",
                      "--d-model",
                      "16",
                      "--n-layers",
                      "2",
                      "--n-heads",
                      "2",
                      "--n-kv-heads",
                      "1",
                      "--ffn-hidden",
                      "32",
                      "--sample-tokens",
                      "8",
                      "--threads",
                      "1",
                      "--serve",
                      "--port",
                      "0"},
                     dir);
  const int port = trainer.port();
  ASSERT_GT(port, 0) << trainer.out() << trainer.err();
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(5, 0);
  client.set_read_timeout(30, 0);

  // Poll the log endpoint as the page does; record how many evaluations it has each time, and
  // whether the run was still training then.
  std::vector<std::size_t> seen;
  bool grew_while_training = false;
  for (int i = 0; i < 2400 && !grew_while_training; ++i) {  // at most 2 minutes
    const bool training = trainer.out().find("checkpoint: ") == std::string::npos;
    const auto r = client.Get("/api/log?since=-1");
    ASSERT_TRUE(r) << "the server stopped answering: " << trainer.err();
    ASSERT_EQ(r->status, 200);
    const std::size_t evals = json::parse(r->body)["evals"].size();
    if (!seen.empty() && evals > seen.front() && training) grew_while_training = true;
    seen.push_back(evals);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(grew_while_training) << "evaluations seen: " << seen.size() << ", last "
                                   << (seen.empty() ? 0 : seen.back()) << "\n"
                                   << trainer.out();
  // The saves arrive as evaluations of the probe (the start of the training text, as many
  // characters as the window holds: 16 here).
  ASSERT_TRUE([&] {
    for (int i = 0; i < 400; ++i) {
      const auto r = client.Get("/api/evals");
      if (r && json::parse(r->body)["count"].get<std::size_t>() >= 2) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }());
  const json evals = json::parse(client.Get("/api/evals")->body);
  EXPECT_EQ(evals["probe"], "to be or not to ");
  EXPECT_EQ(evals["evaluations"][0]["attention"].size(), 2u);
  const int code = trainer.stop(SIGINT, 120);
  EXPECT_TRUE(code == 0 || code == 130) << code << "\n" << trainer.err();
}

/// The resident memory of process `pid` in KiB (VmRSS of /proc/PID/status), or -1.
long resident_kib(pid_t pid) {
  const std::string status = read_file("/proc/" + std::to_string(pid) + "/status");
  const std::size_t at = status.find("VmRSS:");
  return at == std::string::npos ? -1 : std::stol(status.substr(at + 6));
}

/// Sends `request` on a new connection to 127.0.0.1:`port` (as far as the server reads it) and
/// returns the status line of the answer, or why there is none in parentheses (the connection
/// refused or reset, nothing within 10 s). A signal to this process does not end the wait.
std::string send_and_read_status(int port, const std::string& request) {
  const int fd = glass_test::connect_local(port);
  if (fd < 0) return std::string("(connect: ") + std::strerror(errno) + ")";
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  for (std::size_t at = 0; at < request.size();) {  // until all is sent or the server closes
    const ssize_t n = send(fd, request.data() + at,
                           std::min<std::size_t>(4096, request.size() - at), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;  // a signal to this process (e.g. SIGCHLD)
    if (n <= 0) break;
    at += static_cast<std::size_t>(n);
  }
  const int send_errno = errno;
  std::string reply;
  char buf[512];
  ssize_t n = 0;
  while (reply.find("\r\n") == std::string::npos &&
         ((n = recv(fd, buf, sizeof(buf), 0)) > 0 || (n < 0 && errno == EINTR)))
    if (n > 0) reply.append(buf, static_cast<std::size_t>(n));
  const int recv_errno = errno;
  close(fd);
  if (reply.empty())  // why there is no status, for the test's message
    return fmt::format("(no reply: {} after sending, then {})", std::strerror(send_errno),
                       n == 0 ? std::string("end of stream") : std::strerror(recv_errno));
  return reply.substr(0, reply.find("\r\n"));
}

TEST(ServeCli, ChunkedBodiesOverTheLimitAnswer413WithoutTheServerGrowing) {
  const fs::path dir = glass_test::temp_dir("serve_chunked");
  glass_test::write_small_checkpoint((dir / "ckpt").string(), 16, 3);
  Background server({"serve", "-m", (dir / "ckpt").string(), "-t", "1", "--port", "0"}, dir);
  const int port = server.port();
  ASSERT_GT(port, 0) << server.err();
  const std::string head = "POST /api/inspect HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                           "\r\nContent-Type: application/json\r\n";
  // Its normal size: after a few answered requests (each worker thread has run once).
  const std::string small = "{\"prompt\": \"to\"}";
  for (int i = 0; i < 32; ++i)
    ASSERT_EQ(send_and_read_status(port, head + "Content-Length: " + std::to_string(small.size()) +
                                             "\r\n\r\n" + small)
                  .rfind("HTTP/1.1 ", 0),
              0u);
  const long before = resident_kib(server.pid());
  ASSERT_GT(before, 0);
  // 16 clients at once, each a 1 MiB chunked body in 1 KiB chunks (the limit is 64 KiB).
  std::string chunked = head + "Transfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 1024; ++i) chunked += "400\r\n" + std::string(1024, ' ') + "\r\n";
  chunked += "0\r\n\r\n";
  std::vector<std::string> statuses(16);
  std::vector<std::thread> clients;
  for (std::size_t c = 0; c < statuses.size(); ++c)
    clients.emplace_back([&, c] { statuses[c] = send_and_read_status(port, chunked); });
  for (auto& t : clients) t.join();
  // Each reads its 413. Two causes made an odd client read nothing on a loaded machine: 16
  // connections at once overflowed cpp-httplib's queue of 5 not yet accepted (the kernel then
  // reset one unanswered), and a signal to this process interrupted a client's recv (now
  // retried in send_and_read_status).
  for (const std::string& s : statuses) EXPECT_EQ(s.rfind("HTTP/1.1 413", 0), 0u) << s;
  const long after = resident_kib(server.pid());
  // Unbounded, each client's megabyte is read whole (16 MiB and their copies); bounded, at most
  // 64 KiB each is held.
  EXPECT_LT(after - before, 8 * 1024)
      << "resident memory grew from " << before << " KiB to " << after << " KiB";
  EXPECT_EQ(server.stop(SIGINT), 0) << server.err();
}

TEST(ServeCli, ABurstOfClientsWhileTheServerIsPausedIsAnsweredEveryOne) {
  // 24 clients connect and send a 1 MiB chunked body while the server is paused (SIGSTOP, as a
  // loaded machine pauses it for a moment): none can be accepted until it goes on. Each must
  // then read its 413; with cpp-httplib's queue of 5 unaccepted connections, the kernel reset
  // several of them unanswered (connection reset, or an empty reply).
  const fs::path dir = glass_test::temp_dir("serve_burst");
  glass_test::write_small_checkpoint((dir / "ckpt").string(), 16, 3);
  Background server({"serve", "-m", (dir / "ckpt").string(), "-t", "1", "--port", "0"}, dir);
  const int port = server.port();
  ASSERT_GT(port, 0) << server.err();
  std::string chunked = "POST /api/inspect HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                        "\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 1024; ++i) chunked += "400\r\n" + std::string(1024, ' ') + "\r\n";
  chunked += "0\r\n\r\n";
  ASSERT_EQ(::kill(server.pid(), SIGSTOP), 0);
  std::vector<std::string> statuses(24);
  std::vector<std::thread> clients;
  for (std::size_t c = 0; c < statuses.size(); ++c)
    clients.emplace_back([&, c] { statuses[c] = send_and_read_status(port, chunked); });
  std::this_thread::sleep_for(std::chrono::seconds(1));
  ASSERT_EQ(::kill(server.pid(), SIGCONT), 0);
  for (auto& t : clients) t.join();
  for (const std::string& s : statuses)
    EXPECT_EQ(s.rfind("HTTP/1.1 413", 0), 0u) << "'" << s << "'";
  EXPECT_EQ(server.stop(SIGINT), 0) << server.err();
}

TEST(ServeCli, TrainWithServeSaysWhenTrainingIsDoneAndItStillServesAlsoIntoAFile) {
  const fs::path dir = glass_test::temp_dir("serve_train_done");
  std::string text;
  for (int i = 0; i < 100; ++i) text += "to be or not to be, that is the question. ";
  glass_test::write_file(dir / "text.txt", text);
  // Its standard output is a file (Background): not a terminal, so fully buffered unless flushed.
  Background trainer({"train",
                      "--data",
                      (dir / "text.txt").string(),
                      "--out",
                      (dir / "run").string(),
                      "--iters",
                      "40",
                      "--eval-every",
                      "20",
                      "--eval-iters",
                      "2",
                      "--batch-size",
                      "4",
                      "--context",
                      "8",
                      "--d-model",
                      "16",
                      "--n-layers",
                      "1",
                      "--n-heads",
                      "2",
                      "--n-kv-heads",
                      "1",
                      "--ffn-hidden",
                      "32",
                      "--threads",
                      "1",
                      "--serve",
                      "--port",
                      "0"},
                     dir);
  const int port = trainer.port();
  ASSERT_GT(port, 0) << trainer.out() << trainer.err();
  const std::string done = "training done; still serving " + (dir / "run").string() +
                           " at http://127.0.0.1:" + std::to_string(port) + "/ until Ctrl-C";
  for (int i = 0; i < 1200 && trainer.running() && trainer.out().find(done) == std::string::npos;
       ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const std::string out = trainer.out();
  ASSERT_TRUE(trainer.running()) << out << trainer.err();
  EXPECT_NE(out.find(done), std::string::npos) << out;
  // Before it: the last evaluation, the summary and the checkpoint lines, all readable now.
  EXPECT_LT(out.find("step 40: train loss"), out.find(done)) << out;
  EXPECT_LT(out.find("\ncheckpoint: "), out.find(done)) << out;
  EXPECT_LT(out.find("sample from it: "), out.find(done)) << out;
  EXPECT_EQ(trainer.stop(SIGINT, 30), 0) << trainer.err();
  EXPECT_NE(trainer.out().find("stopped serving (Ctrl-C)"), std::string::npos) << trainer.out();
}

TEST(ServeCli, AFineTuneWithServeShowsItsEvaluationsAndStopsOnCtrlC) {
  const fs::path dir = glass_test::temp_dir("glass_finetune_serve");
  glass_test::remove_at_exit(dir);
  glass_test::write_small_checkpoint((dir / "base").string(), 64, 3);
  std::ofstream(dir / "chat.jsonl")
      << R"({"messages":[{"role":"user","content":"to be?"},{"role":"assistant","content":"or not"}]})"
         "\n"
         R"({"messages":[{"role":"user","content":"the question"},{"role":"assistant","content":"be"}]})"
         "\n";
  Background trainer({"finetune",
                      "--from",
                      (dir / "base").string(),
                      "--chat",
                      (dir / "chat.jsonl").string(),
                      "--val",
                      (dir / "chat.jsonl").string(),
                      "--out",
                      (dir / "run").string(),
                      "--iters",
                      "6",
                      "--eval-every",
                      "3",
                      "--batch-size",
                      "2",
                      "--warmup",
                      "1",
                      "--threads",
                      "1",
                      "--serve",
                      "--port",
                      "0"},
                     dir);
  const int port = trainer.port();
  ASSERT_GT(port, 0) << trainer.out() << trainer.err();
  const std::string done = "training done; still serving " + (dir / "run").string();
  for (int i = 0; i < 1200 && trainer.running() && trainer.out().find(done) == std::string::npos;
       ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(trainer.running()) << trainer.out() << trainer.err();
  EXPECT_NE(trainer.out().find("chat fine-tune of "), std::string::npos) << trainer.out();
  httplib::Client client("127.0.0.1", port);
  const auto r = client.Get("/api/log?since=-1");
  ASSERT_TRUE(r && r->status == 200);
  EXPECT_EQ(json::parse(r->body)["evals"].size(), 3u) << r->body;  // steps 0, 3 and 6
  const auto info = client.Get("/api/info");
  ASSERT_TRUE(info && info->status == 200);
  EXPECT_EQ(trainer.stop(SIGINT, 30), 0) << trainer.err();
  EXPECT_NE(trainer.out().find("stopped serving (Ctrl-C)"), std::string::npos) << trainer.out();
}

TEST(ServeCli, TrainWithServeAlwaysStopsOnCtrlCWheneverItComes) {
  // Short `train --serve` runs, each sent Ctrl-C at another moment: while it starts, trains,
  // makes its last evaluation and save (after the training loop's last look at the signal), or
  // serves after training; some get a second Ctrl-C 50 ms later. Every run must exit (within
  // a generous 60 s) with 0 (stopped serving) or 130 (stopped training, after a save).
  const fs::path root = glass_test::temp_dir("serve_sigint");
  std::string text;
  for (int i = 0; i < 100; ++i) text += "to be or not to be, that is the question. ";
  glass_test::write_file(root / "text.txt", text);
  constexpr int kRuns = 12, kIters = 60;
  std::mt19937 rng(2718);
  for (int k = 0; k < kRuns; ++k) {
    const fs::path dir = root / ("run" + std::to_string(k));
    fs::create_directories(dir);
    Background trainer({"train",
                        "--data",
                        (root / "text.txt").string(),
                        "--out",
                        (dir / "run").string(),
                        "--iters",
                        std::to_string(kIters),
                        "--eval-every",
                        "20",
                        "--eval-iters",
                        "4",
                        "--batch-size",
                        "4",
                        "--context",
                        "8",
                        "--d-model",
                        "16",
                        "--n-layers",
                        "1",
                        "--n-heads",
                        "2",
                        "--n-kv-heads",
                        "1",
                        "--ffn-hidden",
                        "32",
                        "--sample-tokens",
                        "300",
                        "--threads",
                        "1",
                        "--serve",
                        "--port",
                        "0"},
                       dir);
    std::string moment;
    if (k % 2 == 0) {  // any moment of the first 2 s
      const int ms = std::uniform_int_distribution<int>(0, 2000)(rng);
      moment = fmt::format("{} ms after the start", ms);
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    } else {  // just after the last step's row: during the last evaluation, sample and save
      const std::string last_row = "\n" + std::to_string(kIters - 1) + ",";
      for (int i = 0; i < 15000 && trainer.running(); ++i) {
        if (read_file(dir / "run" / "steps.csv").find(last_row) != std::string::npos) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      const int ms = std::uniform_int_distribution<int>(0, 40)(rng);
      moment = fmt::format("{} ms after the last step", ms);
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    }
    if (k % 3 == 2) {
      kill(trainer.pid(), SIGINT);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      moment += ", twice";
    }
    // A stop that never comes shows as a run still going after 60 s: generous, so that a
    // loaded machine's slow save is not taken for one (no assertion here is about speed).
    const int code = trainer.stop(SIGINT, 60);
    EXPECT_TRUE(code == 0 || code == 130)
        << "run " << k << " (Ctrl-C " << moment << "): exit code " << code
        << (code == -2 ? " (still running after 60 s)" : "") << "\n"
        << trainer.out() << trainer.err();
  }
}

TEST(ServeCli, CtrlCStopsCleanlyABusyPortIsAnErrorAndAnOpenHostIsWarnedAbout) {
  const fs::path dir = glass_test::temp_dir("serve_cli");
  const fs::path checkpoint = dir / "ckpt";
  glass_test::write_small_checkpoint(checkpoint.string(), 16, 3);

  // A port already taken (by a server of this test).
  glass::ServeOptions options;
  options.checkpoint = checkpoint.string();
  options.port = 0;
  glass::Server holder(options);
  const int taken = holder.start();
  const auto busy = glass_test::run_glass(
      "serve --checkpoint " + quote(checkpoint.string()) + " --port " + std::to_string(taken), dir,
      "timeout 60 ");
  EXPECT_EQ(busy.exit_code, 1) << busy.out << busy.err;
  EXPECT_NE(busy.err.find("error: cannot listen on 127.0.0.1:" + std::to_string(taken)),
            std::string::npos)
      << busy.err;
  EXPECT_NE(busy.err.find("in use"), std::string::npos) << busy.err;
  holder.stop();

  const auto missing = glass_test::run_glass(
      "serve --checkpoint " + quote((dir / "nothing").string()) + " --port 0", dir, "timeout 60 ");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("does not exist"), std::string::npos) << missing.err;
  const auto bad_port = glass_test::run_glass(
      "serve --checkpoint " + quote(checkpoint.string()) + " --port 70000", dir, "timeout 60 ");
  EXPECT_NE(bad_port.exit_code, 0);

  // The short flags of the other commands: -m for the checkpoint, -t/--threads.
  const auto help = glass_test::run_glass("serve --help", dir);
  EXPECT_NE(help.out.find("-m,--checkpoint"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("-t,--threads"), std::string::npos) << help.out;
  const auto bad_threads = glass_test::run_glass(
      "serve -m " + quote(checkpoint.string()) + " -t 0 --port 0", dir, "timeout 60 ");
  EXPECT_NE(bad_threads.exit_code, 0);
  EXPECT_NE(bad_threads.err.find("--threads"), std::string::npos) << bad_threads.err;

  // Any address: a warning; Ctrl-C: a clean stop with exit code 0.
  const fs::path logs = dir / "open";
  fs::create_directories(logs);
  Background server(
      {"serve", "-m", checkpoint.string(), "-t", "1", "--port", "0", "--host", "0.0.0.0"}, logs);
  const int port = server.port();
  ASSERT_GT(port, 0) << server.err();
  EXPECT_NE(server.err().find("warning: serving on 0.0.0.0, not only this machine"),
            std::string::npos)
      << server.err();
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(10, 0);
  const auto r = client.Get("/api/info");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(server.stop(SIGINT), 0) << server.err();
  EXPECT_NE(server.out().find("stopped serving (Ctrl-C)"), std::string::npos);
}

// Mean ablation takes one reference batch in both front ends: glass inspect and /api/ablate, for
// the same request on the same save, give the same numbers (the means over the first windows
// of the training text config.json names, found from the current directory).
TEST(ServeCli, InspectAndTheServerMeanAblateOverTheSameReference) {
  const fs::path dir = glass_test::temp_dir("serve_cli_mean");
  std::u32string text;
  while (text.size() < 200) text += glass_test::kSmallText + std::u32string(U"\n");
  glass_test::write_file(dir / "text.txt", glass::u32_to_utf8(text));
  const glass::Tokenizer tokenizer = glass::Tokenizer::from_text(glass_test::kSmallText);
  const glass::Decoder model(glass_test::small_config(tokenizer.vocab_size(), 16), 5);
  glass::save_model((dir / "ckpt").string(), model, tokenizer, "model.safetensors",
                    R"({"training": {"context": 8, "data": "text.txt"}})");
  const fs::path before = fs::current_path();
  fs::current_path(dir);  // where both front ends find text.txt
  const auto inspected = glass_test::run_glass(
      "inspect -m ckpt --prompt 'to be' --ablate 0.1,1.0 --ablation mean --top-k 3 --json -", dir);
  fs::create_directories(dir / "server");
  Background server({"serve", "-m", "ckpt", "-t", "1", "--port", "0"}, dir / "server");
  fs::current_path(before);
  ASSERT_EQ(inspected.exit_code, 0) << inspected.err;
  const json cli = json::parse(inspected.out)["ablation"];
  const int port = server.port();
  ASSERT_GT(port, 0) << server.err();
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(30, 0);
  const auto r =
      client.Post("/api/ablate",
                  R"({"prompt": "to be", "heads": [[0, 1], [1, 0]], "mode": "mean", "top_k": 3})",
                  "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json api = json::parse(r->body)["ablation"];
  EXPECT_EQ(cli["mean_over"], "the first 32 characters of the training text text.txt");
  EXPECT_EQ(api["mean_over"], cli["mean_over"]);
  EXPECT_EQ(api["after"], cli["after"]);
  EXPECT_EQ(api["before"], cli["before"]);
  EXPECT_EQ(api["kl_divergence"], cli["kl_divergence"]);
  EXPECT_NE(cli["after"], cli["before"]) << "the heads were ablated";
}

TEST(ServeCli, TheLabAnswersThroughTheBinaryWithTheTrainingTextGiven) {
  // A run of two saves, the second with its interp.json; the training text given with --data.
  const fs::path dir = glass_test::temp_dir("serve_cli_lab");
  const fs::path run_dir = dir / "run";
  fs::create_directories(run_dir);
  interp_test::save_with_record(run_dir, 0, "");
  interp_test::save_with_record(run_dir, 50, interp_test::record(50, 0.2).dump());
  std::u32string text;
  while (text.size() < 200) text += glass_test::kSmallText + std::u32string(U"\n");
  const fs::path data = dir / "text.txt";
  glass_test::write_file(data, glass::u32_to_utf8(text));
  Background server(
      {"serve", "-m", run_dir.string(), "--data", data.string(), "-t", "1", "--port", "0"}, dir);
  const int port = server.port();
  ASSERT_GT(port, 0) << server.out() << server.err();
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(30, 0);

  // Mean ablation of two heads: the mean over the first 4 windows of 32 characters of --data,
  // the numbers of the library on the same weights.
  const auto r =
      client.Post("/api/ablate",
                  R"({"prompt": "that is", "heads": [[0, 1], [1, 0]], "mode": "mean", "top_k": 3})",
                  "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  EXPECT_EQ(j["ablation"]["mean_over"], "the first 128 characters of the training text text.txt");
  const glass::Checkpoint loaded = glass::load_checkpoint(run_dir.string());
  const auto ids = loaded.tokenizer().chars()->encode(glass::utf8_to_u32("that is"));
  const auto ref = loaded.tokenizer().chars()->encode(text.substr(0, 4 * interp_test::kContext));
  glass::Ids batch = glass::Ids::from_shape({4, interp_test::kContext});
  std::copy(ref.begin(), ref.end(), batch.data());
  const glass::HeadMeans means = glass::head_means(loaded.model(), batch);
  const auto shift = glass::next_token_shift(loaded.model(), ids, {{0, 1}, {1, 0}},
                                             glass::AblationMode::mean, &means);
  for (std::size_t v = 0; v < loaded.config().vocab_size; ++v)
    EXPECT_NEAR(j["ablation"]["after"][v].get<double>(), shift.after(v), 1e-6) << v;
  EXPECT_GE(j["ablation"]["top"].size(), 3u) << "the top 3 before, and those new after";

  // The records of the two saves, as the page reads them.
  const auto h = client.Get("/api/interp");
  ASSERT_TRUE(h);
  ASSERT_EQ(h->status, 200) << h->body;
  const json history = json::parse(h->body);
  ASSERT_EQ(history["saves"].size(), 2u) << h->body;
  EXPECT_EQ(history["recorded"], 1);
  EXPECT_EQ(history["saves"][1]["interp"], interp_test::record(50, 0.2));
  EXPECT_EQ(server.stop(SIGINT), 0) << server.err();
}

}  // namespace

namespace {

/// The first `bytes` bytes of the bundled Dom Casmurro, cut at a character boundary.
std::string domcasmurro_start(std::size_t bytes) {
  const std::string corpus = read_file(glass_test::source_dir("/data/corpora/domcasmurro.txt"));
  std::size_t cut = bytes;
  while (cut < corpus.size() && (static_cast<unsigned char>(corpus[cut]) & 0xC0) == 0x80) ++cut;
  return corpus.substr(0, cut);
}

/// The flags of a tiny BPE model of 384 tokens on `text` (context 16 tokens).
std::vector<std::string> tiny_bpe_flags(const fs::path& text, const fs::path& out) {
  return {"train", "--data",       text.string(), "--out",        out.string(), "--tokenizer",
          "bpe",   "--vocab-size", "384",         "--batch-size", "4",          "--context",
          "16",    "--d-model",    "32",          "--n-layers",   "1",          "--n-heads",
          "2",     "--n-kv-heads", "1",           "--ffn-hidden", "32",         "--eval-iters",
          "2",     "--warmup",     "5",           "--threads",    "1"};
}

std::string joined(const std::vector<std::string>& args) {
  std::string out;
  for (const std::string& a : args) out += " " + quote(a);
  return out;
}

}  // namespace

TEST(ServeCli, ABpeModelIsServedInTokens) {
  const fs::path dir = glass_test::temp_dir("serve_bpe");
  glass_test::write_file(dir / "text.txt", domcasmurro_start(20000));
  const fs::path ckpt = dir / "run";
  std::vector<std::string> train = tiny_bpe_flags(dir / "text.txt", ckpt);
  for (const char* a : {"--iters", "20", "--eval-every", "10"}) train.push_back(a);
  const glass_test::GlassRun trained = glass_test::run_glass(joined(train), dir);
  ASSERT_EQ(trained.exit_code, 0) << trained.err;
  const fs::path tokenizer_file = fs::canonical(ckpt / "current") / "tokenizer.json";
  const glass::BpeTokenizer bpe =
      glass::bpe_from_json(read_file(tokenizer_file), tokenizer_file.string());

  Background server({"serve", "--checkpoint", ckpt.string(), "--port", "0", "--probe", "Era um"},
                    dir);
  const int port = server.port();
  ASSERT_GT(port, 0) << server.out() << server.err();
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(60, 0);
  auto post = [&](const std::string& path, const json& body) {
    const auto r = client.Post(path, body.dump(), "application/json");
    EXPECT_TRUE(r) << path;
    return r ? std::make_pair(r->status, r->body) : std::make_pair(0, std::string());
  };

  // /api/info: the vocabulary as token texts, the context in tokens.
  const auto info_r = client.Get("/api/info");
  ASSERT_TRUE(info_r);
  const json info = json::parse(info_r->body);
  ASSERT_TRUE(info["loaded"].get<bool>()) << info.dump();
  EXPECT_EQ(info["tokenizer"], "bpe");
  EXPECT_EQ(info["unit"], "tokens");
  EXPECT_EQ(info["unit_singular"], "token");
  ASSERT_EQ(info["vocab"].size(), 384u);
  EXPECT_EQ(info["vocab"][0], "<unk>");
  EXPECT_EQ(info["vocab"][3 + 0x0A], "<0x0A>");
  EXPECT_EQ(info["vocab"][383], bpe.token_text(383));
  EXPECT_EQ(info["context_note"], glass::context_sentence(16, "tokens"));
  // The longest prompt in the unit the model reads: 16 tokens, not a count of characters.
  EXPECT_EQ(info["max_prompt_tokens"], 16) << info.dump();
  EXPECT_FALSE(info.contains("max_prompt_chars")) << "a count of tokens named as characters";

  // /api/inspect: one position per token, with its text; an emoji is four byte tokens.
  const std::string prompt = "Era um \xF0\x9F\x99\x82";
  const std::vector<std::int32_t> ids = bpe.encode(glass::utf8_to_u32(prompt));
  const auto [status, body] = post("/api/inspect", {{"prompt", prompt}, {"top_k", 3}});
  ASSERT_EQ(status, 200) << body;
  const json ins = json::parse(body);
  EXPECT_EQ(ins["tokenizer"], "bpe");
  EXPECT_EQ(ins["tokens"].get<std::vector<std::int32_t>>(), ids);
  ASSERT_EQ(ins["token_texts"].size(), ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i)
    EXPECT_EQ(ins["token_texts"][i], bpe.token_text(ids[i])) << i;
  EXPECT_EQ(ins["token_texts"][ids.size() - 1], "<0x82>");
  EXPECT_EQ(ins["attention"][0][0].size(), ids.size()) << "attention rows are tokens";
  for (const json& t : ins["top"][0])
    EXPECT_EQ(t["text"], bpe.token_text(t["id"].get<std::int32_t>()));

  // /api/next on the tokens up to a position is /api/next on the prompt they encode.
  const json sampling = {{"temperature", 1.0}};
  json by_tokens = sampling, by_prompt = sampling;
  by_tokens["tokens"] = ids;
  by_prompt["prompt"] = prompt;
  const auto [s1, next_tokens] = post("/api/next", by_tokens);
  const auto [s2, next_prompt] = post("/api/next", by_prompt);
  ASSERT_EQ(s1, 200) << next_tokens;
  ASSERT_EQ(s2, 200) << next_prompt;
  EXPECT_EQ(json::parse(next_tokens)["probs"], json::parse(next_prompt)["probs"]);
  EXPECT_EQ(json::parse(next_tokens)["probs"].size(), 384u);
  json bad = sampling;
  bad["tokens"] = json::array({384});
  EXPECT_EQ(post("/api/next", bad).first, 400);

  // /api/sample: greedy text equal to glass sample's on the same checkpoint.
  const auto [s3, streamed] =
      post("/api/sample", {{"prompt", "Era"}, {"temperature", 0}, {"n", 30}});
  ASSERT_EQ(s3, 200) << streamed;
  const glass_test::GlassRun sampled =
      glass_test::run_glass("sample -m " + quote(ckpt.string()) + " -p Era -n 30 --temp 0", dir);
  ASSERT_EQ(sampled.exit_code, 0) << sampled.err;
  EXPECT_EQ("Era" + streamed + "\n", sampled.out);

  // The context counts tokens: a prompt of more than 16 tokens is refused, in tokens.
  const std::string long_prompt =
      "Uma noite destas, vindo da cidade para o Engenho Novo, encontrei no trem";
  const std::size_t n_long = bpe.encode(glass::utf8_to_u32(long_prompt)).size();
  const auto [s4, refused] = post("/api/inspect", {{"prompt", long_prompt}});
  EXPECT_EQ(s4, 400);
  EXPECT_NE(refused.find(fmt::format("the prompt has {} tokens", n_long)), std::string::npos)
      << refused;

  // /api/evals: the probe's attention labelled with its tokens.
  const auto evals_r = client.Get("/api/evals");
  ASSERT_TRUE(evals_r);
  const json evals = json::parse(evals_r->body);
  ASSERT_FALSE(evals["evaluations"].empty()) << evals_r->body;
  const std::vector<std::int32_t> probe_ids = bpe.encode(U"Era um");
  const json& first = evals["evaluations"][0];
  EXPECT_EQ(first["tokens"].get<std::vector<std::int32_t>>(), probe_ids);
  EXPECT_EQ(first["token_texts"].size(), probe_ids.size());
  EXPECT_EQ(first["attention"][0][0].size(), probe_ids.size());

  // The static inspector page of the prompt.
  const auto page = client.Get("/inspector?prompt=Era%20um");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("\"tokenizer\":\"bpe\""), std::string::npos);

  // The live page in headless Chromium: one chip per token, its text and its id.
  const char* skip = std::getenv("GLASS_SKIP_BROWSER");
  const std::string chromium = find_chromium();
  if (!(skip && std::string(skip) == "1") && !chromium.empty()) {
    const fs::path file = dir / "live.html";
    const int rc =
        run("timeout 120 " + chromium + kFlags + quote((dir / "profile").string()) +
            " --virtual-time-budget=15000 --dump-dom " +
            quote("http://127.0.0.1:" + std::to_string(port) + "/#prompt=Era%20um%20%F0%9F%99%82") +
            " > " + quote(file.string()) + " 2> /dev/null");
    EXPECT_EQ(rc, 0);
    const std::string dom = read_file(file);
    const std::size_t at = dom.find("id=\"prompt-tokens\"");
    ASSERT_NE(at, std::string::npos) << dom;
    const std::string chips = dom.substr(at, dom.find("</div>", at) - at);
    EXPECT_EQ(count(chips, "class=\"token\""), ids.size()) << chips;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      std::string label = bpe.token_text(ids[i]);  // as the DOM writes it: < and > escaped
      label = std::regex_replace(std::regex_replace(label, std::regex("<"), "&lt;"),
                                 std::regex(">"), "&gt;");
      EXPECT_NE(chips.find(">" + label + "<small>" + std::to_string(ids[i]) + "</small>"),
                std::string::npos)
          << "chip " << i << " " << label << " in " << chips;
    }
    EXPECT_NE(dom.find("of 384 tokens can be drawn"), std::string::npos);
    // The page's words name the unit: the next token, the last N tokens.
    EXPECT_NE(dom.find("draws the next <span class=\"unit-one\">token</span>"), std::string::npos);
    EXPECT_NE(dom.find("<span class=\"units\">tokens</span></label>"), std::string::npos);
  }
  EXPECT_EQ(server.stop(SIGINT, 30), 0) << server.err();
}

TEST(ServeCli, TrainWithServeWatchesABpeRun) {
  const fs::path dir = glass_test::temp_dir("serve_bpe_train");
  glass_test::write_file(dir / "text.txt", domcasmurro_start(20000));
  std::vector<std::string> args = tiny_bpe_flags(dir / "text.txt", dir / "run");
  for (const char* a : {"--iters", "20", "--eval-every", "10", "--serve", "--port", "0"})
    args.push_back(a);
  Background trainer(args, dir);
  const int port = trainer.port();
  ASSERT_GT(port, 0) << trainer.out() << trainer.err();
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(30, 0);
  json info;
  for (int i = 0; i < 1200 && trainer.running(); ++i) {
    const auto r = client.Get("/api/info");
    if (r && r->status == 200) {
      info = json::parse(r->body);
      if (info.value("loaded", false)) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(info.value("loaded", false)) << info.dump() << trainer.out() << trainer.err();
  EXPECT_EQ(info.value("tokenizer", ""), "bpe");
  // The server loads the first save while training goes on: Ctrl-C is sent once training is
  // done (on a loaded machine the 20 steps can outlast the first load by seconds), so that the
  // run ends by stopping the server (exit 0), not by stopping training (130).
  const std::string done = "training done; still serving";
  for (int i = 0; i < 2400 && trainer.running() && trainer.out().find(done) == std::string::npos;
       ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_NE(trainer.out().find(done), std::string::npos) << trainer.out() << trainer.err();
  EXPECT_EQ(trainer.stop(SIGINT, 60), 0) << trainer.err();
}
