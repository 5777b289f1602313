// Train/val split and random windows: sizes, bounds, shift by one, reproducibility, resume.

#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "data/batches.hpp"

using glass::BatchSampler;

namespace {
std::vector<std::int32_t> iota_ids(std::size_t n) {
  std::vector<std::int32_t> ids(n);
  std::iota(ids.begin(), ids.end(), 0);  // id == position: a window's start is its first id
  return ids;
}
}  // namespace

TEST(Split, NinetyTenByCharacters) {
  const auto ids = iota_ids(1005);
  const glass::Split s = glass::split_train_val(ids);
  EXPECT_EQ(s.train.size(), 904u);  // floor(1005 * 0.9) = floor(904.5)
  EXPECT_EQ(s.val.size(), 101u);
  EXPECT_EQ(s.train.back(), 903);
  EXPECT_EQ(s.val.front(), 904);  // contiguous, nothing lost or repeated
  const glass::Split t = glass::split_train_val(ids, 0.5);
  EXPECT_EQ(t.train.size(), 502u);  // floor(502.5)
  EXPECT_THROW(glass::split_train_val(ids, 1.0), std::invalid_argument);
  EXPECT_THROW(glass::split_train_val(ids, 0.0), std::invalid_argument);
}

TEST(Batches, WindowsInsideTheSplitAndShiftedByOne) {
  const std::size_t n = 50, B = 7, T = 8;
  BatchSampler sampler(iota_ids(n), B, T, 1234);
  bool saw_first = false, saw_last = false;
  for (int step = 0; step < 400; ++step) {
    const glass::Batch batch = sampler.next();
    ASSERT_EQ(batch.x.size(), B * T);
    ASSERT_EQ(batch.y.size(), B * T);
    for (std::size_t b = 0; b < B; ++b) {
      const std::size_t i = batch.starts[b];
      ASSERT_LE(i, n - T - 1);  // the last target, id i+T, is inside the data
      saw_first |= (i == 0);
      saw_last |= (i == n - T - 1);
      for (std::size_t t = 0; t < T; ++t) {
        EXPECT_EQ(batch.x[b * T + t], static_cast<std::int32_t>(i + t));
        EXPECT_EQ(batch.y[b * T + t], static_cast<std::int32_t>(i + t + 1));
      }
    }
  }
  // 2800 draws over 42 starts: both ends of the range are reached.
  EXPECT_TRUE(saw_first);
  EXPECT_TRUE(saw_last);
}

TEST(Batches, ArraysHaveShapeBT) {
  BatchSampler sampler(iota_ids(20), 3, 5, 7);
  glass::IdArray x, y;
  sampler.next(x, y);
  ASSERT_EQ(x.dimension(), 2u);
  EXPECT_EQ(x.shape()[0], 3u);
  EXPECT_EQ(x.shape()[1], 5u);
  for (std::size_t b = 0; b < 3; ++b)
    for (std::size_t t = 0; t + 1 < 5; ++t) EXPECT_EQ(y(b, t), x(b, t + 1));
}

TEST(Batches, SameSeedSameBatchesAndExactResume) {
  BatchSampler a(iota_ids(1000), 4, 16, 42), b(iota_ids(1000), 4, 16, 42);
  BatchSampler c(iota_ids(1000), 4, 16, 43);
  EXPECT_EQ(a.next().starts, b.next().starts);
  EXPECT_NE(a.next().starts, c.next().starts);

  // Save mid-run, draw on, restore into a fresh sampler: the continuation is identical.
  const std::string saved = a.state();
  const auto expected1 = a.next().x;
  const auto expected2 = a.next().x;
  BatchSampler resumed(iota_ids(1000), 4, 16, 0);
  resumed.set_state(saved);
  EXPECT_EQ(resumed.next().x, expected1);
  EXPECT_EQ(resumed.next().x, expected2);
  EXPECT_THROW(resumed.set_state("not a state"), std::invalid_argument);
}

TEST(Batches, TooShortSaysHowLong) {
  // 8 tokens, context 8: one window needs 9.
  try {
    BatchSampler s(iota_ids(8), 2, 8, 1, "validation split");
    FAIL();
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("validation split has 8"), std::string::npos) << msg;
    EXPECT_NE(msg.find("at least 9"), std::string::npos) << msg;
  }
  EXPECT_NO_THROW(BatchSampler(iota_ids(9), 2, 8, 1));  // exactly T+1: only start 0
  EXPECT_THROW(BatchSampler(iota_ids(9), 0, 8, 1), std::invalid_argument);
  EXPECT_THROW(BatchSampler(iota_ids(9), 2, 0, 1), std::invalid_argument);
}
