// The sample command's job (sample/run.hpp): prepare_sample and generate_samples on a small
// untrained checkpoint.

#include "sample/run.hpp"

#include <filesystem>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "data/visible_text.hpp"
#include "fixtures.hpp"
#include "raw_control.hpp"
#include "test_util.hpp"

namespace {

namespace fs = std::filesystem;

class SampleRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = glass_test::temp_dir("sample_run");
    fs::create_directories(dir_);
    glass_test::write_small_checkpoint((dir_ / "ckpt").string(), 16, 3, 0.5);
    options_.checkpoint = (dir_ / "ckpt").string();
    options_.prompt = "to be";
    options_.tokens = 6;
    options_.sampling.temperature = 0;  // greedy: every sample alike
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  glass::SampleOptions options_;
};

TEST_F(SampleRunTest, EachSampleIsThePromptAndItsContinuationStreamedAsText) {
  options_.num_samples = 2;
  glass::PreparedSample p = glass::prepare_sample(options_);
  std::ostringstream out;
  const glass::SampleRun run = glass::generate_samples(p, options_, out);
  EXPECT_EQ(run.generated, 12u);
  const std::string text = out.str();
  const std::size_t dashes = text.find("\n---------------\n");
  ASSERT_NE(dashes, std::string::npos) << text;
  const std::string first = text.substr(0, dashes + 1);
  EXPECT_EQ(first.rfind("to be", 0), 0u) << text;
  EXPECT_EQ(text.substr(dashes + 17), first) << "greedy samples differ";
}

TEST_F(SampleRunTest, JsonHoldsEachTokenWithItsProbabilities) {
  options_.json = true;
  glass::PreparedSample p = glass::prepare_sample(options_);
  std::ostringstream out;
  glass::generate_samples(p, options_, out);
  const nlohmann::json j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j["prompt"], "to be");
  EXPECT_EQ(j["prompt_tokens"].size(), 5u);
  EXPECT_EQ(j["context"], 16);
  ASSERT_EQ(j["samples"].size(), 1u);
  const nlohmann::json& tokens = j["samples"][0]["tokens"];
  ASSERT_EQ(tokens.size(), 6u);
  std::string joined;
  for (const auto& t : tokens) {
    EXPECT_DOUBLE_EQ(t["prob"].get<double>(), 1.0) << "greedy: the token drawn had all the mass";
    EXPECT_GT(t["model_prob"].get<double>(), 0.0);
    joined += t["text"].get<std::string>();
  }
  EXPECT_EQ(j["samples"][0]["text"], joined);
}

TEST_F(SampleRunTest, TheWindowAndTheUnknownCharactersAreFactsForTheFrontEnd) {
  options_.window = 17;  // past the 16 positions
  try {
    glass::prepare_sample(options_);
    ADD_FAILURE() << "a window past the positions was taken";
  } catch (const glass::WindowTooLongError& e) {
    EXPECT_EQ(e.asked(), 17u);
    EXPECT_EQ(e.positions(), 16u);
  }
  options_.window = 4;  // a prompt of 5 characters keeps its last 4
  glass::PreparedSample p = glass::prepare_sample(options_);
  EXPECT_EQ(p.prompt_tokens, 5u);
  EXPECT_EQ(p.prompt.size(), 4u);
  EXPECT_EQ(p.shown_prompt, "o be");
  options_.window = 0;
  options_.prompt = "to be, or";  // ',' is not in the vocabulary
  EXPECT_THROW(glass::prepare_sample(options_), glass::UnknownCharacterError);
  options_.allow_unknown = true;
  p = glass::prepare_sample(options_);
  EXPECT_EQ(p.unknown, 1u);
  EXPECT_NE(p.unknown_which.find("U+002C"), std::string::npos) << p.unknown_which;
}

}  // namespace

namespace {

/// A checkpoint whose every token is a control character or part of the escape sequence ESC[2J
/// (clear the screen): NUL, ^D, ESC, '[', '2', 'J', CR, DEL and the C1 control CSI (U+009B).
/// Whatever its untrained model draws, the text is mostly control characters.
void write_control_checkpoint(const std::string& dir) {
  const std::u32string text(U"\0\x04\x1B[2J\r\x7F\u009B", 9);
  const glass::Tokenizer tokenizer = glass::Tokenizer::from_text(text);
  glass::ModelConfig config = glass_test::small_config(tokenizer.vocab_size(), 16);
  config.init_std = 0.5;
  glass::save_model(dir, glass::Decoder(config, 3), tokenizer);
}

}  // namespace

TEST_F(SampleRunTest, ControlCharactersReachTheOutputAsVisibleEscapesUnlessRaw) {
  write_control_checkpoint((dir_ / "controls").string());
  options_.checkpoint = (dir_ / "controls").string();
  options_.prompt = std::string("\x1B[2J\0", 5);  // the prompt is shown with the text
  options_.tokens = 200;
  options_.sampling.temperature = 1;
  glass::PreparedSample p = glass::prepare_sample(options_);
  std::ostringstream shown;
  glass::generate_samples(p, options_, shown);
  EXPECT_FALSE(glass_test::has_raw_control(shown.str())) << shown.str();
  EXPECT_EQ(shown.str().rfind("\xE2\x90\x9B[2J\xE2\x90\x80", 0), 0u) << "the prompt: ␛[2J␀";
  EXPECT_NE(shown.str().find("U+009B"), std::string::npos);

  options_.raw = true;  // --raw: the same draws, byte for byte
  glass::PreparedSample p_raw = glass::prepare_sample(options_);
  std::ostringstream raw;
  glass::generate_samples(p_raw, options_, raw);
  EXPECT_EQ(raw.str().rfind(options_.prompt, 0), 0u);
  EXPECT_EQ(glass::escape_controls(raw.str()), shown.str());
  EXPECT_NE(raw.str().find('\x1B'), std::string::npos);
  EXPECT_NE(raw.str().find("\xC2\x9B"), std::string::npos);

  options_.raw = false;
  options_.json = true;  // JSON: exact text, every control escaped by JSON itself
  glass::PreparedSample p_json = glass::prepare_sample(options_);
  std::ostringstream json;
  glass::generate_samples(p_json, options_, json);
  for (char c : json.str()) EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20 && c != '\n');
  const nlohmann::json j = nlohmann::json::parse(json.str());
  EXPECT_EQ(options_.prompt + j["samples"][0]["text"].get<std::string>() + "\n", raw.str());
}
