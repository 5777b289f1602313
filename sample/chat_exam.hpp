#pragma once
// The chat exam (`glass eval --chat`): each conversation of a JSONL file (data/chat_data.hpp)
// is prompted with all its messages but the last, the assistant's reference answer; the model
// answers greedily (temperature 0) up to a token cap, and the answer is graded by exact match.
// An answer is the text the model wrote before <|im_end|>, or all of it when the cap or the
// window came first; whether it ended with <|im_end|> is counted apart. Scores are per family
// (the line's "family"; "" when it has none) and overall. The same exam on a base model that has
// the chat tokens, prompted with the template, is the baseline a fine-tuning is measured against.

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint.hpp"
#include "data/chat_data.hpp"

namespace glass {

/// The exam's settings.
struct ChatExamOptions {
  std::size_t max_tokens = 64;  ///< the most tokens of one answer (<|im_end|> included)
};

/// Counts of one family (or of all).
struct ChatExamScore {
  std::string family;       ///< "" for the overall score
  std::size_t answers = 0;  ///< conversations asked
  std::size_t correct = 0;  ///< answers equal to the reference
  std::size_t ended = 0;    ///< answers that ended with <|im_end|>
  double accuracy() const { return answers ? static_cast<double>(correct) / answers : 0.0; }
  double ended_share() const { return answers ? static_cast<double>(ended) / answers : 0.0; }
};

/// One wrong answer, to show.
struct ChatExamMiss {
  std::size_t line = 0;  ///< the conversation's line in the file
  std::string family;
  std::string prompt;    ///< the last user message
  std::string expected;  ///< the reference answer
  std::string got;       ///< the model's answer
  bool ended = false;    ///< it ended with <|im_end|>
};

/// The exam's result.
struct ChatExamResult {
  std::vector<ChatExamScore> families;  ///< in order of name
  ChatExamScore overall;
  std::vector<ChatExamMiss> misses;  ///< every wrong answer, in file order
};

/// Runs the exam (see the file comment) on `conversations` (each ending with the assistant's
/// answer, as read_chat_jsonl gives them). Throws NoChatTokensError (sample/chat.hpp) for a
/// tokenizer without chat tokens, ChatTooLongError naming the line for a prompt that leaves no
/// room for an answer in the window, UnknownCharacterError naming the line and message for a
/// character a character model does not know.
ChatExamResult run_chat_exam(const Checkpoint& checkpoint,
                             const std::vector<Conversation>& conversations,
                             const ChatExamOptions& options);

/// The result as JSON: {"overall": {answers, correct, accuracy, ended, ended_share},
/// "families": {name: {...}}, "wrong": [{line, family, prompt, expected, got, ended}, ...]}.
nlohmann::json chat_exam_json(const ChatExamResult& result);

}  // namespace glass
