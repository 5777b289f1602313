#pragma once
// A base model made ready for chat fine-tuning: its tokenizer gets the chat tokens
// (<|im_start|>, <|im_end|>) and, for a character vocabulary, the characters of the
// conversations it lacks ('+' and digits are rare in a novel); its embedding and output rows grow
// to match. Every token the base knew keeps its rows bit for bit; the new rows are drawn as the
// model's own initialisation draws them (N(0, init_std^2), seeded). A base that already has every
// token grows nothing.

#include <cstdint>
#include <memory>
#include <vector>

#include "data/chat_data.hpp"
#include "data/text_tokenizer.hpp"
#include "nn/decoder.hpp"

namespace glass {

/// The tokenizer a fine-tune of a model reading `base` trains with: `base` with the chat tokens
/// (TextTokenizer::with_chat_tokens) and, for a character vocabulary, every character of the
/// conversations' messages and of the template's role names it lacks, appended after its
/// characters in code point order (stored in `added` when given). A BPE vocabulary spells every
/// character with its byte tokens: nothing is added but the chat tokens. Throws as
/// with_chat_tokens.
TextTokenizer chat_tokenizer(const TextTokenizer& base,
                             const std::vector<Conversation>& conversations,
                             std::vector<char32_t>* added = nullptr);

/// A model reading `to` made from `model` reading `from`: every parameter copied bit for bit,
/// but the rows of tok_embeddings.weight and output.weight (vocab_size, d_model), which follow
/// the tokens: the row of each token of `from` is copied to that token's id in `to` (the same
/// text; a character model's unknown id 0 to id 0), and the rows of the tokens `to` adds keep
/// the initialisation of a Decoder(config with to's vocab_size, seed). The config's vocab_cap is
/// raised to the new size when it is smaller. Throws std::invalid_argument when `from` does not
/// match the model's vocab_size or `to` lacks one of `from`'s tokens.
std::unique_ptr<Decoder> grow_vocabulary(const Decoder& model, const TextTokenizer& from,
                                         const TextTokenizer& to, std::uint64_t seed);

}  // namespace glass
