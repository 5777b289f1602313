// The BPE tokenizer (data/bpe_tokenizer.hpp): training and encoding by hand on tiny texts,
// round trips on Dom Casmurro and on characters outside the vocabulary, word-by-word encoding
// against a straightforward whole-text encoder (run.c's loop), and incremental training against
// a trainer that recounts every pair after each merge.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "data/bpe_tokenizer.hpp"
#include "data/file_limits.hpp"
#include "data/text.hpp"
#include "test_paths.hpp"

using glass::BpeMerge;
using glass::BpeTokenizer;

namespace {

const std::u32string& dom_casmurro() {
  static const std::u32string text =
      glass::load_text(glass_test::source_dir("/data/corpora/domcasmurro.txt"));
  return text;
}

std::vector<std::string> merge_texts(const BpeTokenizer& tok) {
  std::vector<std::string> out;
  for (std::size_t r = 0; r < tok.merges().size(); ++r)
    out.push_back(tok.token_text(tok.first_merge_id() + static_cast<std::int32_t>(r)));
  return out;
}

/// The expected message of an invalid_argument thrown by `f`.
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

// ---- the straightforward references -----------------------------------------------------------

/// run.c's encode on the whole normalized text: characters (bytes for unknown ones), then
/// repeatedly the adjacent pair whose concatenated text is in the vocabulary (any token, as
/// run.c's str_lookup) with the best score, the leftmost on ties. O(n^2): for small texts.
std::vector<std::int32_t> reference_encode(const BpeTokenizer& tok, const std::u32string& text) {
  const std::u32string norm = BpeTokenizer::normalize(text);
  std::vector<std::int32_t> ids;
  for (char32_t c : norm) {
    const std::int32_t id = tok.id_of_text(std::u32string(1, c));
    if (id >= BpeTokenizer::kFirstCharId) {
      ids.push_back(id);
    } else {
      for (unsigned char b : glass::char_to_utf8(c)) ids.push_back(BpeTokenizer::kFirstByteId + b);
    }
  }
  while (true) {
    float best_score = -1e30f;
    std::int32_t best_id = -1;
    std::size_t best_i = 0;
    for (std::size_t i = 0; i + 1 < ids.size(); ++i) {
      const std::int32_t id =
          tok.id_of_text(tok.token_text32(ids[i]) + tok.token_text32(ids[i + 1]));
      if (id != -1 && tok.score(id) > best_score) {
        best_score = tok.score(id);
        best_id = id;
        best_i = i;
      }
    }
    if (best_id == -1) break;
    ids[best_i] = best_id;
    ids.erase(ids.begin() + static_cast<std::ptrdiff_t>(best_i) + 1);
  }
  return ids;
}

/// A trainer that recounts every pair of the whole normalized text after each merge, with the
/// same rules: most frequent pair (overlaps counted), ties by smaller (left, right), never across
/// a '▁', never a text that exists or clashes with a special or byte token; applied left to right.
std::vector<BpeMerge> naive_train(const std::u32string& text, std::size_t vocab_size,
                                  const std::vector<char32_t>& chars) {
  const std::u32string norm = BpeTokenizer::normalize(text);
  std::vector<std::u32string> texts(BpeTokenizer::kFirstCharId);
  std::map<char32_t, std::int32_t> char_ids;
  for (char32_t c : chars) {
    char_ids[c] = static_cast<std::int32_t>(texts.size());
    texts.emplace_back(1, c);
  }
  std::unordered_set<std::u32string> made;
  std::vector<std::int32_t> seq;
  for (char32_t c : norm) seq.push_back(char_ids.at(c));
  std::vector<BpeMerge> merges;
  while (texts.size() < vocab_size) {
    std::map<std::pair<std::int32_t, std::int32_t>, long> counts;
    for (std::size_t i = 0; i + 1 < seq.size(); ++i)
      if (texts[static_cast<std::size_t>(seq[i + 1])][0] != BpeTokenizer::kSpaceMark)
        ++counts[{seq[i], seq[i + 1]}];
    std::pair<std::int32_t, std::int32_t> best{-1, -1};
    long best_count = 0;
    for (const auto& [pair, n] : counts) {  // map order: smaller (left, right) first
      const std::u32string t = texts[static_cast<std::size_t>(pair.first)] +
                               texts[static_cast<std::size_t>(pair.second)];
      if (made.count(t) || BpeTokenizer::clashes_with_reserved(t)) continue;
      if (n > best_count) best_count = n, best = pair;
    }
    if (best_count == 0) break;
    const auto id = static_cast<std::int32_t>(texts.size());
    texts.push_back(texts[static_cast<std::size_t>(best.first)] +
                    texts[static_cast<std::size_t>(best.second)]);
    made.insert(texts.back());
    merges.push_back({best.first, best.second});
    std::vector<std::int32_t> next;
    for (std::size_t i = 0; i < seq.size();) {
      if (i + 1 < seq.size() && seq[i] == best.first && seq[i + 1] == best.second) {
        next.push_back(id);
        i += 2;
      } else {
        next.push_back(seq[i++]);
      }
    }
    seq = std::move(next);
  }
  return merges;
}

}  // namespace

