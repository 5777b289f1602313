// Edge cases from the conventions: masked_fill's zero gradient, softmax with -inf
// and with huge logits, fully masked rows, cross-entropy with ignored targets, and the fused
// masked_softmax equal to the last bit to masked_fill + softmax (what the attention snapshots
// rely on), attention_scores / attention_mix with empty extents and at the model's shape.
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
        if (mask(i, j)) EXPECT_EQ(x.grad()(b, i, j), Scalar(0));        // exactly zero
        else EXPECT_EQ(x.grad()(b, i, j), w.value()(b, i, j));          // passes through
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
    mask(0, j) = true;   // row 0 fully masked
    mask(1, j) = j == 2; // row 1 partly
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

TEST(EdgeCases, MaskedSoftmaxEqualsMaskedFillThenSoftmax) {
  // The fast kernel against the reference steps 6-7 in this precision: causal masks at the
  // model's training shape (T = 64) and while decoding with a cache (start = 64), with huge
  // logits; values and gradients equal to rounding (a few units in the last place).
  Rng rng(5);
  for (const auto& [n, m, start] : {std::tuple<std::size_t, std::size_t, std::size_t>{64, 64, 0},
                                    {3, 67, 64}, {1, 65, 64}}) {
    const Mask mask = causal_mask(n, m, start);
    Array x = Tensor::randn({2, 4, n, m}, 3, rng).value();
    x.data()[5] = 1e4;  // a huge allowed logit
    const Array R = Tensor::randn({2, 4, n, m}, 1, rng).value();
    auto run = [&](bool fused) {
      const Tensor leaf(x, true);
      const Tensor y = fused ? masked_softmax(leaf, mask) : softmax(masked_fill(leaf, mask, -kInf));
      sum(y * Tensor(R)).backward();
      return std::make_pair(y.value(), leaf.grad());
    };
    const auto [yf, gf] = run(true);
    const auto [yc, gc] = run(false);
    EXPECT_TRUE(all_finite(yf));
    const double tol = 8 * std::numeric_limits<Scalar>::epsilon();  // weights and grads are O(1)
    double value_diff = 0, grad_diff = 0;
    for (std::size_t i = 0; i < yf.size(); ++i) {
      value_diff = std::max(value_diff, double(std::abs(yf.data()[i] - yc.data()[i])));
      grad_diff = std::max(grad_diff, double(std::abs(gf.data()[i] - gc.data()[i])));
    }
    EXPECT_LE(value_diff, tol) << "n " << n << " m " << m;
    EXPECT_LE(grad_diff, tol) << "n " << n << " m " << m;
  }
}

TEST(EdgeCases, AttentionProductsWithEmptyExtents) {
  // No keys (m = 0), no queries (n = 0) or head_dim 0: the right shapes, zeros where a sum is
  // empty, and zero gradients for the inputs that have elements. No BLAS call sees a zero size.
  auto backward_of = [](const Tensor& y) { sum(y * Tensor(Array(y.shape(), Scalar(1)))).backward(); };
  auto all_zero = [](const Array& a) {
    for (Scalar v : a)
      if (v != 0) return false;
    return true;
  };
  {  // head_dim 0: every score is an empty sum, 0
    const Tensor q(Array(Shape{2, 3, 4, 0}, Scalar(0)), true), k(Array(Shape{2, 5, 2, 0}, Scalar(0)), true);
    const Tensor s = attention_scores(q, k, 1);
    EXPECT_EQ(s.shape(), (Shape{2, 4, 3, 5}));
    EXPECT_TRUE(all_zero(s.value()));
    backward_of(s);
    EXPECT_EQ(q.grad().shape(), (Shape{2, 3, 4, 0}));
    EXPECT_EQ(k.grad().shape(), (Shape{2, 5, 2, 0}));
  }
  {  // no queries: k still gets a (zero) gradient of its shape
    const Tensor q(Array(Shape{2, 0, 4, 3}, Scalar(0)), true), k(Array(Shape{2, 5, 2, 3}, Scalar(1)), true);
    const Tensor s = attention_scores(q, k, 1);
    EXPECT_EQ(s.shape(), (Shape{2, 4, 0, 5}));
    backward_of(s);
    EXPECT_EQ(k.grad().shape(), (Shape{2, 5, 2, 3}));
    EXPECT_TRUE(all_zero(k.grad()));
  }
  {  // no keys: each output is an empty weighted sum, 0
    const Tensor w(Array(Shape{2, 4, 3, 0}, Scalar(0)), true), v(Array(Shape{2, 0, 2, 5}, Scalar(0)), true);
    const Tensor mix = attention_mix(w, v);
    EXPECT_EQ(mix.shape(), (Shape{2, 3, 4, 5}));
    EXPECT_TRUE(all_zero(mix.value()));
    backward_of(mix);
    EXPECT_EQ(w.grad().shape(), (Shape{2, 4, 3, 0}));
    EXPECT_EQ(v.grad().shape(), (Shape{2, 0, 2, 5}));
  }
}

TEST(EdgeCases, AttentionProductsMatchTheirCompositionsAtTheModelShape) {
  // The model's attention (B = 2, T = 64, 4 query heads, 2 KV heads, head_dim 32) in this
  // precision: attention_scores / attention_mix against the transpose + repeat_kv + matmul
  // path they replaced in Attention::forward (snapshots attn.scores and attn.mix).
  Rng rng(9);
  const std::size_t B = 2, T = 64, H = 4, H_kv = 2, D = 32;
  const Tensor q = Tensor::randn({B, T, H, D}, 1, rng), k = Tensor::randn({B, T, H_kv, D}, 1, rng);
  const Tensor v = Tensor::randn({B, T, H_kv, D}, 1, rng);
  const Scalar scale = 1 / std::sqrt(Scalar(D));
  const Tensor scores = attention_scores(q, k, scale);
  const Tensor scores_ref = matmul_nt(transpose(q, 1, 2), repeat_kv(transpose(k, 1, 2), 2), scale);
  const Tensor weights = masked_softmax(scores, causal_mask(T, T));
  const Tensor mix = attention_mix(weights, v);
  const Tensor mix_ref = transpose(matmul(weights, repeat_kv(transpose(v, 1, 2), 2)), 1, 2);
  ASSERT_EQ(scores.shape(), scores_ref.shape());
  ASSERT_EQ(mix.shape(), mix_ref.shape());
  auto max_diff = [](const Array& a, const Array& b) {
    double worst = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
      worst = std::max(worst, double(std::abs(a.data()[i] - b.data()[i])));
    return worst;
  };
  // at most float rounding: the same dot products, read through other leading dimensions
  EXPECT_LE(max_diff(scores.value(), scores_ref.value()), 1e-5);
  EXPECT_LE(max_diff(mix.value(), mix_ref.value()), 1e-5);
}

}  // namespace
