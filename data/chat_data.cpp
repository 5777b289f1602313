// Conversations as data (JSONL "messages"). See data/chat_data.hpp.

#include "data/chat_data.hpp"

#include <fmt/format.h>
#include <utf8.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "data/json_no_duplicates.hpp"

namespace glass {

const char* chat_role_name(ChatRole role) {
  switch (role) {
    case ChatRole::kSystem:
      return "system";
    case ChatRole::kUser:
      return "user";
    case ChatRole::kAssistant:
      return "assistant";
  }
  return "?";
}

ChatDataError::ChatDataError(const std::string& source, std::size_t line, const std::string& field,
                             const std::string& problem)
    : std::runtime_error(fmt::format("{}:{}: {}: {}", source, line, field, problem)),
      source_(source),
      line_(line),
      field_(field),
      problem_(problem) {}

std::string chat_turn_problem(const std::vector<ChatMessage>& messages, bool may_end_with_user,
                              std::string* field) {
  *field = "messages";
  if (messages.empty()) return "the conversation is empty";
  std::size_t first = messages[0].role == ChatRole::kSystem ? 1 : 0;
  if (first == messages.size()) return "the conversation has only a system message, no turns";
  for (std::size_t i = first; i < messages.size(); ++i) {
    const ChatRole want = (i - first) % 2 == 0 ? ChatRole::kUser : ChatRole::kAssistant;
    if (messages[i].role == want) continue;
    *field = fmt::format("messages[{}].role", i);
    if (messages[i].role == ChatRole::kSystem)
      return "a system message may only be the first message";
    return fmt::format(
        "\"{}\" where \"{}\" was expected (turns alternate user, assistant, "
        "starting with the user)",
        chat_role_name(messages[i].role), chat_role_name(want));
  }
  if (messages.back().role != ChatRole::kAssistant && !may_end_with_user)
    return "the conversation ends with a user turn: no assistant turn answers it";
  return "";
}

namespace {

using json = nlohmann::json;

/// The reader of one file, with its name for every message.
class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(std::size_t line, const std::string& field,
                         const std::string& problem) const {
    throw ChatDataError(source_, line, field, problem);
  }

  /// The value of one line, parsed (duplicate keys and deep nesting refused).
  json parse_line(const std::string& text, std::size_t line) const {
    const auto bad = utf8::find_invalid(text.begin(), text.end());
    if (bad != text.end())
      fail(line, "(line)",
           fmt::format("invalid UTF-8 at byte {} of the line (0x{:02X})", bad - text.begin(),
                       static_cast<unsigned char>(*bad)));
    try {
      return parse_json_no_duplicate_keys(text);
    } catch (const DuplicateKeyError& e) {
      fail(line, "(line)", e.what());
    } catch (const JsonTooDeepError& e) {
      fail(line, "(line)", e.what());
    } catch (const json::exception& e) {
      fail(line, "(line)", fmt::format("not valid JSON ({})", e.what()));
    }
  }

  ChatMessage message(const json& m, std::size_t line, std::size_t i) const {
    const std::string at = fmt::format("messages[{}]", i);
    if (!m.is_object()) fail(line, at, fmt::format("is {}, not an object", m.type_name()));
    const auto role = m.find("role");
    if (role == m.end()) fail(line, at + ".role", "missing");
    if (!role->is_string())
      fail(line, at + ".role", fmt::format("is {}, not a string", role->type_name()));
    ChatMessage message;
    const std::string& name = role->get_ref<const std::string&>();
    if (name == "system") {
      message.role = ChatRole::kSystem;
    } else if (name == "user") {
      message.role = ChatRole::kUser;
    } else if (name == "assistant") {
      message.role = ChatRole::kAssistant;
    } else {
      fail(line, at + ".role",
           fmt::format("{} is not one of \"system\", \"user\", \"assistant\"", role->dump()));
    }
    const auto content = m.find("content");
    if (content == m.end()) fail(line, at + ".content", "missing");
    if (!content->is_string())
      fail(line, at + ".content", fmt::format("is {}, not a string", content->type_name()));
    message.content = content->get<std::string>();
    return message;
  }

  Conversation conversation(const std::string& text, std::size_t line) const {
    const json j = parse_line(text, line);
    if (!j.is_object()) fail(line, "(line)", fmt::format("is {}, not an object", j.type_name()));
    Conversation c;
    c.line = line;
    const auto messages = j.find("messages");
    if (messages == j.end()) fail(line, "messages", "missing");
    if (!messages->is_array())
      fail(line, "messages", fmt::format("is {}, not an array", messages->type_name()));
    for (std::size_t i = 0; i < messages->size(); ++i)
      c.messages.push_back(message((*messages)[i], line, i));
    std::string field;
    const std::string problem = chat_turn_problem(c.messages, false, &field);
    if (!problem.empty()) fail(line, field, problem);
    const auto family = j.find("family");
    if (family != j.end()) {
      if (!family->is_string())
        fail(line, "family", fmt::format("is {}, not a string", family->type_name()));
      c.family = family->get<std::string>();
    }
    return c;
  }

 private:
  std::string source_;
};

}  // namespace

std::vector<Conversation> parse_chat_jsonl(const std::string& text, const std::string& source) {
  const Reader reader(source);
  std::vector<Conversation> conversations;
  std::size_t line = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    ++line;
    std::string content = text.substr(start, end - start);
    if (!content.empty() && content.back() == '\r') content.pop_back();  // CRLF files
    start = end + 1;
    if (content.find_first_not_of(" \t") == std::string::npos) continue;  // a blank line
    conversations.push_back(reader.conversation(content, line));
  }
  if (conversations.empty()) reader.fail(0, "file", "holds no conversation");
  return conversations;
}

std::vector<Conversation> read_chat_jsonl(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ChatDataError(path, 0, "file", "cannot be opened for reading");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ChatDataError(path, 0, "file", "could not be read");
  return parse_chat_jsonl(text.str(), path);
}

}  // namespace glass
