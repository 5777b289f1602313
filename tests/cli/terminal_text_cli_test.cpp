// Nothing raw reaches a terminal, through the real binary: a model trained on a text of control
// characters (^D, ESC[2J, CR, DEL, the C1 control CSI) prints them as visible escapes in the
// training log's samples, in `glass sample` and in `glass inspect`; `glass sample --raw` writes
// the bytes; `--json` keeps the exact text (JSON escapes the controls).

#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"
#include "raw_control.hpp"
#include "data/visible_text.hpp"

namespace fs = std::filesystem;

namespace {

using glass_test::has_raw_control;
using glass_test::q;

class TerminalTextCli : public ::testing::Test {
 protected:
  static fs::path dir_, run_;
  static glass_test::CliRun train_;

  static glass_test::CliRun glass(const std::string& args) {
    return glass_test::run_glass(args, dir_, "timeout 300 ");
  }

  static void SetUpTestSuite() {
    dir_ = glass_test::temp_dir("glass-terminal-text-cli");
    std::string text;
    for (int i = 0; i < 400; ++i) text += "ab\x04\x1B[2J\r\x7F\xC2\x9B cd\n";
    glass_test::write_file(dir_ / "controls.txt", text);
    run_ = dir_ / "run";
    train_ = glass("train --data " + q((dir_ / "controls.txt").string()) + " --out " +
                   q(run_.string()) + " --iters 20 --eval-every 10" + glass_test::tiny(60));
  }
};

fs::path TerminalTextCli::dir_, TerminalTextCli::run_;
glass_test::CliRun TerminalTextCli::train_;

TEST_F(TerminalTextCli, TrainingSamplesShowControlCharactersAsGlyphs) {
  ASSERT_EQ(train_.exit_code, 0) << train_.out << train_.err;
  EXPECT_NE(train_.out.find("---- sample"), std::string::npos) << train_.out;
  EXPECT_FALSE(has_raw_control(train_.out)) << train_.out;
  EXPECT_FALSE(has_raw_control(train_.err)) << train_.err;
}

TEST_F(TerminalTextCli, SampleEscapesControlsUnlessRawAndJsonIsExact) {
  ASSERT_EQ(train_.exit_code, 0) << train_.err;
  const std::string args =
      "sample -m " + q(run_.string()) + " -n 200 --temp 1 -p " + q("a\x1B[2J\xC2\x9B");
  const glass_test::CliRun shown = glass(args);
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_FALSE(has_raw_control(shown.out)) << shown.out;
  EXPECT_EQ(shown.out.rfind("a\xE2\x90\x9B[2JU+009B", 0), 0u) << shown.out;

  const glass_test::CliRun raw = glass(args + " --raw");
  ASSERT_EQ(raw.exit_code, 0) << raw.err;
  EXPECT_TRUE(has_raw_control(raw.out)) << "the model trained on controls drew none";
  EXPECT_EQ(raw.out.rfind("a\x1B[2J\xC2\x9B", 0), 0u);
  EXPECT_EQ(glass::escape_controls(raw.out), shown.out) << "the same draws, escaped";

  const glass_test::CliRun json = glass(args + " --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  for (char c : json.out) EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20 && c != '\n');
  const nlohmann::json j = nlohmann::json::parse(json.out);
  EXPECT_EQ("a\x1B[2J\xC2\x9B" + j["samples"][0]["text"].get<std::string>() + "\n", raw.out);
}

TEST_F(TerminalTextCli, InspectShowsThePromptsControlsAsGlyphs) {
  ASSERT_EQ(train_.exit_code, 0) << train_.err;
  const glass_test::CliRun r =
      glass("inspect -m " + q(run_.string()) + " -p " + q("ab\x04\x1B[2J\xC2\x9B"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(has_raw_control(r.out)) << r.out;
  EXPECT_NE(r.out.find("U+009B"), std::string::npos) << r.out;
}

}  // namespace
