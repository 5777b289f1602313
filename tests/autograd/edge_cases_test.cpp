// Edge cases from the conventions: masked_fill's zero gradient, softmax with -inf
// and with huge logits, fully masked rows, cross-entropy with ignored targets.
// Compiled in float (test_autograd) and, through edge_cases_f64_test.cpp, in double.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <utility>

#include "autograd/kernels/kernels.hpp"
#include "autograd/ops.hpp"

namespace {

using namespace glass;

const Scalar kInf = std::numeric_limits<Scalar>::infinity();

bool all_finite(const Array& a) {
  for (Scalar v : a)
    if (!std::isfinite(v)) return false;
  return true;
}

TEST(EdgeCases, MaskedFillGivesExactlyZeroGradientAtMaskedPlaces) {
  Rng rng(1);
  const Tensor x = Tensor::randn({2, 3, 4}, 1, rng, true);
  const Mask mask = causal_mask(3, 4, 0);
  const Tensor w = Tensor::randn({2, 3, 4}, 1, rng);
  sum(masked_fill(x, mask, Scalar(-7)) * w).backward();
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t i = 0; i < 3; ++i)
      for (std::size_t j = 0; j < 4; ++j) {
        if (mask(i, j))
          EXPECT_EQ(x.grad()(b, i, j), Scalar(0));  // exactly zero
        else
          EXPECT_EQ(x.grad()(b, i, j), w.value()(b, i, j));  // passes through
      }
}

TEST(EdgeCases, SoftmaxWithMinusInfEntriesHasNoNaN) {
  const Tensor x = Tensor::from_vector({0, -kInf, 1, -kInf, 2, 3}, {2, 3}, true);
  const Tensor y = softmax(x);
  EXPECT_TRUE(all_finite(y.value()));
  EXPECT_EQ(y.value()(0, 1), Scalar(0));
  EXPECT_EQ(y.value()(1, 0), Scalar(0));
  // Row 0 = softmax([0, 1]) on the finite entries: 1/(1+e), e/(1+e).
  EXPECT_NEAR(y.value()(0, 0), 1 / (1 + std::exp(1.0)), 1e-6);
  const Tensor w = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3});
  sum(y * w).backward();
  EXPECT_TRUE(all_finite(x.grad()));
  EXPECT_EQ(x.grad()(0, 1), Scalar(0));
}

TEST(EdgeCases, SoftmaxWithHugeLogitsHasNoNaN) {
  const Tensor x = Tensor::from_vector({1000, -1000, 999, -1000, -1000, -999}, {2, 3}, true);
  const Tensor y = softmax(x);
  EXPECT_TRUE(all_finite(y.value()));
  // Row 0: softmax([1000, -1000, 999]) = [1/(1+e^-1), ~0, e^-1/(1+e^-1)].
  EXPECT_NEAR(y.value()(0, 0), 1 / (1 + std::exp(-1.0)), 1e-6);
  EXPECT_NEAR(y.value()(0, 2), std::exp(-1.0) / (1 + std::exp(-1.0)), 1e-6);
  // Row 1: -999 dominates by one nat over two entries of -1000.
  EXPECT_NEAR(y.value()(1, 2), 1 / (1 + 2 * std::exp(-1.0)), 1e-6);
  const Tensor w = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3});
  sum(y * w).backward();
  EXPECT_TRUE(all_finite(x.grad()));

  const Tensor ls = log_softmax(x);
  EXPECT_TRUE(all_finite(ls.value()));
  EXPECT_NEAR(ls.value()(0, 1), -2000 - std::log1p(std::exp(-1.0)), 1e-3);
}

