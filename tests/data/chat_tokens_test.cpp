// The chat tokens <|im_start|> and <|im_end|> in both tokenizers: appended after every other id,
// never produced by encoding text, kept by tokenizer.json, and absent from files written without
// them.

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "data/bpe_tokenizer.hpp"
#include "data/text.hpp"
#include "data/text_tokenizer.hpp"
#include "test_paths.hpp"

using glass::BpeTokenizer;
using glass::SpecialToken;
using glass::TextTokenizer;
using glass::Tokenizer;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

const BpeTokenizer& small_bpe() {
  static const BpeTokenizer tok =
      BpeTokenizer::train(U"o gato e o rato; o pato, o gato <|im_end|> <|im_end|>", 290);
  return tok;
}

}  // namespace

TEST(ChatTokens, CharacterVocabularyGetsThemAfterItsCharacters) {
  const TextTokenizer base(Tokenizer::from_text(U"<|im_start|>ab"));
  const TextTokenizer chat = base.with_chat_tokens();
  const std::size_t v = base.vocab_size();
  EXPECT_FALSE(base.has_chat_tokens());
  EXPECT_FALSE(base.special_id(SpecialToken::kImStart).has_value());
  ASSERT_TRUE(chat.has_chat_tokens());
  EXPECT_EQ(chat.vocab_size(), v + 2);
  EXPECT_EQ(*chat.special_id(SpecialToken::kImStart), static_cast<std::int32_t>(v));
  EXPECT_EQ(*chat.special_id(SpecialToken::kImEnd), static_cast<std::int32_t>(v + 1));
  // The base vocabulary is unchanged: every id means the same character.
  EXPECT_EQ(chat.characters(), base.characters());
  for (std::size_t id = 0; id < v; ++id)
    EXPECT_EQ(chat.token_text(static_cast<std::int32_t>(id)),
              base.token_text(static_cast<std::int32_t>(id)));
  // Typing the marker gives its characters, never the special id.
  const std::vector<std::int32_t> typed = chat.encode(U"<|im_start|>");
  EXPECT_EQ(typed, base.encode(U"<|im_start|>"));
  EXPECT_EQ(typed.size(), 12u);
  // Decoding shows the marker text.
  const std::int32_t end = *chat.special_id(SpecialToken::kImEnd);
  EXPECT_EQ(chat.token_text(end), "<|im_end|>");
  EXPECT_EQ(chat.decode({1, end}), chat.decode({1}) + U"<|im_end|>");
  EXPECT_EQ(chat.decode_generated({end}), "<|im_end|>");
  EXPECT_THROW(chat.chars()->char_of(end), std::invalid_argument);
  EXPECT_THROW(chat.decode({static_cast<std::int32_t>(v + 2)}), std::out_of_range);
  // Asking again changes nothing.
  EXPECT_EQ(chat.with_chat_tokens().vocab_size(), v + 2);
  EXPECT_EQ(chat.describe(/*count_ids=*/true),
            "vocabulary " + std::to_string(v + 2) + " (" + std::to_string(v - 1) +
                " characters + the unknown id 0 + 2 chat tokens)");
}

TEST(ChatTokens, BpeGetsThemAfterTheMerges) {
  const TextTokenizer base(small_bpe());
  const TextTokenizer chat = base.with_chat_tokens();
  const std::size_t v = base.vocab_size();
  ASSERT_EQ(chat.vocab_size(), v + 2);
  EXPECT_EQ(*chat.special_id(SpecialToken::kImStart), static_cast<std::int32_t>(v));
  EXPECT_EQ(*chat.special_id(SpecialToken::kImEnd), static_cast<std::int32_t>(v + 1));
  EXPECT_EQ(chat.bpe()->first_added_id(), static_cast<std::int32_t>(v));
  // BOS, EOS and the bytes keep their ids (the layout llama2.c's exporter needs).
  EXPECT_EQ(*chat.special_id(SpecialToken::kBos), 1);
  EXPECT_EQ(*chat.special_id(SpecialToken::kEos), 2);
  for (std::size_t id = 0; id < v; ++id)
    EXPECT_EQ(chat.token_text(static_cast<std::int32_t>(id)),
              base.token_text(static_cast<std::int32_t>(id)));
  EXPECT_EQ(chat.bpe()->merges(), small_bpe().merges());
  // The training text held the marker; encoding it still gives ordinary tokens.
  for (const std::u32string& text :
       {std::u32string(U"<|im_end|>"), std::u32string(U"o gato<|im_start|>user\n<|im_end|>")}) {
    const std::vector<std::int32_t> ids = chat.encode(text);
    EXPECT_EQ(ids, base.encode(text));
    for (std::int32_t id : ids) EXPECT_LT(id, static_cast<std::int32_t>(v));
  }
  const std::int32_t start = *chat.special_id(SpecialToken::kImStart);
  EXPECT_EQ(chat.token_text(start), "<|im_start|>");
  EXPECT_EQ(chat.bpe()->score(start), 0.0f);
  EXPECT_EQ(chat.decode({start}), U"<|im_start|>");
  EXPECT_EQ(chat.decode_generated({start}), "<|im_start|>");
}

