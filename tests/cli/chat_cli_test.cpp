// `glass chat` and `glass eval --chat` through the real binary, on small untrained checkpoints
// with the chat tokens (tests/sample/chat_fixtures.hpp): the answers are the library's
// (sample/chat.hpp), the history survives turns and /reset clears it, a turn past the window is
// refused with /reset offered, Ctrl-C stops an answer and the session goes on; the exam's
// numbers are those counted by a second code path; bad input is a clear error.

#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"
#include "data/chat_template.hpp"
#include "sample/chat.hpp"
#include "sample/chat_fixtures.hpp"
#include "sample/sampler.hpp"
#include "test_paths.hpp"

namespace {

namespace fs = std::filesystem;
using glass_test::CliRun;
using glass_test::q;
using glass_test::read_file;
using glass_test::write_file;

class ChatCli : public ::testing::Test {
 protected:
  static fs::path dir_;

  static void SetUpTestSuite() {
    dir_ = glass_test::temp_dir("glass-chat-cli");
    glass_test::remove_at_exit(dir_);
    glass_test::write_chat_checkpoint((dir_ / "chat").string(), 128, 7);
    glass_test::write_small_checkpoint((dir_ / "base").string(), 16, 3);
  }
  static std::string chat() { return q((dir_ / "chat").string()); }

  /// `glass ARGS` with standard input read from `input`.
  static CliRun glass_with_input(const std::string& args, const std::string& input) {
    write_file(dir_ / "stdin.txt", input);
    const fs::path out = dir_ / "stdout.txt", err = dir_ / "stderr.txt";
    const std::string cmd = glass_test::binary_dir("/glass ") + args + " <" +
                            q((dir_ / "stdin.txt").string()) + " >" + q(out.string()) + " 2>" +
                            q(err.string());
    const int status = std::system(cmd.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_file(out), read_file(err)};
  }
  static CliRun glass(const std::string& args) { return glass_test::run_glass(args, dir_); }

  /// The library's greedy answers to `turns` in one session of at most `n` tokens each, the
  /// conversation restarted at each "/reset".
  static std::vector<std::string> library_answers(const std::vector<std::string>& turns,
                                                  std::size_t n) {
    const glass::Checkpoint c = glass::load_checkpoint((dir_ / "chat").string());
    glass::ChatOptions o;
    o.sampling.temperature = 0;
    o.max_tokens = n;
    glass::ChatSession session(c, o);
    std::vector<std::string> answers;
    for (const std::string& t : turns) {
      if (t == "/reset")
        session.reset();
      else
        answers.push_back(session.answer(t).text);
    }
    return answers;
  }
};

fs::path ChatCli::dir_;

TEST_F(ChatCli, OneTurnWithPromptPrintsTheAnswerAndLeaves) {
  const CliRun r = glass("chat -m " + chat() + " -p 'quanto e 2 + 3?' --temp 0 -n 8");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, library_answers({"quanto e 2 + 3?"}, 8)[0] + "\n");
}

