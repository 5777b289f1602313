// tokenizer.json of the BPE tokenizer: the Llama 2 shape, the round trip, and one clear error
// per kind of bad file.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include <fmt/format.h>

#include "data/bpe_tokenizer.hpp"
#include "data/file_limits.hpp"
#include "data/text.hpp"
#include "test_paths.hpp"

using glass::BpeTokenizer;
using glass::TokenizerJsonError;
using nlohmann::ordered_json;

namespace {

const BpeTokenizer& small_tokenizer() {
  static const BpeTokenizer tok = BpeTokenizer::train(U"o gato e o rato; o pato, o gato", 280);
  return tok;
}

ordered_json small_json() { return ordered_json::parse(glass::bpe_to_json(small_tokenizer())); }

/// The message of the TokenizerJsonError thrown for `text`.
std::string error_for(const std::string& text) {
  try {
    glass::bpe_from_json(text, "run/tokenizer.json");
  } catch (const TokenizerJsonError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string error_for(const ordered_json& j) { return error_for(j.dump()); }
std::string error_for(const nlohmann::json& j) { return error_for(j.dump()); }

#define EXPECT_ERROR(json_or_text, fragment)                               \
  do {                                                                     \
    const std::string msg = error_for(json_or_text);                       \
    EXPECT_NE(msg.find("run/tokenizer.json: "), std::string::npos) << msg; \
    EXPECT_NE(msg.find(fragment), std::string::npos) << msg;               \
  } while (0)

}  // namespace

TEST(BpeJson, HasTheLlama2Shape) {
  const ordered_json j = small_json();
  const BpeTokenizer& tok = small_tokenizer();
  EXPECT_EQ(j["model"]["type"], "BPE");
  EXPECT_EQ(j["model"]["byte_fallback"], true);
  EXPECT_EQ(j["model"]["vocab"].size(), tok.vocab_size());
  EXPECT_EQ(j["model"]["vocab"]["<unk>"], 0);
  EXPECT_EQ(j["model"]["vocab"]["</s>"], 2);
  EXPECT_EQ(j["model"]["vocab"]["<0x00>"], 3);
  EXPECT_EQ(j["model"]["vocab"]["<0xFF>"], 258);
  EXPECT_EQ(j["model"]["vocab"]["▁"], tok.id_of_text(U"\u2581"));
  ASSERT_EQ(j["model"]["merges"].size(), tok.merges().size());
  // The first merge as "left right", its parts' texts joined by one space.
  EXPECT_EQ(j["model"]["merges"][0],
            tok.token_text(tok.merges()[0].left) + " " + tok.token_text(tok.merges()[0].right));
  EXPECT_EQ(j["added_tokens"].size(), 3u);
  EXPECT_EQ(j["added_tokens"][1]["content"], "<s>");
  EXPECT_EQ(j["added_tokens"][1]["special"], true);
  EXPECT_EQ(j["normalizer"]["normalizers"][0]["type"], "Prepend");
  EXPECT_EQ(j["normalizer"]["normalizers"][0]["prepend"], "▁");
  EXPECT_EQ(j["normalizer"]["normalizers"][1]["content"], "▁");
  EXPECT_EQ(j["decoder"]["decoders"][1]["type"], "ByteFallback");
  EXPECT_EQ(j["decoder"]["decoders"][3]["type"], "Strip");
  EXPECT_TRUE(j["pre_tokenizer"].is_null());
}

TEST(BpeJson, RoundTrips) {
  const BpeTokenizer tok = BpeTokenizer::train(
      glass::load_text(glass_test::source_dir("/data/corpora/domcasmurro.txt")).substr(0, 40000),
      600);
  const std::string text = glass::bpe_to_json(tok);
  const BpeTokenizer back = glass::bpe_from_json(text, "round trip");
  EXPECT_EQ(back.chars(), tok.chars());
  EXPECT_EQ(back.merges(), tok.merges());
  EXPECT_EQ(glass::bpe_to_json(back), text);
  const std::u32string sample = U"Capitu olhou-me \U0001F600 e disse: \"não\".";
  EXPECT_EQ(back.encode(sample), tok.encode(sample));
  // Merges may also be written as [left, right] arrays (newer Hugging Face files).
  ordered_json j = ordered_json::parse(text);
  for (auto& m : j["model"]["merges"]) {
    const std::string s = m.get<std::string>();
    const auto space = s.find(' ');
    m = ordered_json::array({s.substr(0, space), s.substr(space + 1)});
  }
  EXPECT_EQ(glass::bpe_from_json(j.dump(), "arrays").merges(), tok.merges());
}

TEST(BpeJson, RefusesMalformedJson) {
  EXPECT_ERROR(std::string("{"), "not valid JSON");
  EXPECT_ERROR(std::string("[1, 2]"), "not a JSON object");
  std::string dup = glass::bpe_to_json(small_tokenizer());
  dup.insert(dup.find("\"version\""), "\"version\": \"1.0\",\n");
  EXPECT_ERROR(dup, "the key \"version\" appears twice");
  std::string bad_utf8 = glass::bpe_to_json(small_tokenizer());
  bad_utf8.insert(bad_utf8.find("\"<unk>\""), "\"\xC3\x28\": 1,");
  EXPECT_ERROR(bad_utf8, "not valid JSON");
  // The model type quoted in a message is nested a million levels deep: refused while parsing,
  // before a recursive dump could overflow the stack.
  std::string deep = glass::bpe_to_json(small_tokenizer());
  const std::size_t at = deep.find("\"BPE\"");
  ASSERT_NE(at, std::string::npos);
  deep.replace(at, 5, std::string(1000000, '[') + std::string(1000000, ']'));
  EXPECT_ERROR(deep, "nested more than 64 levels deep");
}

TEST(BpeJson, RefusesAnotherPipeline) {
  ordered_json j = small_json();
  j["model"]["type"] = "Unigram";
  EXPECT_ERROR(j, "the model type is \"Unigram\", not \"BPE\"");
  j = small_json();
  j["model"]["byte_fallback"] = false;
  EXPECT_ERROR(j, "\"byte_fallback\" is not true");
  j = small_json();
  j["normalizer"]["normalizers"].erase(0);  // no dummy prefix
  EXPECT_ERROR(j, "the normalizer is not Llama 2's");
  j = small_json();
  j["decoder"]["decoders"].erase(3);  // no Strip
  EXPECT_ERROR(j, "the decoder is not Llama 2's");
  j = small_json();
  j["pre_tokenizer"] = {{"type", "Whitespace"}};
  EXPECT_ERROR(j, "a pre_tokenizer is set");
  j = small_json();
  j.erase("model");
  EXPECT_ERROR(j, "the file has no \"model\"");
  j = small_json();
  j["model"].erase("merges");
  EXPECT_ERROR(j, "\"model\" has no \"merges\"");
}

TEST(BpeJson, RefusesIdsThatAreNotDense) {
  ordered_json j = small_json();
  const std::size_t n = j["model"]["vocab"].size();
  j["model"]["vocab"]["a"] = n + 5;
  EXPECT_ERROR(j, "not dense: \"a\" has id");
  j = small_json();
  j["model"]["vocab"]["a"] = j["model"]["vocab"]["▁"];
  EXPECT_ERROR(j, "appears twice");
  j = small_json();
  j["model"]["vocab"]["a"] = -1;
  EXPECT_ERROR(j, "not a non-negative integer");
  j = small_json();
  j["model"]["vocab"]["a"] = "7";
  EXPECT_ERROR(j, "not a non-negative integer");
}

TEST(BpeJson, RefusesATokenLongerThanTheCapNamingItsIdAndLength) {
  ordered_json j = small_json();
  const std::size_t n = j["model"]["vocab"].size();
  j["model"]["vocab"][std::string(glass::kMaxTokenLength + 1, 'x')] = n;
  EXPECT_ERROR(j, fmt::format("token id {} is 17 characters long; the longest token glass "
                              "reads has 16",
                              n));
  // 16 characters pass that check (and fail a later one: the token is not a merge's).
  j = small_json();
  j["model"]["vocab"][std::string(glass::kMaxTokenLength, 'x')] = n;
  EXPECT_EQ(error_for(j).find("the longest token"), std::string::npos) << error_for(j);
}

TEST(BpeJson, RefusesAVocabularyLargerThanTheCap) {
  // (nlohmann::json, a std::map: ordered_json inserts in linear time, quadratic over 2^18.)
  nlohmann::json j = nlohmann::json::parse(small_json().dump());
  for (std::size_t id = j["model"]["vocab"].size(); id <= glass::kMaxVocabSize; ++id)
    j["model"]["vocab"][std::to_string(id)] = id;
  EXPECT_ERROR(j, "the vocabulary has 262145 tokens; the largest glass reads has 262144");
}

TEST(BpeJson, RefusesMissingSpecialsAndBytes) {
  ordered_json j = small_json();
  ordered_json vocab = ordered_json::object();
  for (auto& [k, v] : j["model"]["vocab"].items()) vocab[k == "<s>" ? "<S>" : k] = v;
  j["model"]["vocab"] = vocab;
  EXPECT_ERROR(j, "id 1 must be \"<s>\" but is \"<S>\"");
  j = small_json();
  vocab = ordered_json::object();
  for (auto& [k, v] : j["model"]["vocab"].items()) vocab[k == "<0x41>" ? "<0x4G>" : k] = v;
  j["model"]["vocab"] = vocab;
  EXPECT_ERROR(j, "id 68 must be \"<0x41>\"");
  j = small_json();
  j["added_tokens"].erase(2);
  EXPECT_ERROR(j, "\"added_tokens\" must be exactly the three specials");
  // A vocabulary too small to hold the reserved tokens.
  j = {{"model",
        {{"type", "BPE"},
         {"byte_fallback", true},
         {"unk_token", "<unk>"},
         {"vocab", {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}}},
         {"merges", ordered_json::array()}}},
       {"normalizer", small_json()["normalizer"]},
       {"decoder", small_json()["decoder"]},
       {"added_tokens", small_json()["added_tokens"]}};
  EXPECT_ERROR(j, "the vocabulary has 3 tokens");
}

TEST(BpeJson, RefusesInconsistentMerges) {
  ordered_json j = small_json();
  j["model"]["merges"][0] = "zz qq";
  EXPECT_ERROR(j, "refers to \"zz\", which is not in the vocabulary");
  j = small_json();
  j["model"]["merges"][0] = "ab";
  EXPECT_ERROR(j, "is not two tokens separated by one space");
  j = small_json();
  j["model"]["merges"][0] = 7;
  EXPECT_ERROR(j, "is neither");
  // Two merges swapped: each no longer makes the token at its place.
  j = small_json();
  std::swap(j["model"]["merges"][0], j["model"]["merges"][1]);
  EXPECT_ERROR(j, "merge 0");
  // One merge fewer: the last merged token is read as a base character and is too long.
  j = small_json();
  j["model"]["merges"].erase(j["model"]["merges"].size() - 1);
  EXPECT_ERROR(j, "should be a base character");
  // A merge of a byte token.
  j = small_json();
  j["model"]["merges"][0] = "<0x41> a";
  EXPECT_ERROR(j, "refers to \"<0x41>\", a special or byte token");
}

TEST(BpeJson, RefusesAMergeThatMakesASpecialText) {
  // Base characters '▁', '<', 's', '>' and one merge "< s" making "<s": run.c would merge
  // "<s" and ">" into BOS.
  const BpeTokenizer base({U'\u2581', U'<', U's', U'>'}, {});
  ordered_json j = ordered_json::parse(glass::bpe_to_json(base));
  j["model"]["vocab"]["<s"] = 263;
  j["model"]["merges"].push_back("< s");
  EXPECT_ERROR(j, "clashes with a special or byte token");
  // A merged token with a '▁' after its start.
  j = ordered_json::parse(glass::bpe_to_json(base));
  j["model"]["vocab"]["s▁"] = 263;
  j["model"]["merges"].push_back("s ▁");
  EXPECT_ERROR(j, "with a '▁' after its start");
  // No '▁' among the base characters: spaces would decode as '▁'.
  j = ordered_json::parse(glass::bpe_to_json(base));
  ordered_json vocab = ordered_json::object();
  for (auto& [k, v] : j["model"]["vocab"].items()) vocab[k == "▁" ? "x" : k] = v;
  j["model"]["vocab"] = vocab;
  EXPECT_ERROR(j, "'▁' (U+2581, the space) is not a base character");
  // And the file without them reads.
  EXPECT_NO_THROW(glass::bpe_from_json(glass::bpe_to_json(base), "base"));
}
