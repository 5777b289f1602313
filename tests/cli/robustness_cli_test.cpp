// Inputs a new user tried that used to misbehave, through the real `glass` binary:
// - a text with more distinct characters than the vocabulary cap (was: "does not match the
//   checkpoint's vocabulary" on a fresh run; now the rarest become the unknown token);
// - absurd sizes (--d-model 1000000000, --batch-size 100000000: "std::bad_alloc" or minutes of
//   swapping; now a message before anything big is allocated), also from a corrupt config.json;
// - NaN weights in model.safetensors (sample printed garbage, eval printed "loss nan" with exit 0,
//   inspect hung drawing a bar of 2^63 blocks; now the checkpoint is refused);
// - --temperature 1e-320 (logits / T overflowed; now it is greedy);
// - --seed 18446744073709551615 (said "must be a non-negative integer");
// - --data /dev/zero or /dev/urandom (read until the memory ran out; now the first NUL stops it);
// - glass serve --probe with bytes that are not UTF-8 (was: "cannot load checkpoint ...: the
//   prompt is empty", blaming the checkpoint; now --probe is named).

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"

namespace fs = std::filesystem;

namespace {

using glass_test::CliRun;
using glass_test::q;
using glass_test::read_file;
using glass_test::write_file;

/// UTF-8 of a code point in the Basic Multilingual Plane.
std::string utf8(char32_t c) {
  std::string s;
  if (c < 0x80) {
    s += static_cast<char>(c);
  } else if (c < 0x800) {
    s += static_cast<char>(0xC0 | (c >> 6));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    s += static_cast<char>(0xE0 | (c >> 12));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  }
  return s;
}

class RobustnessCli : public ::testing::Test {
 protected:
  static fs::path dir_;
  static fs::path text_;  // 6000 bytes of Dom Casmurro
  static fs::path ckpt_;  // a tiny checkpoint trained once

  static std::string tiny() { return glass_test::tiny(5); }