TEST_F(ChatCli, TurnsKeepTheirHistoryAndResetForgetsIt) {
  const CliRun r = glass_with_input("chat -m " + chat() + " --temp 0 -n 8",
                                    "inverta sol\nsoletre mar\n/reset\ninverta sol\n/quit\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> a =
      library_answers({"inverta sol", "soletre mar", "/reset", "inverta sol"}, 8);
  EXPECT_EQ(r.out, a[0] + "\n" + a[1] + "\n" + a[2] + "\n");
  EXPECT_EQ(a[2], a[0]);
  // Without /reset the third answer continues the conversation, and differs from the first
  // (a check that the history matters on this model).
  const std::vector<std::string> kept =
      library_answers({"inverta sol", "soletre mar", "inverta sol"}, 8);
  EXPECT_NE(kept[2], kept[0]);
  EXPECT_NE(r.err.find("new conversation"), std::string::npos) << r.err;
}

TEST_F(ChatCli, ATurnPastTheWindowIsNotSentAndResetIsOffered) {
  const std::string long_turn(100, 'a');
  const CliRun r = glass_with_input("chat -m " + chat() + " --temp 0 -n 8",
                                    long_turn + "\n" + long_turn + "\n/reset\n" + long_turn + "\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("the conversation is full"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("The turn was not sent; /reset starts a new conversation"),
            std::string::npos)
      << r.err;
  const std::string a = library_answers({long_turn}, 8)[0];
  EXPECT_EQ(r.out, a + "\n" + a + "\n") << "the refused turn printed no answer";

  const CliRun one = glass("chat -m " + chat() + " -p " + q(std::string(130, 'a')));
  EXPECT_EQ(one.exit_code, 1);
  EXPECT_NE(one.err.find("the conversation is full"), std::string::npos) << one.err;
}

TEST_F(ChatCli, CtrlCStopsTheAnswerAndTheSessionGoesOn) {
  // A window of 16384 tokens and weights whose greedy answer does not end within 300 tokens:
  // the answer would take far longer than the test waits.
  const fs::path big = dir_ / "big";
  bool long_answer = false;
  for (std::uint64_t seed = 1; seed < 30 && !long_answer; ++seed) {
    glass_test::write_chat_checkpoint(big.string(), 16384, seed);
    const glass::Checkpoint c = glass::load_checkpoint(big.string());
    glass::ChatOptions o;
    o.sampling.temperature = 0;
    o.max_tokens = 300;
    long_answer = glass::ChatSession(c, o).answer("ola").end != glass::AnswerEnd::kEndOfTurn;
  }
  ASSERT_TRUE(long_answer);
  const fs::path fifo = dir_ / "in.fifo", out = dir_ / "big.out", err = dir_ / "big.err";
  const std::string script =
      "mkfifo " + q(fifo.string()) + "; " + glass_test::binary_dir("/glass") + " chat -m " +
      q(big.string()) + " --temp 0 -n 100000 <" + q(fifo.string()) + " >" + q(out.string()) +
      " 2>" + q(err.string()) + " & pid=$!; exec 3>" + q(fifo.string()) +
      "; echo ola >&3; for i in $(seq 1 600); do [ -s " + q(out.string()) +
      " ] && break; sleep 0.02; done; kill -INT $pid; for i in $(seq 1 600); do grep -q stopped " +
      q(err.string()) +
      " && break; sleep 0.02; done; echo /reset >&3; echo /quit >&3; exec 3>&-; " +
      "wait $pid; echo $? >" + q((dir_ / "code").string());
  ASSERT_EQ(std::system(("bash -c " + q(script)).c_str()), 0);
  const std::string errors = read_file(err);
  EXPECT_EQ(read_file(dir_ / "code"), "0\n") << errors;
  EXPECT_EQ(glass_test::count(errors, "(answer stopped)"), 1u) << errors;
  EXPECT_NE(errors.find("(new conversation)", errors.find("(answer stopped)")), std::string::npos)
      << "the session went on after the stop: " << errors;
  EXPECT_EQ(errors.find("error"), std::string::npos) << errors;
}

TEST_F(ChatCli, ABaseModelIsRefusedWithTheCommandThatFineTunesIt) {
  const std::string base = q((dir_ / "base").string());
  const CliRun r = glass("chat -m " + base + " -p oi");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no chat tokens"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("glass finetune"), std::string::npos) << r.err;
  write_file(dir_ / "exam1.jsonl",
             R"({"messages":[{"role":"user","content":"oi"},{"role":"assistant","content":"a"}]})"
             "\n");
  const CliRun e = glass("eval -m " + base + " --chat " + q((dir_ / "exam1.jsonl").string()));
  EXPECT_EQ(e.exit_code, 1);
  EXPECT_NE(e.err.find("glass finetune"), std::string::npos) << e.err;
  EXPECT_NE(e.err.find("--base"), std::string::npos) << e.err;
}

TEST_F(ChatCli, TheExamOfABaseModelWithBaseIsItsBaselineOnAGrownVocabulary) {
  glass_test::write_small_checkpoint((dir_ / "base64").string(), 64, 3);  // the prompt fits
  const std::string base = q((dir_ / "base64").string());
  write_file(
      dir_ / "exam2.jsonl",
      R"({"messages":[{"role":"user","content":"oi 7?"},{"role":"assistant","content":"a"}],)"
      R"("family":"add"})"
      "\n");
  const CliRun e =
      glass("eval -m " + base + " --chat " + q((dir_ / "exam2.jsonl").string()) + " --base -n 4");
  ASSERT_EQ(e.exit_code, 0) << e.err;
  // The base lacks the chat tokens, '7' and '?' of the exam and 'm' 'y' of the role "system":
  // grown by them, as glass finetune grows it.
  EXPECT_NE(e.err.find("baseline: "), std::string::npos) << e.err;
  EXPECT_NE(e.err.find("from 15 to 21 ids for <|im_start|>, <|im_end|> and the characters '7' "
                       "(U+0037) '?' (U+003F) 'm' (U+006D) 'y' (U+0079)"),
            std::string::npos)
      << e.err;
  EXPECT_NE(e.out.find("  add        0/1 correct"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("  overall    0/1 correct"), std::string::npos) << e.out;
  // The base's files are left as they were: a chat still refuses it.
  EXPECT_EQ(glass("chat -m " + base + " -p oi").exit_code, 1);
}

/// The greedy answer generate() draws after the template's prompt for `question` (a second
/// code path beside the exam's), cut at <|im_end|>; `ended` tells whether it came.
std::string second_path_answer(const glass::Checkpoint& c, const std::string& question,
                               std::size_t cap, bool& ended) {
  glass::SamplingOptions greedy;
  greedy.temperature = 0;
  std::mt19937_64 rng(0);
  const std::vector<std::int32_t> prompt =
      glass::render_chat_prompt(c.tokenizer(), {{glass::ChatRole::kUser, question}});
  std::vector<std::int32_t> ids = glass::generate(c.model(), prompt, cap, c.window(), greedy, rng);
  const std::int32_t im_end = *c.tokenizer().special_id(glass::SpecialToken::kImEnd);
  ended = false;
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] == im_end) {
      ids.resize(i);
      ended = true;
      break;
    }
  return c.tokenizer().decode_generated(ids);
}

