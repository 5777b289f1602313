// `glass inspect` through the real binary: output of both modes, --json and --html files, and
// every error case the README lists for it (clear message, non-zero exit, no file written).

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "fixtures.hpp"
#include "test_util.hpp"

#include "nn/decoder.hpp"
#include "checkpoint/checkpoint.hpp"

namespace fs = std::filesystem;

namespace {

using CommandResult = glass_test::GlassRun;
using glass_test::quote;
using glass_test::read_file;

class InspectCli : public ::testing::Test {
 protected:
  static fs::path dir_;
  static fs::path checkpoint_;

  /// One tiny checkpoint (2 layers, 4 heads / 2 KV heads of dim 4, context 12) for every test.
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("glass-inspect-cli-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    checkpoint_ = dir_ / "ckpt";
    glass_test::write_small_checkpoint(checkpoint_.string(), 12, 3);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  /// Runs `glass inspect ARGS` with stdout/stderr captured to files (stdout is not a terminal).
  static CommandResult inspect(const std::string& args) {
    return glass_test::run_glass("inspect " + args, dir_);
  }
  static std::string ckpt() { return "--checkpoint " + quote(checkpoint_.string()); }
};

fs::path InspectCli::dir_;
fs::path InspectCli::checkpoint_;

TEST_F(InspectCli, OverviewListsTheLayersSnapshotsAndTopK) {
  const CommandResult r = inspect(ckpt() + " --prompt 'to be' --layer 1 --top-k 3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* line :
       {"attn.q        (4, 5, 4)", "attn.k        (2, 5, 4)", "attn.scores   (4, 5, 5)",
        "attn.mask     (5, 5)", "attn.softmax  (4, 5, 5)", "attn.out      (5, 16)"})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
  EXPECT_NE(r.out.find("Layer 1 snapshots"), std::string::npos);
  EXPECT_NE(r.out.find("top 3 of"), std::string::npos);
  EXPECT_NE(r.out.find("\"to␣be\""), std::string::npos);
  EXPECT_NE(r.out.find("not an explanation of the prediction"), std::string::npos);
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << "no colour codes when stdout is a file";
}

TEST_F(InspectCli, SnapshotShowsTheHeadWithCharacterLabelsAndAHeatmap) {
  const CommandResult r =
      inspect(ckpt() + " --prompt 'to be' --layer 0 --head 2 --snapshot attn.softmax");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("layers.0.attn.softmax  shape (4, 5, 5)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("head 2 of 4: (5, 5)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  2 ␣"), std::string::npos) << "space shown as ␣ in the row labels";
  EXPECT_NE(r.out.find("Heatmap of attn.softmax"), std::string::npos);
  // Position 0 attends only to itself; future keys are shown as masked.
  EXPECT_NE(r.out.find("  0 t | 1.000     ·     ·     ·     ·\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  0 t |██········|"), std::string::npos) << "plain-text heatmap row 0";

  const CommandResult k = inspect(ckpt() + " --prompt 'to be' --head 3 --snapshot attn.k");
  ASSERT_EQ(k.exit_code, 0) << k.err;
  EXPECT_NE(k.out.find("query head 3 uses KV head 1"), std::string::npos) << k.out;
  EXPECT_EQ(k.out.find("Heatmap"), std::string::npos);
}

TEST_F(InspectCli, JsonAndHtmlFilesAreWritten) {
  const fs::path json = dir_ / "out.json", html = dir_ / "out.html";
  const CommandResult r = inspect(ckpt() + " --prompt 'that' --json " + quote(json.string()) +
                                  " --html " + quote(html.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(read_file(json));
  EXPECT_EQ(j["prompt"], "that");
  EXPECT_EQ(j["logits"]["shape"][0], 4);
  EXPECT_EQ(j["snapshots"]["layers.1.attn.softmax"]["shape"], (std::vector<int>{4, 4, 4}));
  const std::string page = read_file(html);
  EXPECT_NE(page.find("<!DOCTYPE html>"), std::string::npos);
  // The page carries exactly the --json data.
  const std::string tag = "<script type=\"application/json\" id=\"glass-inspection\">";
  const std::size_t begin = page.find(tag);
  ASSERT_NE(begin, std::string::npos);
  const std::size_t from = begin + tag.size();
  EXPECT_EQ(nlohmann::json::parse(page.substr(from, page.find("</script>", from) - from)), j);
  for (const auto& entry : fs::directory_iterator(dir_))
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos)
        << "temporary file left behind: " << entry.path();
}

TEST_F(InspectCli, ADashSendsTheJsonOrThePageToStandardOutputAndNoFileNamedDash) {
  // Run in a directory of its own: a file named "-" would land there.
  const fs::path cwd = dir_ / "dash";
  fs::create_directories(cwd);
  const std::string in_cwd = "cd " + quote(cwd.string()) + " && ";
  const fs::path file = dir_ / "dash.json";
  const CommandResult to_file = inspect(ckpt() + " --prompt 'that' --json " + quote(file.string()));
  ASSERT_EQ(to_file.exit_code, 0) << to_file.err;

  const CommandResult json =
      glass_test::run_glass("inspect " + ckpt() + " --prompt 'that' --json -", dir_, in_cwd);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(json.out, read_file(file))
      << "standard output holds exactly what the file holds, nothing else";
  EXPECT_EQ(nlohmann::json::parse(json.out)["prompt"], "that");

  const fs::path page = dir_ / "dash.html";
  const CommandResult html = glass_test::run_glass(
      "inspect " + ckpt() + " --prompt 'that' --html - --json " + quote(file.string()), dir_,
      in_cwd);
  ASSERT_EQ(html.exit_code, 0) << html.err;
  EXPECT_EQ(html.out.rfind("<!DOCTYPE html>", 0), 0u) << html.out.substr(0, 200);
  EXPECT_EQ(html.out.find("Layer 0 snapshots"), std::string::npos)
      << "no overview mixed into the page";
  EXPECT_NE(html.err.find("wrote " + file.string()), std::string::npos)
      << "the note on stderr" << html.err;

  const CommandResult both = glass_test::run_glass(
      "inspect " + ckpt() + " --prompt 'that' --json - --html -", dir_, in_cwd);
  EXPECT_EQ(both.exit_code, 1);
  EXPECT_NE(both.err.find("error: --json - and --html - both ask for standard output"),
            std::string::npos)
      << both.err;
  EXPECT_TRUE(fs::is_empty(cwd)) << "a file named '-' was written";

  const CommandResult help = inspect("--help");
  EXPECT_NE(help.out.find("- prints it on standard output"), std::string::npos) << help.out;
}

/// Every error: exit code 1, "error: ..." naming the problem, and no output file.
TEST_F(InspectCli, ErrorsAreClearAndExitNonZero) {
  const fs::path json = dir_ / "should-not-exist.json";
  const std::string out = " --json " + quote(json.string());
  struct Case {
    std::string args, expected;
  };
  const Case cases[] = {
      {ckpt() + " --prompt 'to' --layer 2",
       "--layer 2 is out of range: the model has 2 layers (0..1)"},
      {ckpt() + " --prompt 'to' --layer -1", "--layer -1 is out of range"},
      {ckpt() + " --prompt 'to' --head 4",
       "--head 4 is out of range: the model has 4 query heads (0..3)"},
      {ckpt() + " --prompt 'to' --snapshot attn.weights",
       "unknown snapshot 'attn.weights'; valid names: attn.q, attn.k, attn.v, attn.rope_q, attn.rope_k, "
       "attn.scores, attn.mask, attn.softmax, attn.mix, attn.out"},
      {ckpt() + " --prompt 'toXbe'", "'X' (U+0058) at position 2"},
      // Many unknown characters: the first five and a count, not the whole vocabulary.
      {ckpt() + " --prompt 'XYZQWV'", "6 character(s) outside the model's vocabulary of"},
      {ckpt() + " --prompt 'XYZQWV'",
       "'Q' (U+0051) at position 3, 'W' (U+0057) at position 4, and 1 more"},
      {ckpt() + " --prompt 'to be or not to'",
       "the prompt has 15 characters; the model's context is 12 characters"},
      {ckpt() + " --prompt ''", "the prompt is empty"},
      {"--checkpoint " + quote((dir_ / "no-such-dir").string()) + " --prompt 'to'",
       "does not exist"},
      {ckpt() + " --prompt 'to' --top-k 0", "--top-k must be at least 1"},
  };
  for (const Case& c : cases) {
    const CommandResult r = inspect(c.args + out);
    EXPECT_EQ(r.exit_code, 1) << c.args;
    EXPECT_NE(r.err.find("error: "), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_FALSE(fs::exists(json)) << c.args;
  }
}

TEST_F(InspectCli, AllowUnknownMapsToIdZeroAndBestLoadsBestWeights) {
  const CommandResult r = inspect(ckpt() + " --prompt 'toXbe' --allow-unknown --snapshot probs");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: 1 prompt character(s) outside the vocabulary"), std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("  2 X |"), std::string::npos) << "the row keeps the typed character\n"
                                                      << r.out;
  // No best.safetensors in this checkpoint: --best must say so instead of using other weights.
  const CommandResult best = inspect(ckpt() + " --prompt 'to' --best");
  EXPECT_EQ(best.exit_code, 1);
  EXPECT_NE(best.err.find("best.safetensors"), std::string::npos) << best.err;
}

TEST_F(InspectCli, AnUnwritableOutputFileIsAnError) {
  const CommandResult r =
      inspect(ckpt() + " --prompt 'to' --html " + quote((dir_ / "no-dir" / "x.html").string()));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("error: cannot write file"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "no-dir"));
}

TEST_F(InspectCli, AnEmptyCheckpointDirectoryIsAnError) {
  const fs::path empty = dir_ / "empty";
  fs::create_directories(empty);
  const CommandResult r = inspect("--checkpoint " + quote(empty.string()) + " --prompt 'to'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("error: cannot load checkpoint"), std::string::npos) << r.err;
}

}  // namespace
