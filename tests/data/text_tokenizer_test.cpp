// One interface over the two tokenizers: the same calls give each tokenizer's own answers.

#include <gtest/gtest.h>

#include <optional>
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
  EXPECT_EQ(tok.decode_generated({3, 1, 2}), "cab");
  EXPECT_STREQ(tok.unit(false), "character");
  EXPECT_EQ(tok.describe(/*count_ids=*/true), "vocabulary 4 (3 characters + the unknown id 0)");
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
  EXPECT_EQ(tok.decode_generated({263, 264}), " ab b");  // the first '▁' kept as a space
  EXPECT_STREQ(tok.unit(false), "token");
  EXPECT_EQ(tok.describe(/*count_ids=*/true), "a BPE vocabulary of 265 tokens");
}

TEST(StreamDecoder, ByteTokensWaitForTheirWholeCharacter) {
  // "a 🙂": after the dummy prefix, 'a', a space and the emoji's four UTF-8 bytes F0 9F 99 82
  // (byte b is id b + 3), as the BPE tokenizer spells a character outside its vocabulary.
  const TextTokenizer bpe(glass::BpeTokenizer::train(U"a a a", 259 + 2));
  const std::vector<std::int32_t> ids = bpe.encode(U"a \U0001F642");
  ASSERT_EQ(ids.size(), 7u);
  glass::StreamDecoder stream(bpe);
  std::vector<std::string> pieces;
  for (std::int32_t id : ids) pieces.push_back(stream.push(id));
  // The tokens "▁", "a", "▁" give " ", "a", " "; the first three bytes give nothing yet, the
  // fourth the whole emoji.
  EXPECT_EQ(pieces, (std::vector<std::string>{" ", "a", " ", "", "", "", "\xF0\x9F\x99\x82"}));
  EXPECT_EQ(stream.flush(), "");
  // The pieces joined are the ids decoded at once, the leading space kept.
  EXPECT_EQ(bpe.decode_generated(ids), " a \xF0\x9F\x99\x82");
  // An incomplete character at the end: flush gives U+FFFD.
  glass::StreamDecoder cut(bpe);
  EXPECT_EQ(cut.push(0xF0 + 3), "");
  EXPECT_EQ(cut.flush(), "\xEF\xBF\xBD");
  // A character model: one character per id.
  const TextTokenizer chars(glass::Tokenizer::from_text(U"abca"));
  glass::StreamDecoder plain(chars);
  EXPECT_EQ(plain.push(3), "c");
  EXPECT_EQ(plain.flush(), "");
}

TEST(TextTokenizer, UnitNamesSayWhatAnIdStandsFor) {
  const TextTokenizer chars(glass::Tokenizer::from_text(U"abca"));
  const TextTokenizer bpe(glass::BpeTokenizer::train(U"ab ab b", 265));
  EXPECT_STREQ(chars.unit(), "characters");
  EXPECT_STREQ(chars.unit(false), "character");
  EXPECT_STREQ(bpe.unit(), "tokens");
  EXPECT_STREQ(bpe.unit(false), "token");
  EXPECT_STREQ(chars.kind_name(), "char");
  EXPECT_EQ(chars.describe(), "a character vocabulary of 3 characters");
  EXPECT_EQ(bpe.describe(), "a BPE vocabulary of 265 tokens");
  EXPECT_STREQ(bpe.kind_name(), "bpe");
}

TEST(TextTokenizer, APromptWithUnknownCharactersIsRefusedWithTheFactsOrMapped) {
  // Ids as in CharacterTokenizerThroughTheInterface: a 1, b 2, c 3.
  const TextTokenizer tok(glass::Tokenizer::from_text(U"abca"));
  try {
    tok.encode_prompt(U"abXcY", glass::UnknownPolicy::kRefuse);
    ADD_FAILURE() << "no error";
  } catch (const glass::UnknownCharacterError& e) {
    EXPECT_EQ(e.character(), U'X');
    EXPECT_EQ(e.position(), 2u);
    EXPECT_EQ(e.count(), 2u);
    const std::string what = e.what();
    EXPECT_NE(what.find("'X' (U+0058) at position 2, 'Y' (U+0059) at position 4"),
              std::string::npos)
        << what;
    EXPECT_EQ(what.find("--"), std::string::npos) << "no command-line flag: " << what;
  }
  std::size_t unknown = 99;
  EXPECT_EQ(tok.encode_prompt(U"abXcY", glass::UnknownPolicy::kMapToUnknownId, &unknown),
            (std::vector<std::int32_t>{1, 2, 0, 3, 0}));
  EXPECT_EQ(unknown, 2u);
  EXPECT_EQ(tok.encode_prompt(U"cab", glass::UnknownPolicy::kRefuse, &unknown),
            (std::vector<std::int32_t>{3, 1, 2}));
  EXPECT_EQ(unknown, 0u);
  EXPECT_FALSE(tok.knows(U'X'));
  EXPECT_TRUE(tok.knows(U'a'));
}

TEST(TextTokenizer, ABpePromptNeverFails) {
  const TextTokenizer tok(glass::BpeTokenizer::train(U"ab ab b", 265));
  std::size_t unknown = 99;
  // 'X' is outside the base characters: its byte token, id 'X' + 3.
  const std::vector<std::int32_t> ids =
      tok.encode_prompt(U"ab X", glass::UnknownPolicy::kRefuse, &unknown);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.front(), 263);  // "▁ab"
  EXPECT_EQ(ids.back(), 'X' + 3);
  EXPECT_EQ(tok.decode(ids), U"ab X");
  EXPECT_EQ(unknown, 0u);
  EXPECT_TRUE(tok.knows(U'X'));
}