// ---- by hand ----------------------------------------------------------------------------------

TEST(Bpe, TrainsByHandOnATinyText) {
  // Computed by hand. Normalized: "▁aaabdaaabac". Characters by count: a 7, b 2, then c, d, ▁
  // once each (code point order): ids a 259, b 260, c 261, d 262, ▁ 263; minimum vocab 264.
  // Pairs: (a,a) 4 (overlaps counted), (a,b) 2, the others 1.
  //  merge 0: a+a -> "aa" 264.     "▁ aa a b d aa a b a c"
  //  merge 1: (aa,a) 2 and (a,b) 2 tie; smaller left id a=259 wins: "ab" 265.
  //                                "▁ aa ab d aa ab a c"
  //  merge 2: (aa,ab) 2 -> "aaab" 266.   "▁ aaab d aaab a c"; every pair now counts 1:
  //  merge 3: the smallest left id is a=259: (a,c) -> "ac" 267.  "▁ aaab d aaab ac"
  //  merge 4: smallest left d=262: (d,aaab) -> "daaab" 268.      "▁ aaab daaab ac"
  //  merge 5: (▁,aaab) 263 < 266 -> "▁aaab" 269.               "▁aaab daaab ac"
  //  merge 6: (daaab,ac): left 268 < 269 -> "daaabac" 270;  merge 7: "▁aaabdaaabac" 271.
  const BpeTokenizer tok = BpeTokenizer::train(U"aaabdaaabac", 272);
  EXPECT_EQ(tok.chars(), (std::vector<char32_t>{U'a', U'b', U'c', U'd', U'\u2581'}));
  EXPECT_EQ(tok.merges(), (std::vector<BpeMerge>{{259, 259},
                                                 {259, 260},
                                                 {264, 265},
                                                 {259, 261},
                                                 {262, 266},
                                                 {263, 266},
                                                 {268, 267},
                                                 {269, 270}}));
  EXPECT_EQ(merge_texts(tok), (std::vector<std::string>{"aa", "ab", "aaab", "ac", "daaab", "▁aaab",
                                                        "daaabac", "▁aaabdaaabac"}));
  EXPECT_EQ(tok.vocab_size(), 272u);
  EXPECT_EQ(tok.encode(U"aaabdaaabac"), (std::vector<std::int32_t>{271}));
  // 8 merges were all this text has: one more token is an error that says so.
  const std::string msg = error_of([] { BpeTokenizer::train(U"aaabdaaabac", 273); });
  EXPECT_NE(msg.find("after 8 merges"), std::string::npos) << msg;
  EXPECT_NE(msg.find("largest vocab_size for this text is 272"), std::string::npos) << msg;
}

