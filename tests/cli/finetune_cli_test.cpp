// `glass finetune` (cli/finetune.cpp): a base run fine-tuned on conversations. The happy path (the
// save records the base, the vocabulary grew, --resume continues it) and each bad input: a clear
// error, a non-zero exit and no save.
#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint.hpp"
#include "checkpoint/run_dir.hpp"
#include "cli_test_util.hpp"
#include "test_paths.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;

namespace {

using glass_test::CliRun;
using glass_test::q;
using glass_test::read_file;
using glass_test::write_file;

const char* const kGood =
    R"({"messages":[{"role":"user","content":"quanto é 2 + 3?"},{"role":"assistant","content":"5"}]})";
const char* const kGood2 =
    R"({"messages":[{"role":"system","content":"Responda."},{"role":"user","content":"inverta casa"},{"role":"assistant","content":"asac"}]})";

class FinetuneCli : public ::testing::Test {
 protected:
  static fs::path dir_, base_;
  static CliRun base_run_;

  static CliRun glass(const std::string& args) { return glass_test::run_glass(args, dir_); }

  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("glass-finetune-cli-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    write_file(dir_ / "text.txt", glass_test::corpus_start(6000));
    base_ = dir_ / "base";
    base_run_ = glass("train --data " + q((dir_ / "text.txt").string()) + " --out " +
                      q(base_.string()) + " --iters 10 --eval-every 10" + glass_test::tiny(0));
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  /// A file `name` in the test's directory holding `lines`, one per line.
  static std::string chat_file(const std::string& name, const std::string& lines) {
    write_file(dir_ / name, lines);
    return (dir_ / name).string();
  }

  /// `glass finetune --from base --chat CHAT --out OUT` with the tiny recipe and `more`.
  static CliRun finetune(const std::string& chat, const std::string& out,
                         const std::string& more = "") {
    return glass("finetune --from " + q(base_.string()) + " --chat " + q(chat) + " --out " +
                 q((dir_ / out).string()) +
                 " --batch-size 2 --eval-iters 1 --sample-tokens 4 --warmup 1" + more);
  }

  /// A failure: non-zero exit, `phrase` on stderr, and no save in `out`.
  static void expect_refused(const CliRun& r, const std::string& out, const std::string& phrase) {
    EXPECT_NE(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.err.find(phrase), std::string::npos) << "stderr was: " << r.err;
    EXPECT_FALSE(glass::holds_checkpoint((dir_ / out).string())) << out;
  }
};

fs::path FinetuneCli::dir_, FinetuneCli::base_;
CliRun FinetuneCli::base_run_;

}  // namespace

TEST_F(FinetuneCli, FineTunesGrowsTheVocabularyRecordsTheBaseAndResumes) {
  ASSERT_EQ(base_run_.exit_code, 0) << base_run_.err;
  const std::string chat = chat_file("good.jsonl", std::string(kGood) + "\n" + kGood2 + "\n");
  const CliRun r = finetune(chat, "chat", " --iters 4 --eval-every 2 --val " + q(chat));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // The six characters of Dom Casmurro's first 6000 bytes lack '+', '2', '3', '5' (and the
  // chat tokens): the vocabulary grew, and the banner says by what.
  EXPECT_NE(r.out.find("vocabulary grown from"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("'+' (U+002B)"), std::string::npos) << r.out;
  const glass::Checkpoint saved = glass::load_checkpoint((dir_ / "chat").string());
  EXPECT_TRUE(saved.tokenizer().has_chat_tokens());
  EXPECT_TRUE(saved.tokenizer().knows(U'+'));
  const nlohmann::json config =
      nlohmann::json::parse(read_file(fs::path(saved.files_dir()) / "config.json"));
  EXPECT_EQ(config["training"]["chat"]["base"], base_.string());
  EXPECT_EQ(config["training"]["chat"]["base_sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(config["training"]["data"], "good.jsonl");
  // --resume continues it (the base from the save: --from left out) to step 6.
  const CliRun more = glass("finetune --chat " + q(chat) + " --val " + q(chat) + " --out " +
                            q((dir_ / "chat").string()) + " --iters 6 --resume");
  ASSERT_EQ(more.exit_code, 0) << more.out << more.err;
  EXPECT_NE(more.out.find("resuming from step 4"), std::string::npos) << more.out;
  EXPECT_EQ(glass::load_checkpoint((dir_ / "chat").string()).weights_step(), "6");
  // A text run's --resume of it is refused: it is a fine-tune.
  const CliRun as_text = glass("train --data " + q(chat) + " --out " + q((dir_ / "chat").string()) +
                               " --iters 8 --resume");
  EXPECT_NE(as_text.exit_code, 0);
  EXPECT_NE(as_text.err.find("chat fine-tune"), std::string::npos) << as_text.err;
}

TEST_F(FinetuneCli, AMalformedLineIsNamed) {
  const std::string chat = chat_file("bad.jsonl", std::string(kGood) + "\n{\"messages\": [\n");
  expect_refused(finetune(chat, "bad"), "bad", "bad.jsonl:2");
}

TEST_F(FinetuneCli, AnEmptyConversationIsRefused) {
  const std::string chat = chat_file("empty.jsonl", std::string(kGood) + "\n{\"messages\": []}\n");
  expect_refused(finetune(chat, "empty"), "empty", "empty.jsonl:2: messages");
}

TEST_F(FinetuneCli, AConversationWithoutAnAnswerIsRefused) {
  const std::string chat = chat_file(
      "noanswer.jsonl",
      std::string(kGood) + "\n{\"messages\": [{\"role\": \"user\", \"content\": \"oi\"}]}\n");
  expect_refused(finetune(chat, "noanswer"), "noanswer", "noanswer.jsonl:2");
}

TEST_F(FinetuneCli, AConversationLongerThanTheContextSaysItsLineAndLength) {
  // The base's context is 16 characters; line 2 renders to far more.
  const std::string chat = chat_file("long.jsonl", std::string(kGood) + "\n" + kGood2 + "\n");
  const CliRun r = finetune(chat, "long", " --context 16 --val " + q(chat));
  expect_refused(r, "long", "long.jsonl:1: the conversation is");
  EXPECT_NE(r.err.find("a window of 16 characters"), std::string::npos) << r.err;
}

TEST_F(FinetuneCli, AFromThatIsNotACheckpointIsRefused) {
  const std::string chat = chat_file("good2.jsonl", std::string(kGood) + "\n" + kGood2 + "\n");
  fs::create_directories(dir_ / "not-a-run");
  const CliRun r = glass("finetune --from " + q((dir_ / "not-a-run").string()) + " --chat " +
                         q(chat) + " --out " + q((dir_ / "nobase").string()));
  expect_refused(r, "nobase", "not-a-run");
  const CliRun missing = glass("finetune --from " + q((dir_ / "nowhere").string()) + " --chat " +
                               q(chat) + " --out " + q((dir_ / "nobase").string()));
  expect_refused(missing, "nobase", "no such directory");
}

TEST_F(FinetuneCli, AChatFileWithoutAnyConversationIsRefused) {
  // Nothing to train on: no conversation, hence no target.
  const std::string chat = chat_file("blank.jsonl", "\n\n");
  expect_refused(finetune(chat, "blank"), "blank", "blank.jsonl");
}

TEST_F(FinetuneCli, LossOnAllTrainsOnEveryTokenAndARunKeepsIt) {
  ASSERT_EQ(base_run_.exit_code, 0) << base_run_.err;
  const std::string chat = chat_file("all.jsonl", std::string(kGood) + "\n" + kGood2 + "\n");
  const CliRun r =
      finetune(chat, "all", " --iters 2 --eval-every 2 --loss-on all --val " + q(chat));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("the training loss counts every token"), std::string::npos) << r.out;
  const glass::Checkpoint saved = glass::load_checkpoint((dir_ / "all").string());
  const nlohmann::json config =
      nlohmann::json::parse(read_file(fs::path(saved.files_dir()) / "config.json"));
  EXPECT_EQ(config["training"]["chat"]["loss_on"], "all");
  // A resume asking for the other loss is refused, naming the flag; without it, it continues.
  const std::string resume = "finetune --chat " + q(chat) + " --val " + q(chat) + " --out " +
                             q((dir_ / "all").string()) + " --iters 4 --resume";
  const CliRun other = glass(resume + " --loss-on answers");
  EXPECT_NE(other.exit_code, 0);
  EXPECT_NE(other.err.find("--loss-on answers differs from the run"), std::string::npos)
      << other.err;
  const CliRun kept = glass(resume);
  ASSERT_EQ(kept.exit_code, 0) << kept.out << kept.err;
  EXPECT_NE(kept.out.find("the training loss counts every token"), std::string::npos) << kept.out;
  // Only the two names are accepted.
  const CliRun bad = finetune(chat, "bogus", " --loss-on everything");
  expect_refused(bad, "bogus", "--loss-on");
}