TEST(TextTokenizer, SpecialIdsStartIdAndVocabulary) {
  const TextTokenizer chars(glass::Tokenizer::from_text(U"a\nb"));
  const TextTokenizer bpe(glass::BpeTokenizer::train(U"ab ab b", 265));
  EXPECT_EQ(chars.special_id(glass::SpecialToken::kUnknown), 0);
  EXPECT_EQ(chars.special_id(glass::SpecialToken::kBos), std::nullopt);
  EXPECT_EQ(chars.special_id(glass::SpecialToken::kEos), std::nullopt);
  EXPECT_EQ(bpe.special_id(glass::SpecialToken::kUnknown), 0);
  EXPECT_EQ(bpe.special_id(glass::SpecialToken::kBos), 1);
  EXPECT_EQ(bpe.special_id(glass::SpecialToken::kEos), 2);
  // A newline starts an empty prompt: the character's id; BPE: "\n" after the dummy prefix is
  // "▁" then the byte token <0x0A> (id 10 + 3).
  EXPECT_EQ(chars.start_id(), chars.encode(U"\n")[0]);
  EXPECT_EQ(bpe.start_id(), 10 + 3);
  EXPECT_EQ(TextTokenizer(glass::Tokenizer::from_text(U"ab")).start_id(), 1);
  // The listing the server sends: the unknown id of a character model has no text.
  EXPECT_FALSE(chars.has_text(0));
  EXPECT_TRUE(bpe.has_text(0));
  // Ties in frequency: the lower code point first ('\n' 1, 'a' 2, 'b' 3).
  EXPECT_EQ(chars.vocabulary(), (std::vector<std::string>{"", "\n", "a", "b"}));
  const std::vector<std::string> v = bpe.vocabulary();
  ASSERT_EQ(v.size(), 265u);
  EXPECT_EQ(v[0], "<unk>");
  EXPECT_EQ(v[263], "▁ab");
  EXPECT_TRUE(bpe.tokens_span_characters());
  EXPECT_FALSE(chars.tokens_span_characters());
  EXPECT_STREQ(chars.notation(), "");
}

TEST(TextTokenizer, EncodeSplitCutsAtNinetyPercentOrTheNextSpace) {
  // Characters: "abcabcabca" (10) splits at floor(9.0) = 9; the last 'a' is 1 byte of validation.
  const TextTokenizer chars(glass::Tokenizer::from_text(U"abcabcabca"));
  const glass::SplitIds c = chars.encode_split(U"abcabcabca", glass::UnknownPolicy::kRefuse);
  EXPECT_EQ(c.ids.size(), 10u);
  EXPECT_EQ(c.n_train, 9u);
  EXPECT_EQ(c.val_bytes, 1u);
  // A character outside the vocabulary: the unknown id 0 when mapped, else an error.
  const glass::SplitIds u =
      chars.encode_split(U"abczzabcab", glass::UnknownPolicy::kMapToUnknownId);
  EXPECT_EQ(u.unknown, 2u);
  EXPECT_EQ(u.ids[3], 0);
  EXPECT_THROW(chars.encode_split(U"abczzabcab", glass::UnknownPolicy::kRefuse),
               glass::UnknownCharacterError);

  // BPE ("▁ab" 263, "▁b" 264): "ab ab ab ab b" (13) cuts at the space at 11 = floor(11.7);
  // the training part "ab ab ab ab" is 4 tokens, a prefix of the whole text's 5.
  const TextTokenizer bpe(glass::BpeTokenizer::train(U"ab ab b", 265));
  EXPECT_EQ(glass::split_point(U"ab ab ab ab b", TokenizerKind::kBpe), 11u);
  const glass::SplitIds b = bpe.encode_split(U"ab ab ab ab b", glass::UnknownPolicy::kRefuse);
  EXPECT_EQ(b.ids.to_vector(0, b.ids.size()), (std::vector<std::int32_t>{263, 263, 263, 263, 264}));
  EXPECT_EQ(b.n_train, 4u);
  EXPECT_EQ(b.val_bytes, 2u);  // " b"
  // No space after 90%: "ab ab ab" (8) cuts at 7, inside the word "ab" (the whole text's last
  // token "▁ab" crosses the cut): the parts are encoded apart, the validation part "b" as a text
  // of its own ("▁b" 264).
  EXPECT_EQ(glass::split_point(U"ab ab ab", TokenizerKind::kBpe), 7u);
  const glass::SplitIds w = bpe.encode_split(U"ab ab ab", glass::UnknownPolicy::kRefuse);
  const std::vector<std::int32_t> train = bpe.encode(U"ab ab a");
  ASSERT_EQ(w.n_train, train.size());
  const std::vector<std::int32_t> val = bpe.encode(U"b");
  ASSERT_EQ(w.ids.size(), train.size() + val.size());
  EXPECT_EQ(w.ids.to_vector(0, w.n_train), train);
  EXPECT_EQ(w.ids.to_vector(w.n_train, w.ids.size()), val);
  EXPECT_EQ(val, (std::vector<std::int32_t>{264}));
  EXPECT_NE(w.ids.to_vector(0, w.ids.size()), bpe.encode(U"ab ab ab"));  // not the whole text's
}
