// `glass sae inspect` through the real binary: a latent's page (contexts with the activating
// token marked, histogram, promoted and suppressed tokens) as text and JSON, a prompt's latents,
// and every bad input with a clear message and a non-zero exit: a latent out of range, an SAE of
// another model or of another point, a corrupted SAE file, neither or both of --latent/--prompt.
// And `glass sample --sae FILE --steer LATENT=SCALE`: scale 0 prints the unsteered text bit for
// bit, a large scale changes it and says what was steered, and its bad inputs are refused.

#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"

namespace fs = std::filesystem;
using glass_test::CliRun;
using glass_test::q;

namespace {

const char* kRecipe =
    " --batch-size 4 --context 16 --d-model 32 --n-layers 2 --n-heads 2 --n-kv-heads 1"
    " --ffn-hidden 32 --eval-iters 2 --sample-tokens 0 --warmup 5 --iters 30";

class SaeInspectCli : public ::testing::Test {
 protected:
  static fs::path dir_;
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("glass-sae-inspect-cli-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    glass_test::write_file(dir_ / "text.txt", glass_test::corpus_start(6000));
    for (const char* name : {"run", "other"}) {
      const CliRun r = glass_test::run_glass("train --data " + q((dir_ / "text.txt").string()) +
                                                 " --out " + q((dir_ / name).string()) + kRecipe +
                                                 (std::string(name) == "other" ? " --seed 9" : ""),
                                             dir_);
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
    const CliRun r = sae("train --latents 64 --k 4 --steps 40 --batch 256 --point layers.0.out");
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static CliRun sae(const std::string& args, const std::string& run = "run") {
    return glass_test::run_glass("sae " + args + " -m " + q((dir_ / run).string()) + " --data " +
                                     q((dir_ / "text.txt").string()),
                                 dir_);
  }
  static std::string sae_file() {
    return q((dir_ / "run" / "sae-layers.0.out.safetensors").string());
  }
};

fs::path SaeInspectCli::dir_;

TEST_F(SaeInspectCli, ALatentsPageShowsContextsHistogramAndLogitEffects) {
  // The latent that fires most often, found from the JSON of a first latent's overview.
  CliRun r = sae("inspect --json --latent 0 --contexts 5 --sae " + sae_file());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["latent"], 0);
  EXPECT_EQ(j["n_latents"], 64);
  EXPECT_EQ(j["point"], "layers.0.out");
  EXPECT_GT(j["tokens"].get<int>(), 100);
  EXPECT_LE(j["contexts"].size(), 5u);
  EXPECT_EQ(j["contexts"].size(), std::min<std::size_t>(5, j["fired"].get<std::size_t>()));
  double last = 1e9;
  for (const auto& c : j["contexts"]) {  // strongest first, each a one-token mark
    EXPECT_LE(c["activation"].get<double>(), last);
    last = c["activation"].get<double>();
    EXPECT_FALSE(c["token"].get<std::string>().empty());
  }
  std::size_t counted = 0;
  for (const auto& b : j["histogram"]["bins"]) counted += b.get<std::size_t>();
  EXPECT_EQ(counted, j["fired"].get<std::size_t>());
  EXPECT_EQ(j["promoted"].size(), 10u);
  EXPECT_GE(j["promoted"][0]["effect"].get<double>(), j["suppressed"][0]["effect"].get<double>());
  r = sae("inspect --latent 0 --sae " + sae_file());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("latent 0 of 64 at layers.0.out"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("promotes:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("suppresses:"), std::string::npos) << r.out;
}

TEST_F(SaeInspectCli, APromptsLatentsArePerPosition) {
  CliRun r = sae("inspect --json --top 3 --prompt 'Capitu' --sae " + sae_file());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["positions"].size(), 6u);
  EXPECT_EQ(j["positions"][0]["token"], "C");
  for (const auto& p : j["positions"]) EXPECT_LE(p["latents"].size(), 3u);
  r = sae("inspect --prompt 'Capitu' --sae " + sae_file());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("'C'"), std::string::npos) << r.out;
}

TEST_F(SaeInspectCli, ALatentOutOfRangeIsRefused) {
  const CliRun r = sae("inspect --latent 64 --sae " + sae_file());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--latent 64 is out of range: the SAE has latents 0 to 63"),
            std::string::npos)
      << r.err;
}

TEST_F(SaeInspectCli, NeitherOrBothOfLatentAndPromptIsRefused) {
  CliRun r = sae("inspect --sae " + sae_file());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("give one of --latent"), std::string::npos) << r.err;
  r = sae("inspect --latent 1 --prompt x --sae " + sae_file());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("give one of --latent"), std::string::npos) << r.err;
}

