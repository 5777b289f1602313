// The chat exam. See sample/chat_exam.hpp.

#include "sample/chat_exam.hpp"

#include <map>
#include <random>

#include "data/chat_template.hpp"
#include "sample/chat.hpp"

namespace glass {

namespace {

/// One conversation asked: the model's greedy answer to all its messages but the last.
ChatAnswer ask(const Checkpoint& checkpoint, const Conversation& c, const ChatOptions& options) {
  const std::vector<ChatMessage> asked(c.messages.begin(), c.messages.end() - 1);
  std::vector<std::int32_t> text =
      render_chat_prompt(checkpoint.tokenizer(), asked, checkpoint.window(), c.line);
  NextTokenLogits next(checkpoint.model(), checkpoint.window(), options.sampling);
  std::mt19937_64 rng(0);  // greedy: never drawn from
  return generate_answer(next, text, checkpoint.window(), checkpoint.tokenizer(), options, rng);
}

/// The last user message of a conversation (the question, in a report).
std::string question(const Conversation& c) {
  for (auto m = c.messages.rbegin(); m != c.messages.rend(); ++m)
    if (m->role == ChatRole::kUser) return m->content;
  return "";
}

void count(ChatExamScore& score, bool correct, bool ended) {
  ++score.answers;
  score.correct += correct ? 1 : 0;
  score.ended += ended ? 1 : 0;
}

nlohmann::json score_json(const ChatExamScore& s) {
  return {{"answers", s.answers},
          {"correct", s.correct},
          {"accuracy", s.accuracy()},
          {"ended", s.ended},
          {"ended_share", s.ended_share()}};
}

}  // namespace

ChatExamResult run_chat_exam(const Checkpoint& checkpoint,
                             const std::vector<Conversation>& conversations,
                             const ChatExamOptions& options) {
  chat_token_ids(checkpoint);  // NoChatTokensError before any work
  ChatOptions chat;
  chat.sampling.temperature = 0;  // greedy
  chat.max_tokens = options.max_tokens;
  ChatExamResult result;
  std::map<std::string, ChatExamScore> families;
  for (const Conversation& c : conversations) {
    const ChatAnswer a = ask(checkpoint, c, chat);
    const std::string& expected = c.messages.back().content;
    const bool correct = a.text == expected, ended = a.end == AnswerEnd::kEndOfTurn;
    ChatExamScore& family = families[c.family];
    family.family = c.family;
    count(family, correct, ended);
    count(result.overall, correct, ended);
    if (!correct) result.misses.push_back({c.line, c.family, question(c), expected, a.text, ended});
  }
  for (auto& [name, score] : families) result.families.push_back(score);
  return result;
}

nlohmann::json chat_exam_json(const ChatExamResult& result) {
  nlohmann::json families = nlohmann::json::object();
  for (const ChatExamScore& s : result.families) families[s.family] = score_json(s);
  nlohmann::json wrong = nlohmann::json::array();
  for (const ChatExamMiss& m : result.misses)
    wrong.push_back({{"line", m.line},
                     {"family", m.family},
                     {"prompt", m.prompt},
                     {"expected", m.expected},
                     {"got", m.got},
                     {"ended", m.ended}});
  return {{"overall", score_json(result.overall)},
          {"families", std::move(families)},
          {"wrong", std::move(wrong)}};
}

}  // namespace glass
