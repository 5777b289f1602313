// The page of `glass inspect --html` in a real browser: headless Chromium loads it from a
// file:// URL (no network), runs its JavaScript, and we check the DOM it produced (heatmap
// cells with values, head thumbnails, snapshot table, top-k bars, loss curve), then take a
// screenshot into the build tree (build/inspect-browser/inspect.png) for a human to look at.
// The trainer's loss page (loss.html, drawn by the same loss_chart.js) is checked the same way,
// and so is the lab's page (`glass inspect --lens --html`: the lab report drawn by lab_views.js,
// the renderer of the live page, with the loss curve of the save's log.csv).
//
// Chromium is required (scripts/install-deps.sh installs Debian's `chromium`): without it this
// test FAILS. Set GLASS_SKIP_BROWSER=1 to skip it explicitly. GLASS_CHROMIUM=/path overrides
// the browser binary.

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "nn/decoder.hpp"
#include "fixtures.hpp"
#include "cli_test_util.hpp"
#include "checkpoint/checkpoint.hpp"
#include "inspect/loss_plot.hpp"
#include "test_paths.hpp"

namespace fs = std::filesystem;

namespace {

using glass_test::quote;
using glass_test::read_file;

int run(const std::string& cmd) {
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// The Chromium binary: $GLASS_CHROMIUM, else `chromium` or `chromium-browser` on PATH; "" if none.
std::string find_chromium() {
  if (const char* env = std::getenv("GLASS_CHROMIUM")) return env;
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"})
    if (run(std::string("command -v ") + name + " > /dev/null 2>&1") == 0) return name;
  return "";
}

using glass_test::count;

/// The Chromium flags of every run: headless, no network services, a fresh profile (append
/// its directory).
const std::string kFlags =
    " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
    " --disable-background-networking --disable-component-update --disable-sync"
    " --disable-extensions --disable-dev-shm-usage --user-data-dir=";

#define GLASS_REQUIRE_CHROMIUM(chromium)                                                      \
  const char* skip = std::getenv("GLASS_SKIP_BROWSER");                                       \
  if (skip && std::string(skip) == "1") GTEST_SKIP() << "GLASS_SKIP_BROWSER=1";               \
  const std::string chromium = find_chromium();                                               \
  ASSERT_FALSE(chromium.empty())                                                              \
      << "Chromium is not installed, so the inspector page cannot be tested in a browser.\n"  \
         "Install it with: apt-get install chromium (scripts/install-deps.sh does), or set\n" \
         "GLASS_SKIP_BROWSER=1 to skip this test explicitly."

TEST(InspectBrowser, LossPageDrawsTheChart) {
  GLASS_REQUIRE_CHROMIUM(chromium);
  const fs::path dir = fs::path(glass_test::binary_dir()) / "loss-browser";
  fs::remove_all(dir);
  fs::create_directories(dir);
  // Gaps (NaN: not measured) break a line: train has 2 pieces, validation 3.
  const double nan = std::nan("");
  const std::vector<glass::LossPoint> points = {{0, 4.17, 4.17},  {200, 2.5, nan},
                                                {400, nan, 2.1},  {600, 2.0, nan},
                                                {800, 1.8, 1.95}, {1000, 1.7, 1.9}};
  const fs::path page = dir / "loss.html";
  glass_test::write_file(page, glass::loss_plot_html(points, "tiny <shakespeare> & co"));
  const fs::path dom_file = dir / "dom.html";
  ASSERT_EQ(run("timeout 120 " + chromium + kFlags + quote((dir / "profile").string()) +
                " --dump-dom " + quote("file://" + fs::absolute(page).string()) + " > " +
                quote(dom_file.string()) + " 2> " + quote((dir / "chromium.log").string())),
            0)
      << read_file(dir / "chromium.log");
  const std::string dom = read_file(dom_file);
  EXPECT_NE(dom.find("data-rendered=\"yes\""), std::string::npos)
      << "the page's script did not finish";
  // The drawn chart (the DOM also holds the script's own text, which names these tags).
  const std::size_t at = dom.find("<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"loss-svg\"");
  ASSERT_NE(at, std::string::npos) << "no chart drawn";
  const std::string chart = dom.substr(at, dom.find("</svg>", at) - at);
  EXPECT_EQ(count(chart, "<polyline"), 5u);
  EXPECT_EQ(count(chart, "<circle"), 9u);  // few points: one marker per measured value
  EXPECT_NE(chart.find("tiny &lt;shakespeare&gt; &amp; co"), std::string::npos);
  for (const char* label :
       {">train</text>", ">validation</text>", ">step</text>", ">loss (nats)</text>"})
    EXPECT_NE(chart.find(label), std::string::npos) << label;
  // x ticks every 200 steps (nice step near 1000 / 6), y ticks every 0.5 nats from 1.5 to 4.5.
  for (const char* tick :
       {">0</text>", ">400</text>", ">1000</text>", ">1.5</text>", ">2.0</text>", ">4.5</text>"})
    EXPECT_NE(chart.find(tick), std::string::npos) << tick;
  EXPECT_EQ(chart.find("NaN"), std::string::npos);
  EXPECT_NE(dom.find("href=\"data:image/svg+xml"), std::string::npos) << "the chart offered as SVG";
  fs::remove_all(dir / "profile");
}

TEST(InspectBrowser, LossPageDrawsEveryStepTheLearningRateLnVAndTheBestPoint) {
  GLASS_REQUIRE_CHROMIUM(chromium);
  const fs::path dir = fs::path(glass_test::binary_dir()) / "loss-steps-browser";
  fs::remove_all(dir);
  fs::create_directories(dir);
  glass::LossCurve curve;
  curve.title = "per step";
  curve.evals = {{0, 4.1, 4.15}, {100, 2.2, 2.3}, {200, 1.9, 2.05}, {300, 1.7, 2.1}};
  for (int step = 0; step < 300; ++step)  // a noisy falling batch loss, warmup then constant lr
    curve.steps.push_back({static_cast<double>(step),
                           1.7 + 2.4 * std::exp(-step / 60.0) + (step % 2 ? 0.1 : -0.1),
                           step < 20 ? 1e-3 * (step + 1) / 21.0 : 1e-3});
  curve.vocab_size = 65;  // ln 65 = 4.174
  const fs::path page = dir / "loss.html";
  glass_test::write_file(page, glass::loss_plot_html(curve));
  const fs::path dom_file = dir / "dom.html";
  ASSERT_EQ(run("timeout 120 " + chromium + kFlags + quote((dir / "profile").string()) +
                " --dump-dom " + quote("file://" + fs::absolute(page).string()) + " > " +
                quote(dom_file.string()) + " 2> " + quote((dir / "chromium.log").string())),
            0)
      << read_file(dir / "chromium.log");
  const std::string dom = read_file(dom_file);
  const std::size_t at = dom.find("<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"loss-svg\"");
  ASSERT_NE(at, std::string::npos) << "no chart drawn";
  const std::string chart = dom.substr(at, dom.find("</svg>", at) - at);
  // Raw and smoothed batch loss, train, validation and the learning rate.
  EXPECT_EQ(count(chart, "<polyline"), 5u);
  EXPECT_EQ(count(chart, "<circle"), 8u);  // the 4 evaluations of train and of validation
  for (const char* label :
       {">batch loss</text>", ">batch loss (smoothed)</text>", ">train (eval)</text>",
        ">validation</text>", ">learning rate</text>", ">ln V (uniform guess)</text>",
        ">ln V = ln 65 = 4.174</text>", ">best 2.050</text>"})
    EXPECT_NE(chart.find(label), std::string::npos) << label;
  // Round ticks: steps every 50, loss every 0.5, the learning rate every 0.0002.
  for (const char* tick : {">50</text>", ">300</text>", ">2.0</text>", ">0.0010</text>"})
    EXPECT_NE(chart.find(tick), std::string::npos) << tick;
  EXPECT_EQ(chart.find("NaN"), std::string::npos);
  fs::remove_all(dir / "profile");
}

TEST(InspectBrowser, HeadlessChromiumRendersTheHeatmapsAndTakesAScreenshot) {
  GLASS_REQUIRE_CHROMIUM(chromium);

  // A tiny checkpoint with a training log, and its inspector page.
  const fs::path dir = fs::path(glass_test::binary_dir()) / "inspect-browser";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path checkpoint = dir / "ckpt";
  // Untrained, but with large enough weights (init_std 0.3) for visibly uneven attention.
  const glass::ModelConfig config =
      glass_test::write_small_checkpoint(checkpoint.string(), 32, 11, 0.3);
  {
    std::ofstream log(checkpoint / "log.csv");
    log << "step,lr,train_loss,val_loss,tokens_per_s,elapsed_s\n";
    for (int step = 0; step <= 200; step += 10)
      log << step << ",0.001," << 3.2 * std::exp(-step / 80.0) + 1.4 << ","
          << (step % 50 == 0 ? std::to_string(3.2 * std::exp(-step / 90.0) + 1.5) : "") << ",5000,"
          << step * 0.1 << "\n";
  }
  const std::string prompt = "to be or not";  // 12 characters
  const fs::path page = dir / "inspect.html";
  ASSERT_EQ(run(std::string(glass_test::binary_dir("/glass inspect --checkpoint ")) +
                quote(checkpoint.string()) + " --prompt " + quote(prompt) +
                " --layer 1 --head 2 --html " + quote(page.string()) + " > " +
                quote((dir / "inspect.txt").string()) + " 2>&1"),
            0)
      << read_file(dir / "inspect.txt");

  const std::string flags = kFlags;
  const std::string url = "file://" + fs::absolute(page).string();

  // 1. The DOM after the page's JavaScript ran.
  const fs::path dom_file = dir / "dom.html";
  const int dom_rc = run("timeout 120 " + chromium + flags + quote((dir / "profile-dom").string()) +
                         " --dump-dom " + quote(url) + " > " + quote(dom_file.string()) + " 2> " +
                         quote((dir / "chromium-dom.log").string()));
  ASSERT_EQ(dom_rc, 0) << "chromium --dump-dom failed:\n" << read_file(dir / "chromium-dom.log");
  const std::string dom = read_file(dom_file);
  const std::size_t n = prompt.size();
  EXPECT_NE(dom.find("data-rendered=\"yes\""), std::string::npos)
      << "the page's script did not finish";
  EXPECT_NE(dom.find("id=\"attention-heatmap\""), std::string::npos);
  EXPECT_NE(dom.find("id=\"snapshot-heatmap\""), std::string::npos);
  // Attention heatmap (n x n) + the snapshot browser's view (attn.softmax of the head, n x n).
  EXPECT_EQ(count(dom, "class=\"hm-cell"), 2 * n * n);
  // Future keys (j > i) of the attention heatmap are drawn as masked: n (n - 1) / 2 of them.
  EXPECT_EQ(count(dom, "class=\"hm-cell masked\""), n * (n - 1) / 2);
  // Every cell carries its value, e.g. data-value="0.4123"; position 0 only sees itself.
  EXPECT_TRUE(std::regex_search(dom, std::regex(R"(data-i="0" data-j="0" data-value="1")")))
      << "attn.softmax[0, 0] must be 1";
  EXPECT_NE(dom.find("query 3 'b' → key 2 '␣'"), std::string::npos)
      << "hover text with character labels";
  EXPECT_EQ(count(dom, "class=\"thumb\"") + count(dom, "class=\"thumb selected\""), config.n_heads)
      << "one thumbnail per head";
  EXPECT_EQ(count(dom, "class=\"snap-row"), 11u + 3u)
      << "11 layer snapshots + embeddings, logits, probs";
  EXPECT_NE(dom.find("id=\"topk-pos-" + std::to_string(n - 1) + "\""), std::string::npos);
  EXPECT_EQ(count(dom, "class=\"topk-bar\""), n * 5);
  EXPECT_NE(dom.find("id=\"loss-svg\""), std::string::npos) << "loss curve from log.csv";
  EXPECT_NE(dom.find("<option value=\"1\">layer 1</option>"), std::string::npos);

  // 2. Another view chosen through the address (#layer=..&head=..): the selectors' state. Query
  // head 3 reads KV head 1 (GQA, 4 query heads over 2 KV heads); the mask has no head axis.
  const fs::path dom2_file = dir / "dom2.html";
  ASSERT_EQ(run("timeout 120 " + chromium + flags + quote((dir / "profile-dom2").string()) +
                " --dump-dom " + quote(url + "#layer=0&head=3&attn=attn.mask&snap=attn.k") + " > " +
                quote(dom2_file.string()) + " 2> /dev/null"),
            0);
  const std::string dom2 = read_file(dom2_file);
  EXPECT_NE(dom2.find("Attention: layers.0.attn.mask, whole snapshot (no head axis)"),
            std::string::npos);
  EXPECT_NE(
      dom2.find("layers.0.attn.k (2, 12, 4) → KV head 1 of 2 (used by query head 3): (12, 4)"),
      std::string::npos);
  EXPECT_EQ(count(dom2, "class=\"hm-cell"), n * n + n * 4)
      << "mask (n, n) and one KV head of keys (n, 4)";
  EXPECT_NE(dom2.find("class=\"thumb selected\""), std::string::npos);
  fs::remove_all(dir / "profile-dom2");

  // 3. A screenshot of the page, to look at.
  const fs::path png = dir / "inspect.png";
  const int shot_rc =
      run("timeout 120 " + chromium + flags + quote((dir / "profile-shot").string()) +
          " --screenshot=" + quote(png.string()) + " --window-size=1200,900 --hide-scrollbars " +
          quote(url) + " > " + quote((dir / "chromium-shot.log").string()) + " 2>&1");
  ASSERT_EQ(shot_rc, 0) << read_file(dir / "chromium-shot.log");
  const std::string image = read_file(png);
  ASSERT_GT(image.size(), 10000u) << "screenshot too small to show the page";
  EXPECT_EQ(image.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  fs::remove_all(dir / "profile-dom");
  fs::remove_all(dir / "profile-shot");
  std::cout << "screenshot: " << png.string() << "\n";
}

/// A small checkpoint in `dir`/ckpt with a training log (log.csv, 21 rows), as glass train leaves.
fs::path checkpoint_with_log(const fs::path& dir) {
  const fs::path checkpoint = dir / "ckpt";
  glass_test::write_small_checkpoint(checkpoint.string(), 32, 11, 0.3);
  std::ofstream log(checkpoint / "log.csv");
  log << "step,lr,train_loss,val_loss,tokens_per_s,elapsed_s\n";
  for (int step = 0; step <= 200; step += 10)
    log << step << ",0.001," << 3.2 * std::exp(-step / 80.0) + 1.4 << ","
        << (step % 50 == 0 ? std::to_string(3.2 * std::exp(-step / 90.0) + 1.5) : "") << ",5000,"
        << step * 0.1 << "\n";
  return checkpoint;
}

/// The DOM of `page` after its scripts ran, and in `errors` the page's uncaught JavaScript
/// errors that Chromium logged.
std::string page_dom(const std::string& chromium, const fs::path& page, const std::string& name,
                     std::string& errors) {
  const fs::path dir = page.parent_path();
  const fs::path dom = dir / (name + "-dom.html"), log = dir / (name + "-dom.log");
  const int rc =
      run("timeout 120 " + chromium + kFlags + quote((dir / ("profile-" + name)).string()) +
          " --enable-logging=stderr --v=0 --dump-dom " +
          quote("file://" + fs::absolute(page).string()) + " > " + quote(dom.string()) + " 2> " +
          quote(log.string()));
  EXPECT_EQ(rc, 0) << read_file(log);
  std::istringstream lines(read_file(log));
  for (std::string line; std::getline(lines, line);)
    if (line.find("Uncaught") != std::string::npos) errors += line + "\n";
  fs::remove_all(dir / ("profile-" + name));
  return read_file(dom);
}

TEST(InspectBrowser, TheLabPageDrawsTheLensAndTheLossCurveWithoutAnError) {
  GLASS_REQUIRE_CHROMIUM(chromium);
  const fs::path dir = fs::path(glass_test::binary_dir()) / "lab-browser";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path checkpoint = checkpoint_with_log(dir);
  const std::string prompt = "to be or";  // 8 characters
  const fs::path page = dir / "lab.html";
  ASSERT_EQ(run(std::string(glass_test::binary_dir("/glass inspect --checkpoint ")) +
                quote(checkpoint.string()) + " --prompt " + quote(prompt) +
                " --lens --top-k 3 --layer 1 --head 2 --html " + quote(page.string()) + " > " +
                quote((dir / "inspect.txt").string()) + " 2>&1"),
            0)
      << read_file(dir / "inspect.txt");
  std::string errors;
  const std::string dom = page_dom(chromium, page, "dom", errors);
  EXPECT_EQ(errors, "") << "JavaScript errors";
  EXPECT_NE(dom.find("data-rendered=\"yes\""), std::string::npos) << "script.js did not finish";
  EXPECT_NE(dom.find("data-lab-rendered=\"yes\""), std::string::npos)
      << "lab_page.js did not finish";
  // The lens: a row per point (embeddings, after layer 0, after layer 1), a cell per position,
  // each the most probable token with its probability; the row after --layer 1 marked.
  const std::size_t n = prompt.size();
  EXPECT_NE(dom.find("id=\"lens-table\""), std::string::npos);
  EXPECT_EQ(count(dom, "class=\"hm-cell lens-cell"), 3 * n);
  EXPECT_TRUE(std::regex_search(
      dom, std::regex(R"(data-point="2" data-pos="7" data-top="[^"]*" data-p="0\.[0-9]{4}")")));
  EXPECT_NE(dom.find("<tr class=\"selected\"><th class=\"rowlabel\">after layer 1 = output</th>"),
            std::string::npos);
  EXPECT_EQ(dom.find("id=\"lab-lens-section\" class=\"lab\" hidden"), std::string::npos)
      << "the lens shown";
  EXPECT_NE(dom.find("id=\"lab-history-section\" class=\"lab\" hidden"), std::string::npos)
      << "a view not asked stays hidden";
  // The inspector of the prompt above it, on --layer 1 --head 2, and the loss curve of log.csv.
  EXPECT_NE(dom.find("Attention: layers.1.attn.softmax, head 2 of 4"), std::string::npos);
  EXPECT_EQ(count(dom, "class=\"hm-cell"), 3 * n + 2 * n * n) << "the lens and two heatmaps";
  EXPECT_NE(dom.find("id=\"loss-svg\""), std::string::npos) << "loss curve from log.csv";
  EXPECT_EQ(dom.find("<p class=\"explain\">No training log"), std::string::npos);

  // Without a prompt (--history): no inspector, the history's note, the loss curve.
  const fs::path history = dir / "history.html";
  ASSERT_EQ(run(std::string(glass_test::binary_dir("/glass inspect --checkpoint ")) +
                quote(checkpoint.string()) + " --history --html " + quote(history.string()) +
                " > " + quote((dir / "history.txt").string()) + " 2>&1"),
            0)
      << read_file(dir / "history.txt");
  const std::string alone = page_dom(chromium, history, "history", errors);
  EXPECT_EQ(errors, "") << "JavaScript errors";
  EXPECT_NE(alone.find("data-lab-rendered=\"yes\""), std::string::npos);
  EXPECT_NE(alone.find("No interpretability record in this run directory."), std::string::npos);
  EXPECT_NE(alone.find("id=\"attention-section\" hidden"), std::string::npos);
  EXPECT_NE(alone.find("id=\"loss-svg\""), std::string::npos);
}

}  // namespace