TEST(EdgeCases, FullyMaskedRowGivesZerosAndZeroGradient) {
  const Tensor x = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, true);
  Mask mask = Mask::from_shape({2, 3});
  for (std::size_t j = 0; j < 3; ++j) {
    mask(0, j) = true;    // row 0 fully masked
    mask(1, j) = j == 2;  // row 1 partly
  }
  const Tensor y = softmax(masked_fill(x, mask, -kInf));
  for (std::size_t j = 0; j < 3; ++j) EXPECT_EQ(y.value()(0, j), Scalar(0));
  EXPECT_NEAR(y.value()(1, 0) + y.value()(1, 1), 1.0, 1e-6);
  const Tensor w = Tensor::from_vector({1, -2, 3, 4, 5, 6}, {2, 3});
  sum(y * w).backward();
  EXPECT_TRUE(all_finite(x.grad()));
  for (std::size_t j = 0; j < 3; ++j) EXPECT_EQ(x.grad()(0, j), Scalar(0));
  EXPECT_EQ(x.grad()(1, 2), Scalar(0));
  EXPECT_NE(x.grad()(1, 0), Scalar(0));

  // log_softmax of a fully -inf row: -inf values (log 0), zero gradient, no NaN.
  const Tensor z = Tensor::from_vector({-kInf, -kInf, 0, 1}, {2, 2}, true);
  const Tensor lz = log_softmax(z);
  EXPECT_EQ(lz.value()(0, 0), -kInf);
  sum(slice(lz, 0, 1, 2)).backward();
  EXPECT_EQ(z.grad()(0, 0), Scalar(0));
  EXPECT_EQ(z.grad()(0, 1), Scalar(0));
  EXPECT_TRUE(all_finite(z.grad()));
}

TEST(EdgeCases, CausalMaskNeverFullyMasksARow) {
  for (std::size_t start : {0u, 1u, 5u}) {
    const std::size_t n = 4, m = start + n;
    const Mask mask = causal_mask(n, m, start);
    ASSERT_EQ(mask.shape()[0], n);
    ASSERT_EQ(mask.shape()[1], m);
    for (std::size_t i = 0; i < n; ++i) {
      EXPECT_FALSE(mask(i, 0));
      for (std::size_t j = 0; j < m; ++j) EXPECT_EQ(mask(i, j), j > start + i);
    }
  }
}

TEST(EdgeCases, CrossEntropyAveragesOverNonIgnoredTargets) {
  Rng rng(5);
  const Tensor logits = Tensor::randn({4, 6}, 1, rng, true);
  const Ids targets = {3, -1, 0, -1};
  const Tensor loss = cross_entropy(logits, targets, -1);
  // Same as the mean over rows 0 and 2 alone.
  const Tensor kept = concat({slice(logits, 0, 0, 1), slice(logits, 0, 2, 3)}, 0);
  const Ids kept_targets = {3, 0};
  const Tensor loss_kept = cross_entropy(kept.detach(), kept_targets);
  EXPECT_NEAR(loss.item(), loss_kept.item(), 1e-6);
  loss.backward();
  for (std::size_t j = 0; j < 6; ++j) {
    EXPECT_EQ(logits.grad()(1, j), Scalar(0));  // ignored rows get no gradient
    EXPECT_EQ(logits.grad()(3, j), Scalar(0));
  }
  // Each counted row's gradient sums to zero (softmax - onehot) and is scaled by 1/2.
  Scalar row0 = 0;
  for (std::size_t j = 0; j < 6; ++j) row0 += logits.grad()(0, j);
  EXPECT_NEAR(row0, 0, 1e-6);
  EXPECT_LT(logits.grad()(0, 3), Scalar(0));
  EXPECT_GT(logits.grad()(0, 3), Scalar(-0.5));
}

TEST(EdgeCases, CrossEntropyWithAllTargetsIgnoredIsZero) {
  const Tensor logits = Tensor::ones({2, 3}, true);
  const Ids targets = {7, 7};
  const Tensor loss = cross_entropy(logits, targets, 7);
  EXPECT_EQ(loss.item(), Scalar(0));
  loss.backward();
  for (Scalar g : logits.grad()) EXPECT_EQ(g, Scalar(0));
}

TEST(EdgeCases, CrossEntropyWithHugeLogitsIsFinite) {
  const Tensor logits = Tensor::from_vector({1000, -1000, 0, -1000, 1000, 0}, {2, 3}, true);
  const Ids targets = {0, 0};
  const Tensor loss = cross_entropy(logits, targets);
  // Row 0: ~0; row 1: 2000 nats. Mean: 1000.
  EXPECT_NEAR(loss.item(), 1000.0, 1e-3);
  loss.backward();
  EXPECT_TRUE(all_finite(logits.grad()));
}

}  // namespace
