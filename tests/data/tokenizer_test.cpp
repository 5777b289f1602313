// The character tokenizer: frequency order, ties, the cap, round trips, unknown characters.
// Expected orders are counted by hand from the literal texts.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "data/text.hpp"
#include "data/tokenizer.hpp"
#include "test_paths.hpp"

using glass::Tokenizer;
using glass::UnknownCharacterError;

TEST(Tokenizer, MostFrequentFirstTiesByCodePoint) {
  // counts: 'a' 3, 'b' 2, 'c' 2, 'é' 1, '😀' 1, ' ' 1
  // order: a (3); b, c (2, 'b' < 'c'); then ' ' (U+0020) < 'é' (U+00E9) < '😀' (U+1F600).
  const std::u32string text = U"cab\U0001F600 ba\u00E9ca";
  const Tokenizer tok = Tokenizer::from_text(text);
  const std::vector<char32_t> expected = {U'a', U'b', U'c', U' ', U'\u00E9', U'\U0001F600'};
  EXPECT_EQ(tok.chars(), expected);
  EXPECT_EQ(tok.vocab_size(), 7u);  // 6 characters + the unknown id 0
  EXPECT_EQ(tok.id_of(U'a'), 1);
  EXPECT_EQ(tok.id_of(U'\U0001F600'), 6);
  EXPECT_EQ(tok.id_of(U'z'), Tokenizer::kUnknownId);
  EXPECT_EQ(tok.char_of(0), U'\uFFFD');
  EXPECT_EQ(tok.char_of(3), U'c');
  EXPECT_THROW(tok.char_of(7), std::out_of_range);
  EXPECT_THROW(tok.char_of(-1), std::out_of_range);
}

TEST(Tokenizer, CapKeepsTheMostFrequent) {
  // counts: 'x' 4, 'y' 3, 'z' 2, 'w' 1. Cap 3 keeps vocab_size 3: id 0 + 'x', 'y'.
  const Tokenizer tok = Tokenizer::from_text(U"xxxxyyyzzw", 3);
  EXPECT_EQ(tok.vocab_size(), 3u);
  EXPECT_EQ(tok.chars(), (std::vector<char32_t>{U'x', U'y'}));
  EXPECT_FALSE(tok.contains(U'z'));
  EXPECT_THROW(Tokenizer::from_text(U"abc", 1), std::invalid_argument);
}

TEST(Tokenizer, RoundTripWithAccentsEmojiAndNewlines) {
  const std::string utf8 =
      "Capit\xC3\xBClo I\nS\xC3\xA3o Jo\xC3\xA3o, a\xC3\xA7\xC3\xBA"
      "car \xF0\x9F\x98\x80!\n";
  const std::u32string text = glass::utf8_to_u32(utf8);
  const Tokenizer tok = Tokenizer::from_text(text);
  const std::vector<std::int32_t> ids = tok.encode(text);
  ASSERT_EQ(ids.size(), text.size());
  for (std::int32_t id : ids) {
    EXPECT_GE(id, 1);
    EXPECT_LT(static_cast<std::size_t>(id), tok.vocab_size());
  }
  EXPECT_EQ(tok.decode(ids), text);
  EXPECT_EQ(tok.decode_utf8(ids), utf8);
  // A tokenizer rebuilt from its character list (as from a checkpoint) encodes the same.
  const Tokenizer copy(tok.chars());
  EXPECT_EQ(copy.encode(text), ids);
}

TEST(Tokenizer, UnknownCharacterErrorAndMapUnknown) {
  const Tokenizer tok = Tokenizer::from_text(U"abc");  // ids: a=1, b=2, c=3
  try {
    tok.encode(U"ab\u00E7c");
    FAIL() << "expected UnknownCharacterError";
  } catch (const UnknownCharacterError& e) {
    EXPECT_EQ(e.character(), U'\u00E7');
    EXPECT_EQ(e.position(), 2u);
    EXPECT_NE(std::string(e.what()).find("U+00E7"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("\xC3\xA7"), std::string::npos) << e.what();
  }
  std::size_t unknown = 99;
  const std::vector<std::int32_t> ids = tok.encode(U"a\u00E7\U0001F600c", true, &unknown);
  EXPECT_EQ(ids, (std::vector<std::int32_t>{1, 0, 0, 3}));
  EXPECT_EQ(unknown, 2u);
  EXPECT_EQ(tok.decode(ids), U"a\uFFFD\uFFFDc");
  EXPECT_THROW(tok.decode({1, 4}), std::out_of_range);
}

TEST(Tokenizer, DuplicateCharactersRejected) {
  EXPECT_THROW(Tokenizer(std::vector<char32_t>{U'a', U'b', U'a'}), std::invalid_argument);
}

TEST(Tokenizer, BundledPortugueseCorpusFitsUnderTheCap) {
  const std::u32string text =
      glass::load_text(glass_test::source_dir("/data/corpora/domcasmurro.txt"));
  const Tokenizer tok = Tokenizer::from_text(text);
  EXPECT_LT(tok.vocab_size(), 1024u);
  EXPECT_EQ(tok.chars().front(), U' ');  // space is the most frequent character of the novel
  EXPECT_EQ(tok.decode(tok.encode(text)), text);
}