TEST(Bpe, EncodesByHandWithTheBestScoreLeftmostFirst) {
  // The first three merges of the text above: aa 264 (score 0), ab 265 (-1), aaab 266 (-2).
  const BpeTokenizer tok = BpeTokenizer::train(U"aaabdaaabac", 267);
  EXPECT_EQ(tok.score(264), 0.0f);
  EXPECT_EQ(tok.score(266), -2.0f);
  EXPECT_EQ(tok.score(259), -3.0f);  // base characters below every merge: -(3 merges + 0)
  EXPECT_EQ(tok.score(263), -7.0f);  // '▁', the fifth character
  EXPECT_EQ(tok.score(BpeTokenizer::kBosId), 0.0f);
  EXPECT_EQ(tok.score(3 + 0x41), 0.0f);
  // Computed by hand: "▁ a a a b d a a a b a c"; the best pair is "aa" (score 0): leftmost at
  // characters 1-2, then 6-7 -> "▁ aa a b d aa a b a c"; then "ab" (-1) twice ->
  // "▁ aa ab d aa ab a c"; then "aaab" (-2) = aa+ab twice -> "▁ aaab d aaab a c".
  EXPECT_EQ(tok.encode(U"aaabdaaabac"), (std::vector<std::int32_t>{263, 266, 262, 266, 259, 261}));
  // "aaaa": "aa" leftmost first: "▁ aa a a" -> "▁ aa aa"; "aaaa" is not a token.
  EXPECT_EQ(tok.encode(U"aaaa"), (std::vector<std::int32_t>{263, 264, 264}));
  EXPECT_EQ(tok.encode(U""), std::vector<std::int32_t>{});
  EXPECT_EQ(tok.token_text(266), "aaab");
  EXPECT_EQ(tok.token_text(BpeTokenizer::kEosId), "</s>");
  EXPECT_EQ(tok.token_text(3 + 0xE2), "<0xE2>");
  EXPECT_THROW(tok.token_text(267), std::out_of_range);
  EXPECT_THROW(tok.decode({-1}), std::out_of_range);
}

TEST(Bpe, EncoderMergesAPairThatIsAnotherCutOfAToken) {
  // Characters: 259 '▁', 260 'a', 261 'b', 262 'c'. Merges: 263 "bc" = b+c (score 0),
  // 264 "ab" = a+b (-1), 265 "abc" = ab+c (-2). By hand: "▁ a b c" -> the best pair is "bc"
  // -> "▁ a bc"; "a"+"bc" is "abc", a token, though its merge was ab+c: the encoder merges
  // every adjacent pair whose concatenation is a token -> "▁ abc".
  const BpeTokenizer tok({U'▁', U'a', U'b', U'c'}, {{261, 262}, {260, 261}, {264, 262}});
  EXPECT_EQ(tok.encode(U"abc"), (std::vector<std::int32_t>{259, 265}));
  EXPECT_EQ(tok.encode(U"ab"), (std::vector<std::int32_t>{259, 264}));
}

TEST(Bpe, AVocabularyRefusesATokenLongerThanTheCap) {
  // Merges that double "a": 260 'a', 261 "aa", 262 "aaaa", 263 "a"x8, 264 "a"x16 (the cap,
  // kMaxTokenLength) builds and encodes; one more doubling (32 characters) is refused.
  std::vector<BpeMerge> merges;
  for (std::int32_t k = 0; k < 4; ++k) merges.push_back({260 + k, 260 + k});
  const BpeTokenizer tok({U'▁', U'a'}, merges);
  EXPECT_EQ(tok.token_text32(264).size(), glass::kMaxTokenLength);
  // By hand: "▁", then 16 + 16 + 1 'a's.
  EXPECT_EQ(tok.encode(std::u32string(33, U'a')), (std::vector<std::int32_t>{259, 264, 264, 260}));
  merges.push_back({264, 264});
  const std::string msg = error_of([&] { BpeTokenizer({U'▁', U'a'}, merges); });
  EXPECT_NE(msg.find("merge 4 makes token 265, 32 characters long"), std::string::npos) << msg;
}

TEST(Bpe, TrainingNeverMakesATokenLongerThanTheCap) {
  // One word of 20,000 equal characters: without the cap, the merges would double "a" again
  // and again (aa, a4, a8, a16, a32, ...). With it, after a16 the word is "▁" and 1250 x a16,
  // whose pairs (17 and 32 characters) are too long: the trainer runs out of merges (the error
  // says so) instead of making longer tokens.
  const std::u32string text(20000, U'a');
  const BpeTokenizer tok = BpeTokenizer::train(text, 259 + 2 + 4);
  std::size_t longest = 0;
  for (std::size_t id = static_cast<std::size_t>(tok.first_merge_id()); id < tok.vocab_size(); ++id)
    longest = std::max(longest, tok.token_text32(static_cast<std::int32_t>(id)).size());
  EXPECT_EQ(longest, glass::kMaxTokenLength);
  const std::string msg = error_of([&] { BpeTokenizer::train(text, 259 + 2 + 5); });
  EXPECT_NE(msg.find("tokens are at most 16 characters long"), std::string::npos) << msg;
}

