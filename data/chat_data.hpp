#pragma once
// Conversations as data: a JSONL file, one conversation per line, in the shape chat datasets use
// (Hugging Face's "messages" format, OpenAI's fine-tuning files):
//
//   {"messages": [{"role": "system", "content": "Responda com exatidão."},
//                 {"role": "user", "content": "inverta a palavra casa"},
//                 {"role": "assistant", "content": "asac"}], "family": "reverse"}
//
// Rules: "messages" is a non-empty array of objects with a string "role" ("system", "user" or
// "assistant") and a string "content"; a system message may only come first; then the turns
// alternate user, assistant, user, ... and end with an assistant turn (the answer a model learns
// to give). A string "family" (the kind of task, for reports and exams) is kept as metadata;
// other keys, here and in a message, are ignored. Blank lines are skipped. Each line is read with
// the project's JSON parser that refuses duplicate keys and deep nesting
// (data/json_no_duplicates.hpp), and must be valid UTF-8.
//
// Reading is all or nothing: the first bad line throws ChatDataError naming its line, the field
// and the problem, and nothing of the file is returned.

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace glass {

/// Who speaks a message.
enum class ChatRole { kSystem, kUser, kAssistant };

/// The role's name as the file and the template write it: "system", "user", "assistant".
const char* chat_role_name(ChatRole role);

/// One message of a conversation.
struct ChatMessage {
  ChatRole role = ChatRole::kUser;
  std::string content;  ///< UTF-8
};

/// One conversation: its messages and where it came from.
struct Conversation {
  std::vector<ChatMessage> messages;
  std::string family;    ///< the line's "family", "" when it has none
  std::size_t line = 0;  ///< its line in the file (1-based); 0 when not read from a file
};

/// A line of a conversations file that cannot be read. what() is
/// "<source>:<line>: <field>: <problem>", e.g.
/// "train.jsonl:12: messages[2].role: \"bot\" is not one of \"system\", \"user\", \"assistant\"".
class ChatDataError : public std::runtime_error {
 public:
  ChatDataError(const std::string& source, std::size_t line, const std::string& field,
                const std::string& problem);
  const std::string& source() const { return source_; }    ///< the file's name
  std::size_t line() const { return line_; }               ///< 1-based
  const std::string& field() const { return field_; }      ///< e.g. "messages[2].role"
  const std::string& problem() const { return problem_; }  ///< what is wrong with it

 private:
  std::string source_;
  std::size_t line_;
  std::string field_;
  std::string problem_;
};

/// The problem with a conversation's order of turns, or "" when it has none: empty, a system
/// message after the first, two turns of one side in a row, no user turn, or the last turn not
/// the assistant's (unless `may_end_with_user`, for a prompt awaiting the answer). `field`
/// receives the field at fault ("messages" or "messages[i].role").
std::string chat_turn_problem(const std::vector<ChatMessage>& messages, bool may_end_with_user,
                              std::string* field);

/// Reads conversations from JSONL text (see the file comment). `source` names it in errors.
/// Throws ChatDataError for the first bad line (nothing of the file is returned), or for a text
/// without any conversation (line 0, field "file").
std::vector<Conversation> parse_chat_jsonl(const std::string& text, const std::string& source);

/// parse_chat_jsonl of a file. Throws ChatDataError (line 0, field "file") for a file that
/// cannot be read.
std::vector<Conversation> read_chat_jsonl(const std::string& path);

}  // namespace glass
