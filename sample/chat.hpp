#pragma once
// Chatting with a checkpoint whose tokenizer has the chat tokens (ChatML, data/chat_template.hpp):
// one answer generated after a rendered prompt (generate_answer), and a multi-turn session that
// keeps its history in the KV cache (ChatSession): each turn feeds the model only the new
// user turn's tokens, never the earlier turns again. `glass chat` and the exam (sample/chat_exam.hpp)
// are built on these.
//
// An answer ends at <|im_end|> (which is not part of its text), at the token cap, at the end of
// the model's window, or when the caller's stop flag is raised (Ctrl-C). A session closes an
// answer that did not end by itself with <|im_end|>, so that the history always follows the
// template.

#include <csignal>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.hpp"
#include "sample/sampler.hpp"

namespace glass {

/// A checkpoint whose tokenizer has no chat tokens (<|im_start|>, <|im_end|>): a base model that
/// was never fine-tuned on conversations. A fact; the front end says which command fine-tunes.
class NoChatTokensError : public std::invalid_argument {
 public:
  NoChatTokensError();
};

/// The ids of <|im_start|> and <|im_end|> of `checkpoint`'s tokenizer. Throws NoChatTokensError
/// when it has none.
struct ChatTokenIds {
  std::int32_t im_start = 0;
  std::int32_t im_end = 0;
};
ChatTokenIds chat_token_ids(const Checkpoint& checkpoint);

/// A turn that does not fit in what is left of the window: `needed` tokens (the turn's prompt
/// and one token of answer), `left` of the `window` free. The history is unchanged.
class ChatContextFullError : public std::runtime_error {
 public:
  ChatContextFullError(std::size_t needed, std::size_t left, std::size_t window, std::string unit);
  std::size_t needed() const { return needed_; }
  std::size_t left() const { return left_; }
  std::size_t window() const { return window_; }
  const std::string& unit() const { return unit_; }  ///< "characters" or "tokens"

 private:
  std::size_t needed_, left_, window_;
  std::string unit_;
};

/// How an answer ended.
enum class AnswerEnd {
  kEndOfTurn,   ///< the model wrote <|im_end|>
  kTokenCap,    ///< max_tokens were generated first
  kWindowFull,  ///< the text reached the model's window
  kStopped,     ///< the stop flag was raised (Ctrl-C)
};

/// One generated answer.
struct ChatAnswer {
  std::string text;               ///< UTF-8, without <|im_end|>
  std::vector<std::int32_t> ids;  ///< the generated ids, <|im_end|> included when it came
  AnswerEnd end = AnswerEnd::kTokenCap;
  std::vector<double> first_logits;  ///< (vocab_size) logits the first token was drawn from
};

/// How answers are drawn.
struct ChatOptions {
  SamplingOptions sampling;      ///< temperature, top-k, ...; use_kv_cache is always on
  std::size_t max_tokens = 256;  ///< the most tokens of one answer (<|im_end|> included)
  std::uint64_t seed = 1337;     ///< the session's one random stream
};

/// Generates the answer that continues `text` (a rendered prompt, ending with
/// <|im_start|>assistant\n) with `next` (whose previous calls, if any, read a prefix of `text`):
/// appends each drawn id to `text`, passes each piece of text to `on_text` as it comes (not the
/// <|im_end|>), and ends as ChatAnswer says. `stop` (optional) is polled after each token.
/// `window`: the text never grows past it. Throws as NextTokenLogits and the sampler do.
ChatAnswer generate_answer(NextTokenLogits& next, std::vector<std::int32_t>& text,
                           std::size_t window, const TextTokenizer& tokenizer,
                           const ChatOptions& options, std::mt19937_64& rng,
                           const std::function<void(const std::string&)>& on_text = {},
                           const volatile std::sig_atomic_t* stop = nullptr);

/// A conversation with a checkpoint, its history in the KV cache. The checkpoint must outlive
/// the session.
class ChatSession {
 public:
  /// `system` (may be ""): a system message opening every conversation of the session. Throws
  /// NoChatTokensError for a tokenizer without chat tokens, std::invalid_argument for bad
  /// sampling options.
  ChatSession(const Checkpoint& checkpoint, ChatOptions options, std::string system = "");

  /// Answers `user` (UTF-8): renders the user's turn after the history, feeds the model those
  /// tokens alone and generates (generate_answer). Throws ChatContextFullError when the turn
  /// and one token of answer do not fit in the window, UnknownCharacterError for a character
  /// outside a character model's vocabulary, Utf8Error for text that is not UTF-8;
  /// the history is unchanged then.
  ChatAnswer answer(const std::string& user,
                    const std::function<void(const std::string&)>& on_text = {},
                    const volatile std::sig_atomic_t* stop = nullptr);

  /// Forgets the conversation (history and KV cache).
  void reset();

  /// The conversation's ids so far (each answer closed by <|im_end|>).
  const std::vector<std::int32_t>& history() const { return text_; }
  /// How many tokens the model has read since the last reset (each exactly once).
  std::size_t tokens_read() const { return tokens_read_; }
  /// The window the conversation must fit in (Checkpoint::window).
  std::size_t window() const { return window_; }
  /// Tokens of the window not used yet.
  std::size_t tokens_left() const { return text_.size() < window_ ? window_ - text_.size() : 0; }

 private:
  std::vector<std::int32_t> turn_ids(const std::string& user) const;

  const Checkpoint& checkpoint_;
  ChatOptions options_;
  std::string system_;
  ChatTokenIds chat_ids_;
  std::size_t window_;
  std::mt19937_64 rng_;
  std::optional<NextTokenLogits> next_;  // emplaced anew by reset
  std::vector<std::int32_t> text_;       // the history the model has read (or is about to read)
  std::size_t tokens_read_ = 0;
};

}  // namespace glass
