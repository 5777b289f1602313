// The interpretability lab of the live page (web/lab.js) in headless Chromium: a server on a
// run directory whose saves hold interp.json records; the page types a prompt, the logit-lens
// grid appears (its output row checked against the interp/ library), two heads are clicked
// and the next-token bars change to the library's ablated distribution; the head scores are
// drawn over the saves, and a run without records says so. A screenshot goes to the build
// tree (build/serve-lab-browser/lab.png) for a human to look at.
//
// Chromium is required (scripts/install-deps.sh installs Debian's `chromium`): without it the
// test FAILS. Set GLASS_SKIP_BROWSER=1 to skip it explicitly. GLASS_CHROMIUM=/path overrides
// the browser binary.

#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "checkpoint/checkpoint.hpp"
#include "inspect/interp_report.hpp"
#include "data/text.hpp"
#include "fixtures.hpp"
#include "interp/interp.hpp"
#include "interp_fixtures.hpp"
#include "serve/server.hpp"
#include "test_util.hpp"
#include "test_paths.hpp"

namespace fs = std::filesystem;
using glass_test::quote;
using glass_test::read_file;

namespace {

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
/// tests/serve/serve_cli_test.cpp.
const std::string kFlags =
    " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --no-proxy-server"
    " --disable-background-networking --disable-component-update --disable-sync"
    " --disable-extensions --disable-dev-shm-usage --user-data-dir=";

/// The text of an attribute as the DOM writes it (& < > " escaped).
std::string dom_escaped(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '&')
      out += "&amp;";
    else if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

/// A server watching `run` on a free port.
std::unique_ptr<glass::Server> serve(const fs::path& run) {
  glass::ServeOptions options;
  options.checkpoint = run.string();
  options.port = 0;
  options.probe = "to be";
  options.poll_seconds = 0.1;
  auto server = std::make_unique<glass::Server>(options);
  server->start();
  return server;
}

TEST(LabBrowser, TheLensTheClickedHeadsAndTheScoresOverTheSaves) {
  const char* skip = std::getenv("GLASS_SKIP_BROWSER");
  if (skip && std::string(skip) == "1") GTEST_SKIP() << "GLASS_SKIP_BROWSER=1";
  const std::string chromium = find_chromium();
  ASSERT_FALSE(chromium.empty())
      << "Chromium is not installed, so the live page cannot be tested in a browser.\n"
         "Install it with: apt-get install chromium (scripts/install-deps.sh does), or set\n"
         "GLASS_SKIP_BROWSER=1 to skip this test explicitly.";
  const fs::path dir = fs::path(glass_test::binary_dir()) / "serve-lab-browser";
  fs::remove_all(dir);
  fs::create_directories(dir);

  // A run of 5 saves whose records tell a story: head 1 of layer 0 becomes a previous-token
  // head after step 200, head 2 of layer 1 an induction head after step 300; the others stay
  // low, and the first-position share of layer 1 falls.
  const fs::path run_dir = dir / "run";
  fs::create_directories(run_dir);
  for (long step : {0, 100, 200, 300, 400}) {
    const double t = step / 400.0;
    interp_test::save_with_record(
        run_dir, step,
        interp_test::record_with(step, [t](const std::string& kind, int l, int h) {
          const double jump = [](double x) { return 1 / (1 + std::exp(-x)); }(12 * (t - 0.45));
          if (kind == "previous_token")
            return l == 0 && h == 1 ? 0.1 + 0.8 * jump : 0.05 + 0.02 * h;
          if (kind == "induction")
            return l == 1 && h == 2 ? 0.02 + 0.6 * std::max(0.0, t - 0.6) / 0.4 : 0.01 * (h + 1);
          if (kind == "first_position") return l == 1 ? 0.6 - 0.4 * t + 0.03 * h : 0.2 + 0.02 * h;
          return l == 0 && h == 1 ? 0.02 + 0.5 * jump : 0.01 * (l + h) * t;  // Δloss
        }).dump());
  }
  auto server = serve(run_dir);
  const std::string base = "http://127.0.0.1:" + std::to_string(server->port()) + "/";
  auto dump = [&](const std::string& name, const std::string& url) {
    const fs::path file = dir / (name + ".html");
    const int rc =
        run("timeout 120 " + chromium + kFlags + quote((dir / ("profile-" + name)).string()) +
            " --virtual-time-budget=20000 --dump-dom " + quote(url) + " > " + quote(file.string()) +
            " 2> " + quote((dir / (name + ".log")).string()));
    EXPECT_EQ(rc, 0) << read_file(dir / (name + ".log"));
    fs::remove_all(dir / ("profile-" + name));
    return read_file(file);
  };

  // A prompt typed into the box, then heads 1.2 and 0.1 clicked.
  const std::string prompt = "to be or";
  const std::size_t n = prompt.size();
  const std::string dom = dump("lab", base + "#type=to%20be%20or&ablate=1.2,0.1");
  EXPECT_NE(dom.find("data-prompt=\"to be or\""), std::string::npos) << "the typed prompt";
  EXPECT_NE(dom.find("data-lens-shown="), std::string::npos) << "the lens arrived";

  // The lens: 3 rows (embeddings, after layer 0, after layer 1 = output) of 8 cells; the output
  // row's top tokens are the library's (the model served is the last save's).
  const glass::Checkpoint loaded = glass::load_checkpoint(run_dir.string());
  const std::vector<std::int32_t> ids =
      loaded.tokenizer().chars()->encode(glass::utf8_to_u32(prompt));
  const glass::LogitLens lens = glass::logit_lens(loaded.model(), ids, 1);
  const std::vector<std::string> labels = glass::token_labels(loaded);  // as the report's "text"
  EXPECT_EQ(count(dom, "class=\"hm-cell lens-cell"), 3 * n);
  const std::regex cell_re(
      R"re(data-point="2" data-pos="([0-9]+)" data-top="([^"]*)" data-p="([0-9.]+)")re");
  std::size_t cells = 0;
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), cell_re);
       it != std::sregex_iterator(); ++it, ++cells) {
    const std::size_t t = std::stoul((*it)[1]);
    ASSERT_LT(t, n);
    const std::int32_t id = lens.top_ids(2, t, 0);
    EXPECT_EQ((*it)[2], dom_escaped(labels[static_cast<std::size_t>(id)])) << "position " << t;
    EXPECT_NEAR(std::stod((*it)[3]), lens.top_probs(2, t, 0), 6e-5) << "position " << t;
  }
  EXPECT_EQ(cells, n) << "the output row";