TEST_F(ChatCli, TheExamPrintsTheAccuracyCountedByASecondCodePath) {
  const glass::Checkpoint c = glass::load_checkpoint((dir_ / "chat").string());
  const std::vector<std::pair<std::string, std::string>> asked = {{"add", "quanto e 1 + 2?"},
                                                                  {"spell", "soletre gato"},
                                                                  {"add", "some 4 e 5"},
                                                                  {"spell", "soletre mar"},
                                                                  {"add", "quanto e 7 + 8?"}};
  const std::vector<bool> own = {true, false, false, true, true};  // reference = model's answer
  std::string exam;
  std::map<std::string, int> correct, answers;
  int ended_all = 0;
  for (std::size_t i = 0; i < asked.size(); ++i) {
    bool ended = false;
    const std::string answer = second_path_answer(c, asked[i].second, 12, ended);
    exam += nlohmann::json{{"messages",
                            {{{"role", "user"}, {"content", asked[i].second}},
                             {{"role", "assistant"}, {"content", own[i] ? answer : "x" + answer}}}},
                           {"family", asked[i].first}}
                .dump() +
            "\n";
    correct[asked[i].first] += own[i] ? 1 : 0;
    answers[asked[i].first] += 1;
    ended_all += ended ? 1 : 0;
  }
  write_file(dir_ / "exam.jsonl", exam);
  const std::string args = "eval -m " + chat() + " --chat " + q((dir_ / "exam.jsonl").string());
  const CliRun r = glass(args + " -n 12 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  for (const auto& [family, n] : answers) {
    EXPECT_EQ(j["families"][family]["answers"], n) << family;
    EXPECT_EQ(j["families"][family]["correct"], correct[family]) << family;
    EXPECT_DOUBLE_EQ(j["families"][family]["accuracy"].get<double>(),
                     static_cast<double>(correct[family]) / n);
  }
  EXPECT_EQ(j["overall"]["correct"], 3);
  EXPECT_DOUBLE_EQ(j["overall"]["accuracy"].get<double>(), 3.0 / 5.0);
  EXPECT_EQ(j["overall"]["ended"], ended_all);
  ASSERT_EQ(j["wrong"].size(), 2u);
  EXPECT_EQ(j["wrong"][0]["line"], 2);
  EXPECT_EQ(j["wrong"][0]["prompt"], "soletre gato");
  EXPECT_EQ(j["wrong"][0]["expected"], "x" + j["wrong"][0]["got"].get<std::string>());

  const CliRun text = glass(args + " -n 12");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("add        2/3 correct (66.7 %)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("spell      1/2 correct (50.0 %)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("overall    3/5 correct (60.0 %)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("2 of the 2 wrong answers"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("line 2 (spell): \"soletre gato\""), std::string::npos) << text.out;
}

TEST_F(ChatCli, ABadExamFileIsAnErrorNamingItsLine) {
  write_file(dir_ / "bad.jsonl",
             R"({"messages":[{"role":"user","content":"oi"},{"role":"assistant","content":"a"}]})"
             "\n"
             R"({"messages":[{"role":"bot","content":"oi"}]})"
             "\n");
  const CliRun bad = glass("eval -m " + chat() + " --chat " + q((dir_ / "bad.jsonl").string()));
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("bad.jsonl:2: messages[0].role"), std::string::npos) << bad.err;
  EXPECT_TRUE(bad.out.empty()) << bad.out;

  write_file(dir_ / "empty.jsonl", "\n");
  const CliRun empty = glass("eval -m " + chat() + " --chat " + q((dir_ / "empty.jsonl").string()));
  EXPECT_EQ(empty.exit_code, 1);
  EXPECT_NE(empty.err.find("holds no conversation"), std::string::npos) << empty.err;

  const CliRun neither = glass("eval -m " + chat());
  EXPECT_NE(neither.exit_code, 0);  // CLI11's code of a missing option
  EXPECT_NE(neither.err.find("--data is required"), std::string::npos) << neither.err;
}

}  // namespace