TEST(Bpe, MergesDoNotCrossAWordBoundary) {
  // Computed by hand. "ab ab b" -> "▁ab▁ab▁b"; counts ▁ 3, b 3, a 2: ids b 259, ▁ 260, a 261.
  // Words "▁ab" x2, "▁b" x1. Pairs inside words: (▁,a) 2, (a,b) 2, (▁,b) 1 — (b,▁) would count
  // 2 across words but is never counted. (▁,a) and (a,b) tie; smaller left id ▁=260 wins:
  //  merge 0 "▁a" 262; then (▁a,b) 2: merge 1 "▁ab" 263; then (▁,b) 1: merge 2 "▁b" 264.
  const BpeTokenizer tok = BpeTokenizer::train(U"ab ab b", 265);
  EXPECT_EQ(merge_texts(tok), (std::vector<std::string>{"▁a", "▁ab", "▁b"}));
  EXPECT_EQ(tok.encode(U"ab ab b"), (std::vector<std::int32_t>{263, 263, 264}));
  // "ba": "▁ b a" -> "▁b" (264) + "a" (261); "ba" is not a token.
  EXPECT_EQ(tok.encode(U"ba"), (std::vector<std::int32_t>{264, 261}));
  EXPECT_NE(error_of([] { BpeTokenizer::train(U"ab ab b", 266); }).find("after 3 merges"),
            std::string::npos);
}

TEST(Bpe, ByteFallbackForCharactersOutsideTheVocabulary) {
  const BpeTokenizer tok = BpeTokenizer::train(U"aaabdaaabac", 267);
  // '😀' is U+1F600 = F0 9F 98 80 in UTF-8: byte tokens 3 + 0xF0 = 243, 3 + 0x9F = 162,
  // 3 + 0x98 = 155, 3 + 0x80 = 131. "▁" 263, "a" 259.
  const std::u32string text = U"a\U0001F600";
  EXPECT_EQ(tok.encode(text), (std::vector<std::int32_t>{263, 259, 243, 162, 155, 131}));
  EXPECT_EQ(tok.decode(tok.encode(text)), text);
  // A cut byte sequence decodes to U+FFFD per byte (as Hugging Face's ByteFallback).
  EXPECT_EQ(tok.decode({259, 243, 162}), U"a\uFFFD\uFFFD");
  EXPECT_EQ(tok.decode({BpeTokenizer::kBosId, 263, 259, BpeTokenizer::kEosId}), U"a");
  EXPECT_EQ(tok.decode({BpeTokenizer::kUnknownId}), U"\uFFFD");
  // A piece from the middle keeps its leading space when asked.
  EXPECT_EQ(tok.decode({263, 259}, /*drop_dummy_prefix=*/false), U" a");
}

TEST(Bpe, RoundTripsDomCasmurroAndForeignText) {
  const std::u32string& text = dom_casmurro();
  const BpeTokenizer tok = BpeTokenizer::train(text, 512);
  const std::vector<std::int32_t> ids = tok.encode(text);
  EXPECT_LT(ids.size(), text.size() * 2 / 3);  // subwords: clearly fewer tokens than characters
  EXPECT_EQ(tok.decode(ids), text);
  EXPECT_EQ(tok.encode_compact(text).to_vector(0, ids.size()), ids);
  // Characters Dom Casmurro never uses (emoji, CJK, Greek), leading and doubled spaces.
  const std::u32string foreign = U"  Capitu \U0001F600 olhou 猫 αβγ, disse:  \"não\"\t\n";
  EXPECT_EQ(tok.decode(tok.encode(foreign)), foreign);
  // A literal '▁' reads as a space: the documented loss.
  EXPECT_EQ(tok.decode(tok.encode(U"a\u2581b")), U"a b");
  EXPECT_EQ(tok.encode(U"a\u2581b"), tok.encode(U"a b"));
}

