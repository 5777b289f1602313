// The recipe options through the real binary: `glass train --help` lists --qk-norm, --mlp and
// --logit-softcap; a run trained with all three records them in config.json, a --resume keeps
// them (and warns of one given otherwise), `glass sample` generates from it with and without the
// KV cache alike; bad values are refused with a clear message.

#include <string>

#include <gtest/gtest.h>

#include "cli_test_util.hpp"

namespace fs = std::filesystem;

namespace {

using glass_test::GlassRun;
using glass_test::quote;

/// The "model" object of a config.json text (the save's step, further down, changes).
std::string model_block(const std::string& config) {
  const std::size_t begin = config.find("\"model\""), end = config.find("\"tokenizer\"");
  EXPECT_NE(begin, std::string::npos) << config;
  return config.substr(begin, end - begin);
}

class RecipeOptionsCli : public ::testing::Test {
 protected:
  static fs::path dir_;

  static GlassRun glass(const std::string& args) {
    return glass_test::run_glass(args, dir_, "timeout 120 ");
  }
  static std::string data() { return " --data " + quote((dir_ / "text.txt").string()); }

  static void SetUpTestSuite() {
    dir_ = glass_test::temp_dir("glass-recipe-options-cli");
    glass_test::write_file(dir_ / "text.txt", glass_test::corpus_start(6000));
  }
};

fs::path RecipeOptionsCli::dir_;

TEST_F(RecipeOptionsCli, HelpListsTheOptions) {
  const GlassRun r = glass("train --help");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* word :
       {"--qk-norm", "--mlp", "swiglu", "relu2", "--logit-softcap", "Recipe options"})
    EXPECT_NE(r.out.find(word), std::string::npos) << word << "\n" << r.out;
}

TEST_F(RecipeOptionsCli, AResumeKeepsTheOptionsOfItsCheckpoint) {
  const fs::path run = dir_ / "run";
  const std::string base =
      data() + " --out " + quote(run.string()) + " --eval-every 2" + glass_test::tiny(5);
  GlassRun r = glass("train --iters 2" + base + " --qk-norm --mlp relu2 --logit-softcap 30");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string config = model_block(glass_test::read_file(run / "config.json"));
  for (const char* field : {"\"qk_norm\": true", "\"mlp\": \"relu2\"", "\"logit_softcap\": 30"})
    EXPECT_NE(config.find(field), std::string::npos) << field << "\n" << config;
  // Resumed without the flags: the checkpoint's options go on, nothing is warned of.
  r = glass("train --iters 4 --resume" + base);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("resuming from step 2"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("is ignored with --resume"), std::string::npos) << r.err;
  EXPECT_EQ(model_block(glass_test::read_file(run / "config.json")), config);
  // Resumed with other values: warned of, and still the checkpoint's.
  r = glass("train --iters 6 --resume" + base + " --mlp swiglu --logit-softcap 15");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: --mlp is ignored with --resume"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("warning: --logit-softcap is ignored with --resume"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("--qk-norm is ignored"), std::string::npos) << r.err;
  EXPECT_EQ(model_block(glass_test::read_file(run / "config.json")), config);
  // Generation reads the options from config.json: with and without the KV cache alike.
  const std::string sample = "sample --checkpoint " + quote(run.string()) +
                             " --prompt 'Capitu ' --tokens 8 "
                             "--temperature 0";
  const GlassRun cached = glass(sample);
  const GlassRun uncached = glass(sample + " --no-kv-cache");
  ASSERT_EQ(cached.exit_code, 0) << cached.err;
  EXPECT_EQ(cached.out, uncached.out);
}

TEST_F(RecipeOptionsCli, BadValuesAreRefused) {
  const std::string base = data() + " --out " + quote((dir_ / "bad").string()) + " --iters 2";
  GlassRun r = glass("train" + base + " --mlp gelu");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--mlp"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("relu2"), std::string::npos) << r.err;
  r = glass("train" + base + " --logit-softcap -1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--logit-softcap"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(">= 0"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "bad" / "config.json"));
}

}  // namespace
