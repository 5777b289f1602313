// Chatting with a checkpoint: one answer, and a session whose history stays in the KV cache.
// See sample/chat.hpp.

#include "sample/chat.hpp"

#include <utility>

#include <fmt/format.h>

#include "data/chat_template.hpp"
#include "data/text.hpp"

namespace glass {

NoChatTokensError::NoChatTokensError()
    : std::invalid_argument(
          "this checkpoint's tokenizer has no chat tokens (<|im_start|>, <|im_end|>): it is a base "
          "model, never fine-tuned on conversations") {}

ChatTokenIds chat_token_ids(const Checkpoint& checkpoint) {
  const auto start = checkpoint.tokenizer().special_id(SpecialToken::kImStart);
  const auto end = checkpoint.tokenizer().special_id(SpecialToken::kImEnd);
  if (!start || !end) throw NoChatTokensError();
  return {*start, *end};
}

ChatContextFullError::ChatContextFullError(std::size_t needed, std::size_t left, std::size_t window,
                                           std::string unit)
    : std::runtime_error(fmt::format(
          "the conversation is full: this turn needs {} {} (with one of answer) and {} of the "
          "model's {} are left",
          needed, unit, left, window)),
      needed_(needed),
      left_(left),
      window_(window),
      unit_(std::move(unit)) {}

ChatAnswer generate_answer(NextTokenLogits& next, std::vector<std::int32_t>& text,
                           std::size_t window, const TextTokenizer& tokenizer,
                           const ChatOptions& options, std::mt19937_64& rng,
                           const std::function<void(const std::string&)>& on_text,
                           const volatile std::sig_atomic_t* stop) {
  const std::int32_t im_end = *tokenizer.special_id(SpecialToken::kImEnd);
  ChatAnswer answer;
  StreamDecoder stream(tokenizer);  // BPE: bytes wait for their whole character
  auto say = [&](const std::string& piece) {
    answer.text += piece;
    if (on_text && !piece.empty()) on_text(piece);
  };
  while (true) {
    if (answer.ids.size() >= options.max_tokens) break;  // kTokenCap
    if (text.size() >= window) {
      answer.end = AnswerEnd::kWindowFull;
      break;
    }
    std::vector<double> logits = next(text);  // (vocab_size) after text.back()
    if (answer.ids.empty()) answer.first_logits = logits;
    const std::int32_t id = draw(generation_probs(std::move(logits), options.sampling, text), rng);
    text.push_back(id);
    answer.ids.push_back(id);
    if (id == im_end) {
      answer.end = AnswerEnd::kEndOfTurn;
      break;
    }
    say(stream.push(id));
    if (stop != nullptr && *stop != 0) {
      answer.end = AnswerEnd::kStopped;
      break;
    }
  }
  say(stream.flush());  // an incomplete character, if any
  return answer;
}

ChatSession::ChatSession(const Checkpoint& checkpoint, ChatOptions options, std::string system)
    : checkpoint_(checkpoint),
      options_(std::move(options)),
      system_(std::move(system)),
      chat_ids_(chat_token_ids(checkpoint)),
      window_(checkpoint.window()),
      rng_(options_.seed) {
  options_.sampling.use_kv_cache = true;  // the history lives in the cache
  validate(options_.sampling);
  reset();
}

void ChatSession::reset() {
  next_.emplace(checkpoint_.model(), window_, options_.sampling);
  text_.clear();
  tokens_read_ = 0;
}

/// The ids that follow the history for a new user turn: the first turn is the whole prompt
/// (with the system message); a later one the "\n" that closes the last answer's line, then the
/// user's turn and the assistant's header, as render_chat_prompt writes them.
std::vector<std::int32_t> ChatSession::turn_ids(const std::string& user) const {
  std::vector<ChatMessage> messages;
  if (text_.empty() && !system_.empty()) messages.push_back({ChatRole::kSystem, system_});
  messages.push_back({ChatRole::kUser, user});
  std::vector<std::int32_t> ids;
  if (!text_.empty()) ids = checkpoint_.tokenizer().encode(U"\n");
  const std::vector<std::int32_t> turn = render_chat_prompt(checkpoint_.tokenizer(), messages);
  ids.insert(ids.end(), turn.begin(), turn.end());
  return ids;
}

ChatAnswer ChatSession::answer(const std::string& user,
                               const std::function<void(const std::string&)>& on_text,
                               const volatile std::sig_atomic_t* stop) {
  const std::vector<std::int32_t> turn = turn_ids(user);
  if (text_.size() + turn.size() + 1 > window_)
    throw ChatContextFullError(turn.size() + 1, tokens_left(), window_, checkpoint_.unit());
  text_.insert(text_.end(), turn.begin(), turn.end());
  const std::size_t read_before = next_->tokens_read();
  ChatAnswer a = generate_answer(*next_, text_, window_, checkpoint_.tokenizer(), options_, rng_,
                                 on_text, stop);
  if (a.end != AnswerEnd::kEndOfTurn) text_.push_back(chat_ids_.im_end);  // close the turn
  tokens_read_ += next_->tokens_read() - read_before;
  return a;
}

}  // namespace glass