TEST_F(SaeInspectCli, AnSaeOfAnotherModelOrPointIsRefused) {
  CliRun r = sae("inspect --latent 1 --sae " + sae_file(), "other");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("trained on another model"), std::string::npos) << r.err;
  r = sae("inspect --latent 1 --point layers.1.out --sae " + sae_file());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("reads the point layers.0.out, not layers.1.out"), std::string::npos)
      << r.err;
}

TEST_F(SaeInspectCli, ACorruptedSaeFileIsRefused) {
  const fs::path copy = dir_ / "corrupt.safetensors";
  fs::copy_file(dir_ / "run" / "sae-layers.0.out.safetensors", copy,
                fs::copy_options::overwrite_existing);
  nlohmann::json m =
      nlohmann::json::parse(glass_test::read_file(dir_ / "run" / "sae-layers.0.out.json"));
  m["files"]["corrupt.safetensors"] = m["files"]["sae-layers.0.out.safetensors"];
  glass_test::write_file(dir_ / "corrupt.json", m.dump());
  std::string bytes = glass_test::read_file(copy);
  bytes[bytes.size() - 5] ^= 0x40;
  glass_test::write_file(copy, bytes);
  const CliRun r = sae("inspect --latent 1 --sae " + q(copy.string()));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("changed or corrupted"), std::string::npos) << r.err;
}

CliRun sample(const fs::path& dir, const std::string& args) {
  return glass_test::run_glass(
      "sample -m " + q((dir / "run").string()) + " --ops reference -p Capitu -n 60 -s 5 " + args,
      dir);
}

TEST_F(SaeInspectCli, SteeringAtScaleZeroPrintsTheUnsteeredTextBitForBit) {
  const CliRun plain = sample(dir_, "");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const CliRun zero = sample(dir_, "--sae " + sae_file() + " --steer 3=0 --steer 5=0");
  ASSERT_EQ(zero.exit_code, 0) << zero.err;
  EXPECT_EQ(zero.out, plain.out);
  EXPECT_NE(zero.err.find("steering: latent 3 x 0 + latent 5 x 0 added at layers.0.out"),
            std::string::npos)
      << zero.err;
  const CliRun steered = sample(dir_, "--sae " + sae_file() + " --steer 3=50");
  ASSERT_EQ(steered.exit_code, 0) << steered.err;
  EXPECT_NE(steered.out, plain.out);
  EXPECT_EQ(steered.out.rfind("Capitu", 0), 0u) << steered.out;  // the prompt, then new text
}

TEST_F(SaeInspectCli, BadSteeringIsRefused) {
  const std::pair<std::string, std::string> cases[] = {
      {"--steer 3=1", "--steer needs --sae FILE"},
      {"--sae " + sae_file() + " --steer 3", "is not LATENT=SCALE"},
      {"--sae " + sae_file() + " --steer x=1", "is not LATENT=SCALE"},
      {"--sae " + sae_file() + " --steer 3=1.5.2", "is not LATENT=SCALE"},
      {"--sae " + sae_file() + " --steer 3=nan", "the scale must be a finite number"},
      {"--sae " + sae_file() + " --steer 3=1e999", "the scale must be a finite number"},
      {"--sae " + sae_file() + " --steer 64=1", "latent 64 is out of range"},
  };
  for (const auto& [args, message] : cases) {
    const CliRun r = sample(dir_, args);
    EXPECT_NE(r.exit_code, 0) << args;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << ": " << r.err;
  }
  const CliRun other = glass_test::run_glass(
      "sample -m " + q((dir_ / "other").string()) + " -n 5 --sae " + sae_file() + " --steer 3=1",
      dir_);
  EXPECT_NE(other.exit_code, 0);
  EXPECT_NE(other.err.find("trained on another model"), std::string::npos) << other.err;
}

}  // namespace