TEST(Bpe, WordCacheEqualsWholeTextGreedyEncoding) {
  const BpeTokenizer tok = BpeTokenizer::train(dom_casmurro(), 1024);
  // ~4 KB of text the tokenizer was not trained on, with foreign characters.
  const std::u32string en =
      glass::load_text(glass_test::source_dir("/data/corpora/tinyshakespeare.txt"));
  const std::u32string text =
      en.substr(10000, 2000) + U" \U0001F600 猫猫 " + dom_casmurro().substr(50000, 2000);
  const std::vector<std::int32_t> fast = tok.encode(text);
  EXPECT_EQ(fast, reference_encode(tok, text));
  EXPECT_EQ(tok.decode(fast), text);
}

TEST(Bpe, IncrementalTrainingEqualsRecountingEveryMerge) {
  const std::u32string text = dom_casmurro().substr(0, 30000);
  const BpeTokenizer tok = BpeTokenizer::train(text, 400);
  EXPECT_EQ(tok.merges(), naive_train(text, 400, tok.chars()));
  // Overlapping pairs, repeated words and texts that look like special or byte tokens.
  const std::u32string tricky =
      U"aaaa aaaa aaa <s> <s> <s></s></s> <0x41><0x41><0x41> <unk><unk> 0xFF> <0 ab ab ab "
      U"ba ba aaaa";
  const std::size_t max = 259 + BpeTokenizer::train(tricky, 290).chars().size() + 12;
  const BpeTokenizer t2 = BpeTokenizer::train(tricky, max);
  EXPECT_EQ(t2.merges(), naive_train(tricky, max, t2.chars()));
  for (std::size_t id = static_cast<std::size_t>(t2.first_merge_id()); id < t2.vocab_size(); ++id)
    EXPECT_FALSE(
        BpeTokenizer::clashes_with_reserved(t2.token_text32(static_cast<std::int32_t>(id))))
        << t2.token_text(static_cast<std::int32_t>(id));
}

TEST(Bpe, ReservedTextRule) {
  for (const char32_t* t :
       {U"<s>", U"<s", U"s>", U"</", U"/s>", U"<unk", U"nk>", U"x<s>y", U"<0x41>", U"<0", U"<0x",
        U"<0x4", U"<0x4F", U"F>", U"4F>", U"x4F>", U"0x4F>", U"ab<0xFF>"})
    EXPECT_TRUE(BpeTokenizer::clashes_with_reserved(t)) << glass::u32_to_utf8(t);
  for (const char32_t* t : {U"ab", U"<a", U"a>", U"0x", U"41", U"CA", U"x4", U"<0xf", U"f>", U"<>",
                            U"<<", U"s", U"<0xG"})
    EXPECT_FALSE(BpeTokenizer::clashes_with_reserved(t)) << glass::u32_to_utf8(t);
}

TEST(Bpe, ErrorsSayWhatIsWrong) {
  EXPECT_NE(error_of([] { BpeTokenizer::train(U"", 400); }).find("empty"), std::string::npos);
  // "abc a": a, b, c, ▁ -> 4 characters: at least 263.
  const std::string small = error_of([] { BpeTokenizer::train(U"abc a", 262); });
  EXPECT_NE(small.find("at least 263"), std::string::npos) << small;
  EXPECT_NE(small.find("4 distinct characters"), std::string::npos) << small;
  EXPECT_NO_THROW(BpeTokenizer::train(U"abc a", 263));  // no merge at all is allowed
  // Vocabularies that break the rules.
  EXPECT_NE(error_of([] { BpeTokenizer({U'a', U'a'}, {}); }).find("twice"), std::string::npos);
  EXPECT_NE(error_of([] { BpeTokenizer({U'a', U' '}, {}); }).find("space"), std::string::npos);
  EXPECT_NE(error_of([] {
              BpeTokenizer({U'a', U'b'}, {{259, 261}});
            }).find("not an earlier"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              BpeTokenizer({U'a', U'b'}, {});
            }).find("'▁' (U+2581, the space) is not"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              BpeTokenizer({U'a', U'\u2581'}, {{259, 260}});
            }).find("after its start"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              BpeTokenizer({U'<', U's', U'>'}, {{259, 260}});
            }).find("clashes"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              BpeTokenizer({U'a', U'b'}, {{259, 260}, {259, 260}});
            }).find("already token 261"),
            std::string::npos);
}
