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
  EXPECT_EQ(tok.decode_continuation({3, 1, 2}), "cab");
  EXPECT_STREQ(tok.unit_name(), "character");
  EXPECT_EQ(tok.vocabulary_text(), "vocabulary 4 (3 characters + the unknown id 0)");
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
  EXPECT_EQ(tok.decode_continuation({263, 264}), " ab b");  // the first '▁' kept as a space
  EXPECT_STREQ(tok.unit_name(), "token");
  EXPECT_EQ(tok.vocabulary_text(), "a BPE vocabulary of 265 tokens");
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

TEST(TextTokenizer, EncodeSplitCutsAtNinetyPercentOrTheNextSpace) {
  // Characters: "abcabcabca" (10) splits at floor(9.0) = 9; the last 'a' is 1 byte of validation.
  const TextTokenizer chars(glass::Tokenizer::from_text(U"abcabcabca"));
  const glass::SplitIds c = chars.encode_split(U"abcabcabca", false);
  EXPECT_EQ(c.ids.size(), 10u);
  EXPECT_EQ(c.n_train, 9u);
  EXPECT_EQ(c.val_bytes, 1u);
  // A character outside the vocabulary: the unknown id 0 with map_unknown, else an error.
  const glass::SplitIds u = chars.encode_split(U"abczzabcab", true);
  EXPECT_EQ(u.unknown, 2u);
  EXPECT_EQ(u.ids[3], 0);
  EXPECT_THROW(chars.encode_split(U"abczzabcab", false), glass::UnknownCharacterError);

  // BPE ("▁ab" 263, "▁b" 264): "ab ab ab ab b" (13) cuts at the space at 11 = floor(11.7);
  // the training part "ab ab ab ab" is 4 tokens, a prefix of the whole text's 5.
  const TextTokenizer bpe(glass::BpeTokenizer::train(U"ab ab b", 265));
  EXPECT_EQ(glass::split_point(U"ab ab ab ab b", TokenizerKind::kBpe), 11u);
  const glass::SplitIds b = bpe.encode_split(U"ab ab ab ab b", false);
  EXPECT_EQ(b.ids.to_vector(0, b.ids.size()), (std::vector<std::int32_t>{263, 263, 263, 263, 264}));
  EXPECT_EQ(b.n_train, 4u);
  EXPECT_EQ(b.val_bytes, 2u);  // " b"
  // No space after 90%: "ab ab ab" (8) cuts at 7, inside the word "ab" (the whole text's last
  // token "▁ab" crosses the cut): the parts are encoded apart, the validation part "b" as a text
  // of its own ("▁b" 264).
  EXPECT_EQ(glass::split_point(U"ab ab ab", TokenizerKind::kBpe), 7u);
  const glass::SplitIds w = bpe.encode_split(U"ab ab ab", false);
  const std::vector<std::int32_t> train = bpe.encode(U"ab ab a");
  ASSERT_EQ(w.n_train, train.size());
  const std::vector<std::int32_t> val = bpe.encode(U"b");
  ASSERT_EQ(w.ids.size(), train.size() + val.size());
  EXPECT_EQ(w.ids.to_vector(0, w.n_train), train);
  EXPECT_EQ(w.ids.to_vector(w.n_train, w.ids.size()), val);
  EXPECT_EQ(val, (std::vector<std::int32_t>{264}));
  EXPECT_NE(w.ids.to_vector(0, w.ids.size()), bpe.encode(U"ab ab ab"));  // not the whole text's
}
