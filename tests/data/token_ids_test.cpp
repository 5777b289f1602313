// Compact token ids: the smallest type that holds the vocabulary, the same ids as int32, and
// batch samplers that share one corpus by ranges instead of copying it.

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/batches.hpp"
#include "data/token_ids.hpp"
#include "data/tokenizer.hpp"

using glass::BatchSampler;
using glass::TokenIds;

TEST(TokenIds, TheSmallestTypeThatHoldsTheVocabulary) {
  EXPECT_EQ(TokenIds(2).bytes_per_id(), 1u);
  EXPECT_EQ(TokenIds(256).bytes_per_id(), 1u);    // ids 0..255
  EXPECT_EQ(TokenIds(257).bytes_per_id(), 2u);    // id 256 needs a second byte
  EXPECT_EQ(TokenIds(65536).bytes_per_id(), 2u);  // ids 0..65535
  EXPECT_EQ(TokenIds(65537).bytes_per_id(), 4u);
  EXPECT_EQ(TokenIds::from({0, 3, 255}).bytes_per_id(), 1u);
  EXPECT_EQ(TokenIds::from({0, 300}).bytes_per_id(), 2u);
  EXPECT_EQ(TokenIds::from({70000}).bytes_per_id(), 4u);
}

TEST(TokenIds, HoldsTheSameIdsAndRefusesOnesThatDoNotFit) {
  const std::vector<std::int32_t> ids = {0, 1, 255, 7, 200};
  const TokenIds compact = TokenIds::from(ids);
  ASSERT_EQ(compact.size(), ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(compact[i], ids[i]);
  EXPECT_EQ(compact.to_vector(1, 4), (std::vector<std::int32_t>{1, 255, 7}));
  TokenIds small(256);
  EXPECT_THROW(small.push_back(256), std::out_of_range);
  EXPECT_THROW(small.push_back(-1), std::out_of_range);
  TokenIds wide(1000);
  wide.push_back(999);
  EXPECT_EQ(wide[0], 999);
}

TEST(TokenIds, EncodeCompactMatchesEncode) {
  const std::u32string text = U"Capitu, olhos de ressaca; Bentinho — ôôô!\n";
  const glass::Tokenizer tok = glass::Tokenizer::from_text(text);
  const std::vector<std::int32_t> ids = tok.encode(text);
  const TokenIds compact = tok.encode_compact(text);
  EXPECT_EQ(compact.bytes_per_id(), 1u);
  ASSERT_EQ(compact.size(), ids.size());
  EXPECT_EQ(compact.to_vector(0, compact.size()), ids);
  // Unknown characters: the same error, or the same count of id 0.
  const glass::Tokenizer small(std::vector<char32_t>{U'a', U'b'});
  EXPECT_THROW(small.encode_compact(U"abc"), glass::UnknownCharacterError);
  std::size_t unknown = 0;
  EXPECT_EQ(small.encode_compact(U"abcc", true, &unknown).to_vector(0, 4),
            (std::vector<std::int32_t>{1, 2, 0, 0}));
  EXPECT_EQ(unknown, 2u);
}

TEST(TokenIds, SamplersOnRangesOfOneCorpusDrawTheSameWindowsAsOnCopies) {
  std::vector<std::int32_t> ids(1000);
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<std::int32_t>((i * 7) % 97);
  const auto shared = std::make_shared<const TokenIds>(TokenIds::from(ids));
  const std::vector<std::int32_t> val(ids.begin() + 900, ids.end());
  BatchSampler on_copy(val, 3, 8, 42, "validation split");
  BatchSampler on_range(shared, 900, 1000, 3, 8, 42, "validation split");
  for (int step = 0; step < 5; ++step) {
    const glass::Batch a = on_copy.next(), b = on_range.next();
    EXPECT_EQ(a.x, b.x);
    EXPECT_EQ(a.y, b.y);
    EXPECT_EQ(a.starts, b.starts);
  }
  EXPECT_EQ(on_range.size(), 100u);
  EXPECT_THROW(BatchSampler(shared, 990, 1000, 2, 16, 1, "validation split"),
               std::invalid_argument);
  EXPECT_THROW(BatchSampler(shared, 900, 1001, 2, 8, 1), std::invalid_argument);
}
