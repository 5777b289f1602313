// Reading conversations (JSONL "messages"): what is kept, and one clear error per kind of bad
// line, naming the line and the field.

#include <gtest/gtest.h>

#include <string>

#include "data/chat_data.hpp"

using glass::ChatDataError;
using glass::ChatRole;
using glass::Conversation;

namespace {

const char* const kGood =
    R"({"messages": [{"role": "user", "content": "oi"}, {"role": "assistant", "content": "olá"}]})";

/// The ChatDataError of parsing `text`, or a failure when there is none.
ChatDataError error_of(const std::string& text) {
  try {
    glass::parse_chat_jsonl(text, "chat.jsonl");
  } catch (const ChatDataError& e) {
    return e;
  }
  ADD_FAILURE() << "no error for: " << text;
  return ChatDataError("", 0, "", "");
}

/// A bad line as the third of a file whose first two are good: the error names line 3.
void expect_bad_line(const std::string& line, const std::string& field,
                     const std::string& problem_part) {
  const ChatDataError e = error_of(std::string(kGood) + "\n\n" + line + "\n" + kGood + "\n");
  EXPECT_EQ(e.line(), 3u) << line;
  EXPECT_EQ(e.field(), field) << line << "\n" << e.what();
  EXPECT_NE(e.problem().find(problem_part), std::string::npos) << e.what();
  EXPECT_EQ(std::string(e.what()).rfind("chat.jsonl:3: " + field + ": ", 0), 0u) << e.what();
}

}  // namespace

TEST(ChatData, ReadsConversationsWithSystemTurnsAndFamily) {
  const std::string text =
      std::string(kGood) + "\n" +
      R"({"family": "add", "id": 7, "messages": [{"role": "system", "content": "Seja breve."},)"
      R"({"role": "user", "content": "quanto é 2 + 2?", "name": "ana"},)"
      R"({"role": "assistant", "content": "4"}, {"role": "user", "content": "e 3 + 3?"},)"
      R"({"role": "assistant", "content": "6"}]})"
      "\r\n\n";
  const std::vector<Conversation> c = glass::parse_chat_jsonl(text, "mem");
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].line, 1u);
  EXPECT_EQ(c[0].family, "");
  ASSERT_EQ(c[0].messages.size(), 2u);
  EXPECT_EQ(c[0].messages[1].role, ChatRole::kAssistant);
  EXPECT_EQ(c[0].messages[1].content, "olá");
  EXPECT_EQ(c[1].line, 2u);
  EXPECT_EQ(c[1].family, "add");
  ASSERT_EQ(c[1].messages.size(), 5u);
  EXPECT_EQ(c[1].messages[0].role, ChatRole::kSystem);
  EXPECT_EQ(c[1].messages[3].content, "e 3 + 3?");
  EXPECT_EQ(c[1].messages[4].role, ChatRole::kAssistant);
}

TEST(ChatData, EachBadLineNamesItsLineFieldAndProblem) {
  expect_bad_line(R"({"messages": []})", "messages", "empty");
  expect_bad_line(R"({"conversation": []})", "messages", "missing");
  expect_bad_line(R"({"messages": "oi"})", "messages", "not an array");
  expect_bad_line(R"([1, 2])", "(line)", "not an object");
  expect_bad_line(R"({"messages": [{"role": "user", "content": "oi"}]})", "messages",
                  "no assistant turn");
  expect_bad_line(R"({"messages": [{"role": "system", "content": "x"}]})", "messages",
                  "only a system message");
  expect_bad_line(R"({"messages": [{"role": "bot", "content": "oi"}]})", "messages[0].role",
                  "\"bot\" is not one of");
  expect_bad_line(R"({"messages": [{"content": "oi"}]})", "messages[0].role", "missing");
  expect_bad_line(R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content",
                  "not a string");
  expect_bad_line(R"({"messages": [{"role": "user"}]})", "messages[0].content", "missing");
  expect_bad_line(R"({"messages": ["oi"]})", "messages[0]", "not an object");
  expect_bad_line(
      R"({"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]})",
      "messages[1].role", "\"user\" where \"assistant\" was expected");
  expect_bad_line(
      R"({"messages": [{"role": "assistant", "content": "a"}, {"role": "user", "content": "b"}]})",
      "messages[0].role", "\"assistant\" where \"user\" was expected");
  expect_bad_line(R"({"messages": [{"role": "user", "content": "a"}, )"
                  R"({"role": "system", "content": "b"}]})",
                  "messages[1].role", "only be the first");
  expect_bad_line(R"({"messages": [{"role": "user", "role": "user", "content": "a"}]})", "(line)",
                  "the key \"role\" appears twice");
  expect_bad_line(R"({"messages": [], "messages": []})", "(line)", "appears twice");
  expect_bad_line(std::string(100, '[') + std::string(100, ']'), "(line)", "levels deep");
  expect_bad_line(R"({"messages": [)", "(line)", "not valid JSON");
  expect_bad_line("{\"messages\": [{\"role\": \"user\", \"content\": \"o\xC3\"}]}", "(line)",
                  "invalid UTF-8 at byte 44");
  expect_bad_line(R"({"family": 3, "messages": [{"role": "user", "content": "a"}, )"
                  R"({"role": "assistant", "content": "b"}]})",
                  "family", "not a string");
}

TEST(ChatData, AFileWithoutConversationsOrUnreadableIsAnError) {
  EXPECT_EQ(error_of("\n  \n").field(), "file");
  try {
    glass::read_chat_jsonl("/nonexistent/chat.jsonl");
    FAIL() << "no error";
  } catch (const ChatDataError& e) {
    EXPECT_EQ(e.field(), "file");
    EXPECT_NE(std::string(e.what()).find("/nonexistent/chat.jsonl"), std::string::npos);
  }
}

TEST(ChatData, APromptMayEndWithTheUser) {
  std::vector<glass::ChatMessage> m = {{ChatRole::kUser, "oi"}};
  std::string field;
  EXPECT_EQ(glass::chat_turn_problem(m, true, &field), "");
  EXPECT_NE(glass::chat_turn_problem(m, false, &field), "");
}