TEST(ChatTokens, TrainingAvoidsMergesThatWouldClashWithTheMarkers) {
  // Without the rule, "<|" and "|>" (frequent here) would be merged and the markers could not
  // be added, or an engine could join two tokens into one.
  const BpeTokenizer t =
      BpeTokenizer::train(U"<|im_end|> <|im_end|> <|im_end|> <|im_start|> <|im_start|>", 285);
  for (std::int32_t id = t.first_merge_id(); id < static_cast<std::int32_t>(t.vocab_size()); ++id)
    for (const std::u32string& m : BpeTokenizer::chat_markers())
      EXPECT_FALSE(BpeTokenizer::clashes_with(t.token_text32(id), m)) << t.token_text(id);
  EXPECT_NO_THROW(TextTokenizer(t).with_chat_tokens());
  EXPECT_TRUE(BpeTokenizer::clashes_with(U"<|im", U"<|im_end|>"));
  EXPECT_TRUE(BpeTokenizer::clashes_with(U"end|>", U"<|im_end|>"));
  EXPECT_TRUE(BpeTokenizer::clashes_with(U"a<|im_end|>", U"<|im_end|>"));
  EXPECT_FALSE(BpeTokenizer::clashes_with(U"im_", U"<|im_end|>"));
}

TEST(ChatTokens, AVocabularyWithAClashingMergeIsRefused) {
  // A vocabulary from before the rule: the merge "<" + "|" makes "<|", a beginning of both.
  const std::vector<char32_t> chars = {U'\u2581', U'<', U'|'};
  const BpeTokenizer old(chars, {{260, 261}});
  try {
    TextTokenizer(old).with_chat_tokens();
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("merge 0 makes \"<|\""), std::string::npos) << e.what();
  }
}

TEST(ChatTokens, SurviveTokenizerJson) {
  const TextTokenizer chat = TextTokenizer(small_bpe()).with_chat_tokens();
  const std::string json = glass::bpe_to_json(*chat.bpe());
  EXPECT_NE(json.find("\"content\": \"<|im_end|>\""), std::string::npos);
  const TextTokenizer back(glass::bpe_from_json(json, "mem"));
  ASSERT_TRUE(back.has_chat_tokens());
  EXPECT_EQ(back.vocab_size(), chat.vocab_size());
  EXPECT_EQ(back.special_id(SpecialToken::kImEnd), chat.special_id(SpecialToken::kImEnd));
  EXPECT_EQ(back.vocabulary(), chat.vocabulary());
  EXPECT_EQ(glass::bpe_to_json(*back.bpe()), json);
  // Misplaced added tokens are refused.
  std::string moved = json;
  const std::string at = "\"id\": " + std::to_string(chat.vocab_size() - 1) + ",";
  moved.replace(moved.find(at), at.size(), "\"id\": 300,");
  EXPECT_THROW(glass::bpe_from_json(moved, "mem"), glass::TokenizerJsonError);
}

TEST(ChatTokens, AnOldTokenizerJsonLoadsAndIsWrittenBackByteForByte) {
  const std::string path = glass_test::source_dir("/tests/fuzz/corpus/tokenizer_json/small.json");
  const std::string text = read_text(path);
  ASSERT_FALSE(text.empty()) << path;
  const BpeTokenizer old = glass::bpe_from_json(text, path);
  EXPECT_TRUE(old.added().empty());
  EXPECT_FALSE(TextTokenizer(old).has_chat_tokens());
  EXPECT_EQ(glass::bpe_to_json(old), text);
}
