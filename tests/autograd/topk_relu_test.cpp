// topk_relu (the TopK activation of a sparse autoencoder): which entries it keeps, the gradient
// mask, ties, NaN and bad k. The double-precision gradient check is in the op suite
// (gradcheck_suite.cpp, "topk_relu").

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "autograd/ops.hpp"
#include "autograd/tape.hpp"

namespace {

using namespace glass;

TEST(TopkRelu, KeepsTheKLargestPositiveEntriesOfEachRow) {
  // Row 0: the 2 largest are 5 and 3 -> kept; row 1: the 2 largest are 0.5 and -1, and -1 is
  // cut by the ReLU, so only 0.5 is left.
  const Tensor x = Tensor::from_vector({1, 5, -2, 3, 0, -1, -3, 0.5, -4, -5}, {2, 5}, true);
  const Tensor y = topk_relu(x, 2);
  const std::vector<Scalar> want = {0, 5, 0, 3, 0, 0, 0, 0.5, 0, 0};
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(y.value().data()[i], want[i]) << i;
  // dL/dx for L = sum(y * w): w where kept, 0 elsewhere.
  const Tensor w = Tensor::from_vector({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {2, 5});
  sum(y * w).backward();
  const std::vector<Scalar> grad = {0, 2, 0, 4, 0, 0, 0, 8, 0, 0};
  for (std::size_t i = 0; i < grad.size(); ++i) EXPECT_EQ(x.grad().data()[i], grad[i]) << i;
}

TEST(TopkRelu, TiesGoToTheLowerIndexAndExactlyKAreKept) {
  const Tensor x = Tensor::from_vector({2, 2, 2, 2}, {4});
  const Tensor y = topk_relu(x, 2);
  EXPECT_EQ(y.value()(0), 2);
  EXPECT_EQ(y.value()(1), 2);
  EXPECT_EQ(y.value()(2), 0);
  EXPECT_EQ(y.value()(3), 0);
}

TEST(TopkRelu, ANanStaysNan) {
  const Scalar nan = std::numeric_limits<Scalar>::quiet_NaN();
  const Tensor y = topk_relu(Tensor::from_vector({1, nan, 3}, {3}), 1);
  EXPECT_EQ(y.value()(0), 0);
  EXPECT_TRUE(std::isnan(y.value()(1)));
  EXPECT_EQ(y.value()(2), 0);
}

TEST(TopkRelu, EntriesOfMinusInfinityLeftOutAreZero) {
  // A masked entry (masked_fill with -inf, as AuxK picks among dead latents) is 0, not NaN.
  const Scalar inf = std::numeric_limits<Scalar>::infinity();
  const Tensor y = topk_relu(Tensor::from_vector({-inf, 2, -inf}, {3}), 2);
  EXPECT_EQ(y.value()(0), 0);
  EXPECT_EQ(y.value()(1), 2);
  EXPECT_EQ(y.value()(2), 0);
}

TEST(TopkRelu, RefusesKOutsideOneToN) {
  const Tensor x = Tensor::from_vector({1, 2, 3}, {3});
  EXPECT_THROW(topk_relu(x, 0), std::invalid_argument);
  EXPECT_THROW(topk_relu(x, 4), std::invalid_argument);
  EXPECT_THROW(topk_relu(Tensor::from_vector({1}, {}), 1), std::invalid_argument);
}

}  // namespace