  static CliRun glass(const std::string& args) {
    return glass_test::run_glass(args, dir_, "timeout 60 ");
  }

  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("glass-robustness-cli-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    text_ = dir_ / "text.txt";
    write_file(text_, glass_test::corpus_start(6000));
    ckpt_ = dir_ / "ckpt";
    const CliRun r = glass("train --data " + q(text_.string()) + " --out " + q(ckpt_.string()) +
                           " --iters 4 --eval-every 4" + tiny());
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static void expect_error(const CliRun& r, const std::string& phrase) {
    EXPECT_NE(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.exit_code, 124) << "timed out (a hang)";
    EXPECT_NE(r.err.find(phrase), std::string::npos) << "stderr was: " << r.err;
    EXPECT_EQ(r.err.find("terminate called"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("bad_alloc"), std::string::npos) << r.err;
  }
};

fs::path RobustnessCli::dir_, RobustnessCli::text_, RobustnessCli::ckpt_;

}  // namespace

TEST_F(RobustnessCli, MoreCharactersThanTheVocabularyCapTrainWithTheRarestAsUnknown) {
  // 1100 distinct CJK characters, each 3 times: the cap (1024 ids including id 0) keeps 1023
  // of them (ties: smaller code point first); the other 77 become the unknown token.
  std::string text;
  for (int rep = 0; rep < 3; ++rep)
    for (char32_t c = 0x4E00; c < 0x4E00 + 1100; ++c) text += utf8(c);
  const fs::path big = dir_ / "big_vocab.txt";
  write_file(big, text);
  const fs::path out = dir_ / "big_vocab";
  const CliRun r = glass("train --data " + q(big.string()) + " --out " + q(out.string()) +
                         " --iters 2 --eval-every 2" + tiny());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("checkpoint: " + out.string() + "/ ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("vocabulary 1024"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("become the unknown token"), std::string::npos) << r.out;
  // Resuming on the same text works too (the checkpoint's vocabulary is full).
  const CliRun resumed =
      glass("train --data " + q(big.string()) + " --out " + q(out.string() + "/") +
            " --iters 4 --eval-every 2 --resume" + tiny());
  EXPECT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  EXPECT_NE(resumed.out.find("checkpoint: " + out.string() + "/ ("), std::string::npos)  // not "//"
      << resumed.out;
  // glass eval on the training text maps them the same way (with a warning), without a flag.
  const CliRun eval = glass("eval --checkpoint " + q(out.string()) + " --data " + q(big.string()));
  EXPECT_EQ(eval.exit_code, 0) << eval.err;
  EXPECT_NE(eval.out.find("over 3299 predictions"), std::string::npos) << eval.out;
  EXPECT_NE(eval.err.find("231 characters outside the vocabulary"), std::string::npos) << eval.err;
  // A checkpoint whose vocabulary is not full still refuses characters it never saw (in a text
  // of the name it was trained on: another name is refused before the vocabulary is read).
  const fs::path same_name = dir_ / "other" / text_.filename();
  fs::create_directories(same_name.parent_path());
  write_file(same_name, text);
  expect_error(glass("train --data " + q(same_name.string()) + " --out " + q(ckpt_.string()) +
                     " --iters 8 --resume" + tiny()),
               "does not match the checkpoint's vocabulary");
}

TEST_F(RobustnessCli, AbsurdSizesAreRefusedBeforeAllocating) {
  const fs::path out = dir_ / "never";
  const std::string base =
      "train --data " + q(text_.string()) + " --out " + q(out.string()) + " --iters 2";
  expect_error(glass(base + " --d-model 1000000000"), "memory");
  expect_error(glass(base + " --n-layers 100000000"), "memory");
  expect_error(glass(base + " --batch-size 100000000"), "--batch-size");
  EXPECT_FALSE(fs::exists(out)) << "a refused run created its output directory";

  // A corrupt config.json describing a gigantic model.
  const fs::path bad = dir_ / "huge_config";
  fs::copy(ckpt_, bad);
  auto config = nlohmann::json::parse(read_file(bad / "config.json"));
  config["model"]["d_model"] = 1000000000;
  write_file(bad / "config.json", config.dump());
  expect_error(glass("sample --checkpoint " + q(bad.string()) + " --tokens 5"), "memory");
  config["model"]["d_model"] = 32;
  config["model"]["context_length"] = 1000000000000000;  // RoPE tables of 10^15 rows
  write_file(bad / "config.json", config.dump());
  expect_error(glass("sample --checkpoint " + q(bad.string()) + " --tokens 5"),
               "is the file corrupt?");
}

TEST_F(RobustnessCli, TrainingContextOutsideTheModelIsACorruptConfig) {
  // config.json's training.context is the window sample and eval use: 0 or more than the
  // model's context_length must be refused, not silently replaced.
  const fs::path bad = dir_ / "bad_context";
  fs::copy(ckpt_, bad);
  auto config = nlohmann::json::parse(read_file(bad / "config.json"));
  const std::string ck = " --checkpoint " + q(bad.string());
  const long long limit = config["model"]["context_length"].get<long long>();
  for (long long context : {0LL, limit + 1, 100 * limit}) {
    config["training"]["context"] = context;
    write_file(bad / "config.json", config.dump());
    const std::string rule = context == 0 ? "training.context must be a positive integer"
                                          : "exceeds the model's context_length";
    expect_error(glass("sample" + ck + " --tokens 5"), rule);
    expect_error(glass("eval" + ck + " --data " + q(text_.string())), rule);
  }
}

TEST_F(RobustnessCli, ThreadCountsFarBeyondTheCoresAreRefused) {
  const fs::path out = dir_ / "threads";
  expect_error(glass("train --data " + q(text_.string()) + " --out " + q(out.string()) +
                     " --iters 1 --threads 100000"),
               "4 per core");
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(RobustnessCli, NonFiniteWeightsAreACorruptCheckpoint) {
  const fs::path bad = dir_ / "nan_weights";
  fs::copy(ckpt_, bad);
  std::string bytes = read_file(bad / "model.safetensors");
  std::uint64_t header = 0;
  std::memcpy(&header, bytes.data(), 8);  // little-endian length of the JSON header
  const auto meta = nlohmann::json::parse(bytes.substr(8, header));
  const std::size_t begin = meta["output.weight"]["data_offsets"][0].get<std::size_t>();
  const float nan = std::nanf("");
  std::memcpy(&bytes[8 + header + begin + 4 * 7], &nan, 4);  // output.weight[7] = NaN
  write_file(bad / "model.safetensors", bytes);
  const std::string ck = " --checkpoint " + q(bad.string());
  expect_error(glass("sample" + ck + " --tokens 5"), "non-finite value (NaN) at index 7");
  expect_error(glass("eval" + ck + " --data " + q(text_.string())), "output.weight");
  expect_error(glass("inspect" + ck + " --prompt 'Capitu'"), "non-finite");
}

TEST_F(RobustnessCli, TinyTemperatureIsGreedyAndHugeSeedsAreExplained) {
  const std::string ck = " --checkpoint " + q(ckpt_.string()) + " --prompt 'Capitu' --tokens 20";
  const CliRun greedy = glass("sample" + ck + " --temperature 0");
  const CliRun tiny_t = glass("sample" + ck + " --temperature 1e-320");
  ASSERT_EQ(greedy.exit_code, 0) << greedy.err;
  ASSERT_EQ(tiny_t.exit_code, 0) << tiny_t.err;
  EXPECT_EQ(tiny_t.out, greedy.out);
  expect_error(glass("sample" + ck + " --seed 18446744073709551615"), "no larger than");
}

TEST_F(RobustnessCli, EndlessDevicesStopAtTheFirstNulByte) {
  const std::string to = " --out " + q((dir_ / "never").string()) + " --iters 2";
  expect_error(glass("train --data /dev/zero" + to),
               "looks binary (it contains a NUL byte at offset 0)");
  expect_error(glass("train --data /dev/urandom" + to), "looks binary");
  expect_error(glass("eval --checkpoint " + q(ckpt_.string()) + " --data /dev/zero"),
               "looks binary");
  EXPECT_FALSE(fs::exists(dir_ / "never"));
}

TEST_F(RobustnessCli, UnknownCommandsAndFileCheckpointsAreNamed) {
  expect_error(
      glass("frobnicate --tokens 5"),
      "unknown command 'frobnicate'; the commands are: train, finetune, sample, chat, eval, inspect, export, serve, gradcheck");
  const CliRun file = glass("sample --checkpoint " + q(text_.string()) + " --tokens 5");
  expect_error(file, "is a file; a checkpoint is the directory glass train wrote");
  EXPECT_EQ(file.err.find("--out"), std::string::npos) << "a library error names no flag";
}

TEST_F(RobustnessCli, AServeProbeThatIsNotUtf8IsNamedNotBlamedOnTheCheckpoint) {
  // No character at all (was: the checkpoint blamed); a bad byte after "to" (was: served "to").
  for (const std::string probe : {"\xff\xfe", "to\xff\xfe"}) {
    const CliRun r =
        glass("serve --checkpoint " + q(ckpt_.string()) + " --port 0 --probe " + q(probe));
    expect_error(r, "--probe is not valid UTF-8");
    EXPECT_EQ(r.err.find("cannot load checkpoint"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("serving"), std::string::npos) << "it did not start: " << r.out;
  }
}
