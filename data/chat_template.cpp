// The ChatML template. See data/chat_template.hpp.

#include "data/chat_template.hpp"

#include <fmt/format.h>

#include "data/text.hpp"

namespace glass {

namespace {

/// The ids and labels being written, with the tokenizer's chat tokens.
class Renderer {
 public:
  Renderer(const TextTokenizer& tokenizer, std::size_t line) : tokenizer_(tokenizer), line_(line) {
    const auto start = tokenizer.special_id(SpecialToken::kImStart);
    const auto end = tokenizer.special_id(SpecialToken::kImEnd);
    if (!start || !end)
      throw std::invalid_argument(
          "the chat template needs the tokenizer's chat tokens <|im_start|> and <|im_end|>, "
          "which this one does not have (TextTokenizer::with_chat_tokens)");
    im_start_ = *start;
    im_end_ = *end;
  }

  /// <|im_start|>{role}\n{content}<|im_end|>\n, the labels on an assistant's content and
  /// <|im_end|>. (The prompt's last header is `header` alone.)
  void message(const ChatMessage& m, std::size_t index) {
    const std::u32string role = utf8_to_u32(chat_role_name(m.role)) + U"\n";
    const std::u32string content = utf8_to_u32(m.content);
    if (m.role != ChatRole::kAssistant) {
      push(im_start_, false);
      push(encode(role + content, index, false), false);
      push(im_end_, false);
    } else {
      header(index);
      push(encode(content, index, true), true);
      push(im_end_, true);
    }
    push(encode(U"\n", index, false), false);
  }

  /// <|im_start|>assistant\n: what precedes an answer (the `index`th message).
  void header(std::size_t index) {
    push(im_start_, false);
    push(encode(U"assistant\n", index, false), false);
  }

  ChatTokens& tokens() { return tokens_; }

 private:
  std::vector<std::int32_t> encode(const std::u32string& text, std::size_t index,
                                   bool continuation) const {
    try {
      return continuation ? tokenizer_.encode_continuation(text) : tokenizer_.encode(text);
    } catch (const UnknownCharacterError& e) {
      throw UnknownCharacterError(
          fmt::format("conversation at line {}, messages[{}]: {}", line_, index, e.what()),
          e.character(), e.position(), e.count());
    }
  }
  void push(std::int32_t id, bool learn) {
    tokens_.ids.push_back(id);
    tokens_.labels.push_back(learn ? id : kIgnoreLabel);
  }
  void push(const std::vector<std::int32_t>& ids, bool learn) {
    for (const std::int32_t id : ids) push(id, learn);
  }

  const TextTokenizer& tokenizer_;
  std::size_t line_;
  std::int32_t im_start_ = 0;
  std::int32_t im_end_ = 0;
  ChatTokens tokens_;
};

void check_turns(const std::vector<ChatMessage>& messages, bool prompt, std::size_t line) {
  std::string field;
  const std::string problem = chat_turn_problem(messages, prompt, &field);
  if (!problem.empty())
    throw std::invalid_argument(
        fmt::format("conversation at line {}: {}: {}", line, field, problem));
  if (prompt && messages.back().role != ChatRole::kUser)
    throw std::invalid_argument(
        "a chat prompt ends with the user's turn (the assistant answers it)");
}

}  // namespace

ChatTokens render_chat(const TextTokenizer& tokenizer, const Conversation& conversation,
                       std::size_t context_length) {
  check_turns(conversation.messages, false, conversation.line);
  Renderer r(tokenizer, conversation.line);
  for (std::size_t i = 0; i < conversation.messages.size(); ++i)
    r.message(conversation.messages[i], i);
  const std::size_t n = r.tokens().ids.size();
  if (context_length > 0 && n > context_length)
    throw ChatTooLongError(
        fmt::format("the conversation at line {} ({} messages) is {} tokens long, more than the "
                    "model's context of {} tokens",
                    conversation.line, conversation.messages.size(), n, context_length),
        conversation.line, n, context_length);
  return std::move(r.tokens());
}

std::vector<std::int32_t> render_chat_prompt(const TextTokenizer& tokenizer,
                                             const std::vector<ChatMessage>& messages,
                                             std::size_t context_length, std::size_t line) {
  check_turns(messages, true, line);
  Renderer r(tokenizer, line);
  for (std::size_t i = 0; i < messages.size(); ++i) r.message(messages[i], i);
  r.header(messages.size());
  const std::size_t n = r.tokens().ids.size();
  if (context_length > 0 && n >= context_length)
    throw ChatTooLongError(
        fmt::format("the chat prompt{} ({} messages) is {} tokens long and leaves no room for "
                    "an answer in the model's context of {} tokens",
                    line > 0 ? fmt::format(" at line {}", line) : "", messages.size(), n,
                    context_length),
        line, n, context_length);
  return std::move(r.tokens().ids);
}

}  // namespace glass
