// Chatting with a checkpoint (sample/chat.hpp) and the chat exam (sample/chat_exam.hpp), on a
// small untrained checkpoint with the chat tokens.

#include "sample/chat.hpp"

#include <cmath>
#include <csignal>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "data/chat_template.hpp"
#include "sample/chat_exam.hpp"
#include "sample/chat_fixtures.hpp"
#include "test_util.hpp"

namespace {

namespace fs = std::filesystem;

class ChatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = glass_test::temp_dir("chat_session");
    fs::create_directories(dir_);
    glass_test::write_chat_checkpoint((dir_ / "ckpt").string(), 128, 7);
    options_.sampling.temperature = 0;  // greedy: answers can be recomputed
    options_.max_tokens = 6;
  }
  void TearDown() override { fs::remove_all(dir_); }
  glass::Checkpoint load() const { return glass::load_checkpoint((dir_ / "ckpt").string()); }

  fs::path dir_;
  glass::ChatOptions options_;
};

/// The logits of the token after `text`, the whole text read afresh (no history kept).
std::vector<double> full_read(const glass::Checkpoint& c, const std::vector<std::int32_t>& text) {
  glass::SamplingOptions no_cache;
  no_cache.use_kv_cache = false;
  glass::NextTokenLogits next(c.model(), c.window(), no_cache);
  return next(text);
}

/// The ids the model drew after `text` (greedy, as generate() draws them) up to <|im_end|> or
/// `cap` tokens: a second code path for an answer.
std::vector<std::int32_t> greedy_answer(const glass::Checkpoint& c,
                                        const std::vector<std::int32_t>& text, std::size_t cap) {
  glass::SamplingOptions greedy;
  greedy.temperature = 0;
  std::mt19937_64 rng(0);
  std::vector<std::int32_t> ids = glass::generate(c.model(), text, cap, c.window(), greedy, rng);
  const std::int32_t im_end = *c.tokenizer().special_id(glass::SpecialToken::kImEnd);
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] == im_end) return {ids.begin(), ids.begin() + static_cast<long>(i) + 1};
  return ids;
}

TEST_F(ChatTest, ACheckpointWithoutChatTokensIsRefused) {
  glass_test::write_small_checkpoint((dir_ / "base").string(), 16, 3);
  const glass::Checkpoint base = glass::load_checkpoint((dir_ / "base").string());
  EXPECT_THROW(glass::ChatSession(base, options_), glass::NoChatTokensError);
  EXPECT_THROW(glass::run_chat_exam(base, {}, {}), glass::NoChatTokensError);
}

TEST_F(ChatTest, TheSecondTurnReadsOnlyItsOwnTokensAndGivesTheLogitsOfAFullReRead) {
  const glass::Checkpoint c = load();
  glass::ChatSession session(c, options_);
  const glass::ChatAnswer first = session.answer("quanto e 2 + 3?");
  const std::size_t after_first = session.history().size();
  const glass::ChatAnswer second = session.answer("soletre casa");

  // The history is the template's rendering of the conversation, the answers as the model wrote
  // them (each closed by <|im_end|>).
  std::vector<glass::ChatMessage> messages = {{glass::ChatRole::kUser, "quanto e 2 + 3?"},
                                              {glass::ChatRole::kAssistant, first.text},
                                              {glass::ChatRole::kUser, "soletre casa"}};
  std::vector<std::int32_t> prompt = glass::render_chat_prompt(c.tokenizer(), messages);
  const std::vector<std::int32_t>& history = session.history();
  ASSERT_EQ(history.size(), prompt.size() + second.ids.size() +
                                (second.end == glass::AnswerEnd::kEndOfTurn ? 0 : 1));
  EXPECT_TRUE(std::equal(prompt.begin(), prompt.end(), history.begin()));
  EXPECT_GT(prompt.size(), after_first);

  // Each token was read once: all but the last drawn one (and the <|im_end|> that closes an
  // answer cut by the cap), which no prediction needed yet. A re-read of the first turn would
  // count its tokens twice.
  const std::size_t unread = second.end == glass::AnswerEnd::kEndOfTurn ? 1 : 2;
  EXPECT_EQ(session.tokens_read(), history.size() - unread);

  // The cache's logits for the second answer's first token are those of reading it all afresh.
  const std::vector<double> fresh = full_read(c, prompt);
  ASSERT_EQ(second.first_logits.size(), fresh.size());
  for (std::size_t v = 0; v < fresh.size(); ++v)
    EXPECT_NEAR(second.first_logits[v], fresh[v], 1e-4 * (1 + std::abs(fresh[v]))) << "id " << v;
  // And the answer is the one generate() draws after that prompt.
  EXPECT_EQ(second.ids, greedy_answer(c, prompt, options_.max_tokens));
}

TEST_F(ChatTest, ResetForgetsTheConversation) {
  const glass::Checkpoint c = load();
  glass::ChatSession session(c, options_);
  const glass::ChatAnswer first = session.answer("inverta sol");
  session.answer("e agora?");
  session.reset();
  EXPECT_TRUE(session.history().empty());
  EXPECT_EQ(session.tokens_read(), 0u);
  const glass::ChatAnswer again = session.answer("inverta sol");
  EXPECT_EQ(again.ids, first.ids);
  const std::vector<std::int32_t> prompt =
      glass::render_chat_prompt(c.tokenizer(), {{glass::ChatRole::kUser, "inverta sol"}});
  EXPECT_TRUE(std::equal(prompt.begin(), prompt.end(), session.history().begin()));
}