  // The clicks: both heads marked, and the bars are the library's distributions without and
  // with those two heads zeroed.
  EXPECT_NE(dom.find("data-ablated=\"0.1,1.2\""), std::string::npos) << "the two heads clicked";
  EXPECT_EQ(count(dom, "class=\"head-cell"), 8u) << "2 layers of 4 heads";
  EXPECT_EQ(count(dom, "class=\"head-cell ablated\""), 2u);
  const glass::NextTokenShift shift =
      glass::next_token_shift(loaded.model(), ids, {{0, 1}, {1, 2}}, glass::AblationMode::zero);
  const std::regex bar_re(
      R"re(class="ablation-bar" data-char="([^"]*)" data-id="([0-9]+)" data-p-normal="([0-9.]+)" data-p-ablated="([0-9.]+)")re");
  std::size_t bars = 0, changed = 0;
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), bar_re); it != std::sregex_iterator();
       ++it, ++bars) {
    const std::string c = (*it)[1];
    const std::size_t id = std::stoul((*it)[2]);
    ASSERT_LT(id, labels.size()) << c;
    EXPECT_EQ(c, dom_escaped(labels[id]));
    // The page writes 4 decimals.
    EXPECT_NEAR(std::stod((*it)[3]), shift.before(id), 6e-5) << c;
    EXPECT_NEAR(std::stod((*it)[4]), shift.after(id), 6e-5) << c;
    if ((*it)[3] != (*it)[4]) ++changed;
  }
  EXPECT_GE(bars, 10u) << "the normal top 10, and those the ablation brings up";
  EXPECT_GE(changed, 5u) << "the bars changed with the clicks";
  const std::regex kl_re(R"re(KL\(normal ‖ ablated\) = ([0-9.]+) nats)re");
  std::smatch kl;
  ASSERT_TRUE(std::regex_search(dom, kl, kl_re)) << "the KL divergence shown";
  EXPECT_NEAR(std::stod(kl[1]), shift.kl_divergence, 6e-5);

  // The scores of the 5 saves, a chart per kind under the validation loss.
  EXPECT_NE(dom.find("data-scores-recorded=\"5\""), std::string::npos);
  for (const char* id : {"scores-loss", "scores-previous_token", "scores-induction",
                         "scores-first_position", "scores-ablation_delta_loss"})
    EXPECT_NE(dom.find(std::string("id=\"") + id + "\""), std::string::npos) << id;
  EXPECT_NE(dom.find("5 save(s) with scores, steps 0 to 400"), std::string::npos);

  // A screenshot of the lab, for a human to judge.
  const fs::path png = dir / "lab.png";
  ASSERT_EQ(run("timeout 120 " + chromium + kFlags + quote((dir / "profile-shot").string()) +
                " --virtual-time-budget=20000 --screenshot=" + quote(png.string()) +
                " --window-size=1280,4200 --hide-scrollbars " +
                quote(base + "#type=to%20be%20or&ablate=1.2,0.1") + " > " +
                quote((dir / "shot.log").string()) + " 2>&1"),
            0)
      << read_file(dir / "shot.log");
  EXPECT_GT(read_file(png).size(), 10000u) << "screenshot too small to show the page";
  fs::remove_all(dir / "profile-shot");
  std::cout << "screenshot: " << png.string() << "\n";
  server.reset();

  // A run without records: the page says the scores are not recorded, and the lens and the
  // ablation work as before.
  const fs::path bare = dir / "bare";
  fs::create_directories(bare);
  interp_test::save_with_record(bare, 0, "");
  server = serve(bare);
  const std::string plain = dump(
      "bare", "http://127.0.0.1:" + std::to_string(server->port()) + "/#prompt=to%20be&ablate=0.0");
  EXPECT_NE(plain.find("The head scores are not recorded for this run"), std::string::npos);
  EXPECT_NE(plain.find("data-scores-recorded=\"0\""), std::string::npos);
  EXPECT_EQ(count(plain, "class=\"hm-cell lens-cell"), 3 * 5u);
  EXPECT_NE(plain.find("data-ablated=\"0.0\""), std::string::npos);
}

}  // namespace
