// `glass sae train` and `glass sae eval` through the real binary: a small SAE trained on a tiny
// model, its file and manifest beside the checkpoint (the save's own manifest untouched), and
// every bad input with a clear message and a non-zero exit: a point that does not exist, k >=
// latents, an SAE of another model or another point, a corrupted SAE file.

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
const char* kSae = " --latents 64 --k 4 --steps 40 --batch 256";

class SaeCli : public ::testing::Test {
 protected:
  static fs::path dir_;
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("glass-sae-cli-" + std::to_string(::getpid()));
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
    const CliRun r = sae("train" + std::string(kSae) + " --point layers.0.out");
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static CliRun sae(const std::string& args, const std::string& run = "run") {
    return glass_test::run_glass("sae " + args + " -m " + q((dir_ / run).string()) + " --data " +
                                     q((dir_ / "text.txt").string()),
                                 dir_);
  }
  static fs::path sae_file() { return dir_ / "run" / "sae-layers.0.out.safetensors"; }
};

fs::path SaeCli::dir_;

TEST_F(SaeCli, TrainsAndWritesTheFileWithItsOwnManifest) {
  ASSERT_TRUE(fs::exists(sae_file()));
  const nlohmann::json m =
      nlohmann::json::parse(glass_test::read_file(dir_ / "run" / "sae-layers.0.out.json"));
  EXPECT_EQ(m["format"], "glass-sae");
  EXPECT_EQ(m["point"], "layers.0.out");
  EXPECT_EQ(m["n_latents"], 64);
  EXPECT_EQ(m["k"], 4);
  EXPECT_EQ(m["model"]["sha256"].get<std::string>().size(), 64u);
  EXPECT_TRUE(m["training"]["validation"].contains("fvu"));
  EXPECT_EQ(m["training"]["ops"], "fast");
  EXPECT_EQ(m["training"]["reuse"], 4);
  // The save's own manifest does not list the SAE: it was never resealed.
  const std::string save_manifest =
      glass_test::read_file(fs::canonical(dir_ / "run" / "current") / "manifest.json");
  EXPECT_EQ(save_manifest.find("sae-"), std::string::npos);
  const CliRun r = sae("eval --sae " + q(sae_file().string()));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("FVU"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("spliced"), std::string::npos) << r.out;
}

TEST_F(SaeCli, TheReferenceOpsAndAReuseAreTakenAndBadValuesRefused) {
  const fs::path out = dir_ / "reference.safetensors";
  const CliRun r = sae("train --latents 64 --k 4 --steps 3 --batch 64 --ops reference --reuse 2" +
                       std::string(" --out ") + q(out.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json m = nlohmann::json::parse(glass_test::read_file(dir_ / "reference.json"));
  EXPECT_EQ(m["training"]["ops"], "reference");
  EXPECT_EQ(m["training"]["reuse"], 2);
  const CliRun bad_ops = sae("train --steps 1 --ops quick");
  EXPECT_NE(bad_ops.exit_code, 0);
  EXPECT_NE(bad_ops.err.find("--ops"), std::string::npos) << bad_ops.err;
  const CliRun bad_reuse = sae("train --steps 1 --reuse 0");
  EXPECT_NE(bad_reuse.exit_code, 0);
  EXPECT_NE(bad_reuse.err.find("--reuse"), std::string::npos) << bad_reuse.err;
}

TEST_F(SaeCli, EvalCensusCountsTheLatentsOnMoreThanOneCharacter) {
  const CliRun r = sae("eval --census 10 --sae " + q(sae_file().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("most frequent latents"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("census: "), std::string::npos) << r.out;
  const CliRun bad = sae("eval --census 0 --sae " + q(sae_file().string()));
  EXPECT_NE(bad.exit_code, 0);
}

TEST_F(SaeCli, APointThatDoesNotExistListsTheValidOnes) {
  const CliRun r = sae("train" + std::string(kSae) + " --point layers.5.out");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("embeddings, layers.0.out, layers.1.out"), std::string::npos) << r.err;
}

TEST_F(SaeCli, KOfAtLeastTheLatentsIsRefused) {
  const CliRun r = sae("train --latents 16 --k 16 --steps 1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--k 16 must be less than --latents 16"), std::string::npos) << r.err;
}

TEST_F(SaeCli, AnSaeOfAnotherModelIsRefused) {
  const CliRun r = sae("eval --sae " + q(sae_file().string()), "other");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("trained on another model"), std::string::npos) << r.err;
}

TEST_F(SaeCli, AnSaeOfAnotherPointIsRefused) {
  const CliRun r = sae("eval --point layers.1.out --sae " + q(sae_file().string()));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("reads the point layers.0.out, not layers.1.out"), std::string::npos)
      << r.err;
}

TEST_F(SaeCli, ACorruptedSaeFileIsRefused) {
  const fs::path copy = dir_ / "corrupt.safetensors";
  fs::copy_file(sae_file(), copy, fs::copy_options::overwrite_existing);
  fs::copy_file(dir_ / "run" / "sae-layers.0.out.json", dir_ / "corrupt.json",
                fs::copy_options::overwrite_existing);
  // The manifest names its file: point the copy's manifest at the copy.
  nlohmann::json m = nlohmann::json::parse(glass_test::read_file(dir_ / "corrupt.json"));
  m["files"]["corrupt.safetensors"] = m["files"]["sae-layers.0.out.safetensors"];
  glass_test::write_file(dir_ / "corrupt.json", m.dump());
  EXPECT_EQ(sae("eval --sae " + q(copy.string())).exit_code, 0);  // intact: accepted
  std::string bytes = glass_test::read_file(copy);
  bytes[bytes.size() - 5] ^= 0x40;  // one flipped bit in the weights
  glass_test::write_file(copy, bytes);
  CliRun r = sae("eval --sae " + q(copy.string()));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("changed or corrupted"), std::string::npos) << r.err;
  glass_test::write_file(dir_ / "corrupt.json", "{not json");
  r = sae("eval --sae " + q(copy.string()));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("cannot read the SAE"), std::string::npos) << r.err;
  r = sae("eval --sae " + q((dir_ / "missing.safetensors").string()));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("cannot read the SAE"), std::string::npos) << r.err;
}

}  // namespace