TEST_F(ChatTest, ATurnPastTheWindowIsRefusedAndTheHistoryKept) {
  const glass::Checkpoint c = load();
  glass::ChatSession session(c, options_);
  session.answer("ola");
  const std::vector<std::int32_t> before = session.history();
  const std::string long_turn(100, 'a');
  try {
    session.answer(long_turn);
    ADD_FAILURE() << "a turn past the window was sent";
  } catch (const glass::ChatContextFullError& e) {
    EXPECT_EQ(e.window(), 128u);
    EXPECT_EQ(e.left(), 128u - before.size());
    EXPECT_GT(e.needed(), e.left());
    EXPECT_NE(std::string(e.what()).find("is full"), std::string::npos) << e.what();
  }
  EXPECT_EQ(session.history(), before);
  session.answer("oi");  // a short turn still fits
  EXPECT_GT(session.history().size(), before.size());
}

TEST_F(ChatTest, TheStopFlagEndsTheAnswerAndClosesItsTurn) {
  const glass::Checkpoint c = load();
  options_.max_tokens = 50;
  glass::ChatSession session(c, options_);
  volatile std::sig_atomic_t stop = 0;
  std::string streamed;
  const glass::ChatAnswer a = session.answer(
      "conte", [&](const std::string& piece) { streamed += piece, stop = SIGINT; }, &stop);
  ASSERT_EQ(a.end, glass::AnswerEnd::kStopped);
  EXPECT_EQ(a.ids.size(), 1u);
  EXPECT_EQ(streamed, a.text);
  EXPECT_EQ(session.history().back(), *c.tokenizer().special_id(glass::SpecialToken::kImEnd));
}

TEST_F(ChatTest, TheExamCountsExactMatchesPerFamily) {
  const glass::Checkpoint c = load();
  // Six questions in two families; the reference of some is the model's own answer (computed
  // by generate(), a second code path), of the others a string it does not write.
  const std::vector<std::pair<std::string, std::string>> asked = {
      {"add", "quanto e 1 + 2?"}, {"add", "some 4 e 5"},    {"add", "quanto e 7 + 8?"},
      {"spell", "soletre gato"},  {"spell", "soletre mar"}, {"spell", "soletre ceu"}};
  const std::vector<bool> reference_is_own = {true, false, true, true, true, false};
  std::vector<glass::Conversation> exam;
  std::map<std::string, std::size_t> correct, ended;
  std::size_t line = 0;
  for (std::size_t i = 0; i < asked.size(); ++i) {
    const auto& [family, question] = asked[i];
    const std::vector<std::int32_t> prompt =
        glass::render_chat_prompt(c.tokenizer(), {{glass::ChatRole::kUser, question}});
    std::vector<std::int32_t> ids = greedy_answer(c, prompt, 10);
    const bool end = ids.back() == *c.tokenizer().special_id(glass::SpecialToken::kImEnd);
    if (end) ids.pop_back();
    const std::string own = c.tokenizer().decode_generated(ids);
    const std::string reference = reference_is_own[i] ? own : own + "zz";
    exam.push_back({{{glass::ChatRole::kUser, question}, {glass::ChatRole::kAssistant, reference}},
                    family,
                    ++line});
    correct[family] += reference_is_own[i] ? 1 : 0;
    ended[family] += end ? 1 : 0;
  }
  const glass::ChatExamResult r = glass::run_chat_exam(c, exam, {10});
  ASSERT_EQ(r.families.size(), 2u);
  for (const glass::ChatExamScore& s : r.families) {
    EXPECT_EQ(s.answers, 3u) << s.family;
    EXPECT_EQ(s.correct, correct[s.family]) << s.family;
    EXPECT_EQ(s.ended, ended[s.family]) << s.family;
  }
  EXPECT_EQ(r.families[0].family, "add");
  EXPECT_DOUBLE_EQ(r.families[0].accuracy(), 2.0 / 3.0);
  EXPECT_EQ(r.overall.correct, 4u);
  EXPECT_DOUBLE_EQ(r.overall.accuracy(), 4.0 / 6.0);
  ASSERT_EQ(r.misses.size(), 2u);
  EXPECT_EQ(r.misses[0].line, 2u);
  EXPECT_EQ(r.misses[0].prompt, "some 4 e 5");
  EXPECT_EQ(r.misses[0].expected, r.misses[0].got + "zz");
  EXPECT_EQ(r.misses[1].line, 6u);
}

TEST_F(ChatTest, AnExamPromptPastTheWindowNamesItsLine) {
  const glass::Checkpoint c = load();
  glass::Conversation long_one{
      {{glass::ChatRole::kUser, std::string(200, 'a')}, {glass::ChatRole::kAssistant, "a"}},
      "add",
      3};
  try {
    glass::run_chat_exam(c, {long_one}, {});
    ADD_FAILURE() << "a prompt past the window was asked";
  } catch (const glass::ChatTooLongError& e) {
    EXPECT_EQ(e.line(), 3u);
    EXPECT_NE(std::string(e.what()).find("at line 3"), std::string::npos) << e.what();
  }
}

}  // namespace
