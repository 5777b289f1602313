// A small untrained chat checkpoint for the tests of `glass chat` and the exam: a character
// vocabulary with the chat tokens <|im_start|>, <|im_end|> (TextTokenizer::with_chat_tokens),
// random weights, written through the checkpoint writer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "checkpoint/checkpoint.hpp"
#include "data/text_tokenizer.hpp"
#include "fixtures.hpp"

namespace glass_test {

/// The characters of the chat checkpoint: lower-case letters, digits, a few signs, space and
/// newline (the template's role names and the exam's questions are written with them).
inline const char32_t* const kChatText = U"abcdefghijklmnopqrstuvwxyz0123456789 \n?+-éáãç";

/// Writes small_config's model with kChatText's characters and the chat tokens (vocabulary 47
/// + 2), `context_length` positions and weights drawn with `seed` and `init_std`, as a
/// checkpoint directory `dir`. Returns the tokenizer.
inline glass::TextTokenizer write_chat_checkpoint(const std::string& dir,
                                                  std::size_t context_length, std::uint64_t seed,
                                                  double init_std = 0.5) {
  const glass::TextTokenizer tokenizer =
      glass::TextTokenizer(glass::Tokenizer::from_text(kChatText)).with_chat_tokens();
  glass::ModelConfig config = small_config(tokenizer.vocab_size(), context_length);
  config.init_std = init_std;
  const glass::Decoder model(config, seed);
  glass::save_model(dir, model, *tokenizer.chars());
  return tokenizer;
}

}  // namespace glass_test
