#pragma once
// The chat template (ChatML, as llama.cpp and Hugging Face know it): a conversation as token ids
// for fine-tuning, with the targets the loss is taken on, and a prompt for generation.
//
//   <|im_start|>system\n{content}<|im_end|>\n        (when there is a system message)
//   <|im_start|>user\n{content}<|im_end|>\n
//   <|im_start|>assistant\n{content}<|im_end|>\n
//   ...
//
// <|im_start|> and <|im_end|> are the tokenizer's chat tokens (TextTokenizer::with_chat_tokens),
// put in by id; the text between them is encoded as text, so a marker typed in a message stays
// ordinary characters. A BPE tokenizer encodes each text between two chat tokens with its dummy
// prefix, as llama.cpp does after a special token ("\n" after <|im_end|> is "▁\n"), except an
// assistant's content: it continues "assistant\n" without a prefix, encoded apart from it so that
// the prompt's last tokens (<|im_start|> "assistant\n") are exactly the ones training saw before
// an answer. (llama.cpp, reading a whole history, encodes "assistant\n{content}" at once; a BPE
// token joining "\n" to the content's first characters there may split differently.)
//
// Fine-tuning learns only the answers: labels[i] is ids[i] for the tokens of an assistant's
// content and its closing <|im_end|> (the model learns to stop), kIgnoreLabel everywhere else.
// A model reading ids[0..n-1) is trained to predict labels[1..n), and cross_entropy skips the
// positions whose target is its ignore_index (autograd/ops.hpp: -1, kIgnoreLabel).

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/chat_data.hpp"
#include "data/text_tokenizer.hpp"

namespace glass {

/// The label of a position the loss skips: cross_entropy's default ignore_index.
inline constexpr std::int32_t kIgnoreLabel = -1;

/// A conversation in token ids, with its labels (same length; see the file comment).
struct ChatTokens {
  std::vector<std::int32_t> ids;
  std::vector<std::int32_t> labels;  ///< ids[i] where the loss is taken, kIgnoreLabel elsewhere
};

/// A conversation that does not fit the model's context. what() names it (its line in the file)
/// and both lengths.
class ChatTooLongError : public std::runtime_error {
 public:
  ChatTooLongError(const std::string& what, std::size_t line, std::size_t length,
                   std::size_t context_length)
      : std::runtime_error(what), line_(line), length_(length), context_length_(context_length) {}
  std::size_t line() const { return line_; }      ///< the conversation's line (0: not from a file)
  std::size_t length() const { return length_; }  ///< its rendered length in tokens
  std::size_t context_length() const { return context_length_; }

 private:
  std::size_t line_;
  std::size_t length_;
  std::size_t context_length_;
};

/// A conversation as ChatML ids and labels (see the file comment). The conversation must follow
/// the rules of data/chat_data.hpp (chat_turn_problem), and its ids number at most
/// `context_length` (0: no limit). Throws std::invalid_argument for a tokenizer without chat
/// tokens or a conversation breaking the rules, ChatTooLongError for one too long, and
/// UnknownCharacterError for a character outside a character model's vocabulary (its what()
/// prefixed with the conversation's line and message).
ChatTokens render_chat(const TextTokenizer& tokenizer, const Conversation& conversation,
                       std::size_t context_length = 0);

/// The ids a model continues to answer: the messages as render_chat writes them (they end with
/// a user turn), then <|im_start|> "assistant\n". Generation stops at <|im_end|>. Throws as
/// render_chat (the history may end with the user; ChatTooLongError when the prompt alone does
/// not leave room in `context_length` for one token of answer). `line`: the conversation's line
/// in a file, named in those errors (0: not from a file).
std::vector<std::int32_t> render_chat_prompt(const TextTokenizer& tokenizer,
                                             const std::vector<ChatMessage>& messages,
                                             std::size_t context_length = 0, std::size_t line = 0);

}  // namespace glass
