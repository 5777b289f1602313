// One interface over the two tokenizers: the same calls give each tokenizer's own answers.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "data/text_tokenizer.hpp"

using glass::TextTokenizer;
using glass::TokenizerKind;

TEST(TextTokenizer, KindsByName) {
  EXPECT_EQ(glass::tokenizer_kind_from_name("char"), TokenizerKind::kChar);
  EXPECT_EQ(glass::tokenizer_kind_from_name("bpe"), TokenizerKind::kBpe);
  EXPECT_STREQ(glass::tokenizer_kind_name(TokenizerKind::kBpe), "bpe");
  try {
    glass::tokenizer_kind_from_name("BPE");
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("use \"char\""), std::string::npos) << e.what();
  }
}

TEST(TextTokenizer, CharacterTokenizerThroughTheInterface) {
  // Counted by hand: "abca" -> a 2, b 1, c 1: ids a 1, b 2, c 3 (0 is the unknown id).
  const TextTokenizer tok(glass::Tokenizer::from_text(U"abca"));
  EXPECT_EQ(tok.kind(), TokenizerKind::kChar);
  EXPECT_EQ(tok.vocab_size(), 4u);
  EXPECT_EQ(tok.encode(U"cab"), (std::vector<std::int32_t>{3, 1, 2}));
  EXPECT_EQ(tok.decode({3, 1, 2}), U"cab");
  EXPECT_EQ(tok.encode_compact(U"cab").to_vector(0, 3), (std::vector<std::int32_t>{3, 1, 2}));
  EXPECT_EQ(tok.token_text(2), "b");
  EXPECT_EQ(tok.token_text(0), "\xEF\xBF\xBD");  // U+FFFD
  EXPECT_THROW(tok.encode(U"z"), glass::UnknownCharacterError);
  EXPECT_NE(tok.chars(), nullptr);
  EXPECT_EQ(tok.bpe(), nullptr);
}

TEST(TextTokenizer, BpeTokenizerThroughTheInterface) {
  // The tokenizer of MergesDoNotCrossAWordBoundary (bpe_test.cpp): "▁ab" 263, "▁b" 264.
  const TextTokenizer tok(glass::BpeTokenizer::train(U"ab ab b", 265));
  EXPECT_EQ(tok.kind(), TokenizerKind::kBpe);
  EXPECT_EQ(tok.vocab_size(), 265u);
  EXPECT_EQ(tok.encode(U"ab b"), (std::vector<std::int32_t>{263, 264}));
  EXPECT_EQ(tok.decode({263, 264}), U"ab b");
  EXPECT_EQ(tok.encode_compact(U"ab b").to_vector(0, 2), (std::vector<std::int32_t>{263, 264}));
  EXPECT_EQ(tok.token_text(263), "▁ab");
  EXPECT_EQ(tok.token_text(1), "<s>");
  EXPECT_THROW(tok.token_text(265), std::out_of_range);
  EXPECT_NE(tok.bpe(), nullptr);
  EXPECT_EQ(tok.chars(), nullptr);
}

TEST(StreamDecoder, ByteTokensWaitForTheirWholeCharacter) {
  // "a 🙂": after the dummy prefix, 'a', a space and the emoji's four UTF-8 bytes F0 9F 99 82
  // (byte b is id b + 3), as the BPE tokenizer spells a character outside its vocabulary.
  const glass::BpeTokenizer bpe = glass::BpeTokenizer::train(U"a a a", 259 + 2);
  const std::vector<std::int32_t> ids = bpe.encode(U"a \U0001F642");
  ASSERT_EQ(ids.size(), 7u);
  glass::StreamDecoder stream(nullptr, &bpe);
  std::vector<std::string> pieces;
  for (std::int32_t id : ids) pieces.push_back(stream.push(id));
  // The tokens "▁", "a", "▁" give " ", "a", " "; the first three bytes give nothing yet, the
  // fourth the whole emoji.
  EXPECT_EQ(pieces, (std::vector<std::string>{" ", "a", " ", "", "", "", "\xF0\x9F\x99\x82"}));
  EXPECT_EQ(stream.flush(), "");
  // An incomplete character at the end: flush gives U+FFFD.
  glass::StreamDecoder cut(nullptr, &bpe);
  EXPECT_EQ(cut.push(0xF0 + 3), "");
  EXPECT_EQ(cut.flush(), "\xEF\xBF\xBD");
  // A character model: one character per id.
  const glass::Tokenizer chars = glass::Tokenizer::from_text(U"abca");
  glass::StreamDecoder plain(&chars, nullptr);
  EXPECT_EQ(plain.push(3), "c");
  EXPECT_EQ(plain.flush(), "");
}
