// Each fused op (softmax, log_softmax, rms_norm, cross_entropy, rope, silu_mul, masked_softmax,
// attention_scores, attention_mix) equals the same function composed from primitive ops, in value and in gradient (double
// precision). The composed versions follow the textbook formulas; the fused ones have
// hand-derived backward passes.

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>
#include <limits>
#include <tuple>

#include "autograd/kernels/kernels.hpp"
#include "autograd/ops.hpp"

namespace {

using namespace glass;

/// Runs f on a fresh leaf copy of x, backpropagates sum(f(x) * R) and returns (value, grad).
struct ValueGrad {
  Array value, grad;
};
template <class F>
ValueGrad run(const Array& x, const Array* R, F f) {
  const Tensor leaf(x, true);
  const Tensor y = f(leaf);
  Tensor loss = R ? sum(y * Tensor(*R)) : sum(y);
  loss.backward();
  return {y.value(), leaf.grad()};
}

void expect_close(const Array& a, const Array& b, double tol, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_NEAR(a.data()[i], b.data()[i], tol) << what << " at flat index " << i;
}

class FusedVsComposed : public ::testing::Test {
 protected:
  Rng rng{42};
  Array randn(const Shape& s) { return Tensor::randn(s, 1, rng).value(); }
};

TEST_F(FusedVsComposed, Softmax) {
  const Array x = randn({3, 7}), R = randn({3, 7});
  const auto fused = run(x, &R, [](const Tensor& a) { return softmax(a); });
  const auto composed = run(x, &R, [](const Tensor& a) {
    const Tensor e = exp(a);
    return e / sum(e, -1, true);  // exp(x) / sum(exp(x)), fine for moderate x
  });
  expect_close(fused.value, composed.value, 1e-12, "value");
  expect_close(fused.grad, composed.grad, 1e-12, "grad");
}

TEST_F(FusedVsComposed, LogSoftmax) {
  const Array x = randn({4, 5}), R = randn({4, 5});
  const auto fused = run(x, &R, [](const Tensor& a) { return log_softmax(a); });
  const auto composed = run(x, &R, [](const Tensor& a) { return a - log(sum(exp(a), -1, true)); });
  expect_close(fused.value, composed.value, 1e-12, "value");
  expect_close(fused.grad, composed.grad, 1e-12, "grad");
}

TEST_F(FusedVsComposed, RMSNormValueAndBothGradients) {
  const Array x = randn({2, 3, 8}), R = randn({2, 3, 8}), g = randn({8});
  const double eps = 1e-5;
  auto both = [&](bool fused) {
    const Tensor xt(x, true), gt(g, true);
    const Tensor y = fused ? rms_norm(xt, gt, eps)
                           : xt * pow(mean(xt * xt, -1, true) + eps, -0.5) * gt;
    sum(y * Tensor(R)).backward();
    return std::make_tuple(y.value(), xt.grad(), gt.grad());
  };
  const auto [yf, dxf, dgf] = both(true);
  const auto [yc, dxc, dgc] = both(false);
  expect_close(yf, yc, 1e-12, "value");
  expect_close(dxf, dxc, 1e-12, "grad x");
  expect_close(dgf, dgc, 1e-12, "grad gain");
}

TEST_F(FusedVsComposed, CrossEntropyWithIgnoreIndex) {
  const Array x = randn({2, 3, 6});
  const Ids targets = {{2, 5, -1}, {0, 0, 4}};
  const auto fused = run(x, nullptr, [&](const Tensor& a) { return cross_entropy(a, targets, -1); });
  // Composed: -sum(onehot * log_softmax(x)) / count, with onehot rows zero for ignored targets.
  Array onehot = Array::from_shape({2, 3, 6});
  onehot.fill(0);
  double count = 0;
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t t = 0; t < 3; ++t)
      if (targets(b, t) != -1) {
        onehot(b, t, static_cast<std::size_t>(targets(b, t))) = 1;
        ++count;
      }
  const auto composed = run(x, nullptr, [&](const Tensor& a) {
    return neg(sum(log_softmax(a) * Tensor(onehot))) / count;
  });
  expect_close(fused.value, composed.value, 1e-12, "value");
  expect_close(fused.grad, composed.grad, 1e-12, "grad");
}

TEST_F(FusedVsComposed, RopeWithOffset) {
  const std::size_t B = 2, T = 3, H = 2, D = 6, half = D / 2, start = 4;
  const double base = 10000;
  const Array x = randn({B, T, H, D}), R = randn({B, T, H, D});
  // cos/sin of angle (start + t) * base^(-2i/D), shaped (T, 1, D/2, 1) to broadcast over
  // (B, T, H, D/2, 1).
  Array c = Array::from_shape({T, 1, half, 1}), s = Array::from_shape({T, 1, half, 1});
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t i = 0; i < half; ++i) {
      const double angle = (start + t) * std::pow(base, -2.0 * i / D);
      c(t, 0, i, 0) = std::cos(angle);
      s(t, 0, i, 0) = std::sin(angle);
    }
  const auto fused = run(x, &R, [&](const Tensor& a) { return rope(a, start, base); });
  const auto composed = run(x, &R, [&](const Tensor& a) {
    const Tensor pairs = reshape(a, {B, T, H, half, 2});
    const Tensor x0 = slice(pairs, -1, 0, 1), x1 = slice(pairs, -1, 1, 2);
    const Tensor cos_t(c), sin_t(s);
    const Tensor y0 = x0 * cos_t - x1 * sin_t;
    const Tensor y1 = x0 * sin_t + x1 * cos_t;
    return reshape(concat({y0, y1}, -1), {B, T, H, D});
  });
  expect_close(fused.value, composed.value, 1e-12, "value");
  expect_close(fused.grad, composed.grad, 1e-12, "grad");
}

TEST_F(FusedVsComposed, LinearEqualsMatmulWithTranspose) {
  const Array x = randn({2, 3, 4}), w = randn({5, 4}), R = randn({2, 3, 5});
  const Tensor wt(w);
  const auto fused = run(x, &R, [&](const Tensor& a) { return linear(a, wt); });
  const auto composed = run(x, &R, [&](const Tensor& a) { return matmul(a, transpose(wt, 0, 1)); });
  expect_close(fused.value, composed.value, 1e-12, "value");
  expect_close(fused.grad, composed.grad, 1e-12, "grad");
}

TEST_F(FusedVsComposed, RepeatKvEqualsConcatOfHeads) {
  const Array x = randn({2, 2, 3, 4}), R = randn({2, 6, 3, 4});
  const auto fused = run(x, &R, [](const Tensor& a) { return repeat_kv(a, 3); });
  const auto composed = run(x, &R, [](const Tensor& a) {
    const Tensor h0 = slice(a, 1, 0, 1), h1 = slice(a, 1, 1, 2);
    return concat({h0, h0, h0, h1, h1, h1}, 1);  // output head h = input head h / 3
  });
  expect_close(fused.value, composed.value, 0, "value");
  expect_close(fused.grad, composed.grad, 1e-12, "grad");
}

// ---- silu_mul = silu(gate) * up -------------------------------------------------------------

/// Value and gradients of sum(f(gate, up) * R) for fresh leaves; an input with need_* false does
/// not require grad (its returned gradient is empty).
struct TwoGrads {
  Array value, d_gate, d_up;
};
template <class F>
TwoGrads run2(const Array& gate, const Array& up, const Array& R, bool need_gate, bool need_up, F f) {
  const Tensor g(gate, need_gate), u(up, need_up);
  const Tensor y = f(g, u);
  sum(y * Tensor(R)).backward();
  TwoGrads out{y.value(), Array(), Array()};
  if (need_gate) out.d_gate = g.grad();
  if (need_up) out.d_up = u.grad();
  EXPECT_FALSE(!need_gate && g.has_grad()) << "gate got a gradient without requiring one";
  EXPECT_FALSE(!need_up && u.has_grad()) << "up got a gradient without requiring one";
  return out;
}

TEST_F(FusedVsComposed, SiluMulEqualsSiluTimesUp) {
  // 2*3*21 = 126 elements: several SIMD batches and a scalar tail.
  const Array gate = randn({2, 3, 21}), up = randn({2, 3, 21}), R = randn({2, 3, 21});
  const auto fused = run2(gate, up, R, true, true, [](auto& g, auto& u) { return silu_mul(g, u); });
  const auto composed = run2(gate, up, R, true, true, [](auto& g, auto& u) { return silu(g) * u; });
  expect_close(fused.value, composed.value, 1e-14, "value");
  expect_close(fused.d_gate, composed.d_gate, 1e-13, "grad gate");
  expect_close(fused.d_up, composed.d_up, 1e-14, "grad up");
}

TEST_F(FusedVsComposed, SiluMulWithOnlyOneInputRequiringGrad) {
  const Array gate = randn({5, 7}), up = randn({5, 7}), R = randn({5, 7});
  auto fused = [](auto& g, auto& u) { return silu_mul(g, u); };
  auto composed = [](auto& g, auto& u) { return silu(g) * u; };
  {  // only the gate (e.g. a frozen up projection)
    const auto f = run2(gate, up, R, true, false, fused);
    const auto c = run2(gate, up, R, true, false, composed);
    expect_close(f.d_gate, c.d_gate, 1e-13, "grad gate");
  }
  {  // only up
    const auto f = run2(gate, up, R, false, true, fused);
    const auto c = run2(gate, up, R, false, true, composed);
    expect_close(f.d_up, c.d_up, 1e-14, "grad up");
  }
}

TEST_F(FusedVsComposed, SiluMulOfOneTensorWithItself) {
  // silu_mul(a, a) = a^2 sigmoid(a): both gradients accumulate into a.
  const Array x = randn({3, 9}), R = randn({3, 9});
  const auto fused = run(x, &R, [](const Tensor& a) { return silu_mul(a, a); });
  const auto composed = run(x, &R, [](const Tensor& a) { return a * a * sigmoid(a); });
  expect_close(fused.value, composed.value, 1e-13, "value");
  expect_close(fused.grad, composed.grad, 1e-13, "grad");
}

// ---- masked_softmax = softmax(masked_fill(x, mask, -inf)) -------------------------------------

Tensor composed_masked_softmax(const Tensor& x, const Mask& mask) {
  return softmax(masked_fill(x, mask, -std::numeric_limits<Scalar>::infinity()));
}

/// Every masked place has exactly 0 value and exactly 0 gradient (shape of x, mask broadcast
/// over x's leading axes as a (rows, d) pattern repeating every mask.size() elements).
void expect_exact_zeros_at_masked(const Array& value, const Array& grad, const Mask& mask) {
  const std::size_t period = mask.size();
  for (std::size_t i = 0; i < value.size(); ++i) {
    if (!mask.data()[i % period]) continue;
    EXPECT_EQ(value.data()[i], 0.0) << "value at masked flat index " << i;
    EXPECT_EQ(grad.data()[i], 0.0) << "grad at masked flat index " << i;
  }
}

TEST_F(FusedVsComposed, MaskedSoftmaxWithCausalMaskEqualsTheReference) {
  // Causal masks with and without a cache offset; row lengths shorter and longer than a SIMD
  // batch, so the prefix rows end inside, at and past whole batches.
  for (const auto& [n, m, start] : {std::tuple<std::size_t, std::size_t, std::size_t>{3, 4, 0},
                                    {5, 5, 0}, {19, 37, 18}, {40, 40, 0}}) {
    const Mask mask = causal_mask(n, m, start);
    const Array x = randn({2, 3, n, m}), R = randn({2, 3, n, m});
    const auto fused = run(x, &R, [&](const Tensor& a) { return masked_softmax(a, mask); });
    const auto composed = run(x, &R, [&](const Tensor& a) { return composed_masked_softmax(a, mask); });
    // The kernel's vectorised exponentials and partial sums against the reference's plain
    // ones: equal to rounding.
    expect_close(fused.value, composed.value, 1e-14, "value");
    expect_close(fused.grad, composed.grad, 1e-14, "grad");
    expect_exact_zeros_at_masked(fused.value, fused.grad, mask);
  }
}

TEST_F(FusedVsComposed, MaskedSoftmaxWithGeneralRowsAndAFullyMaskedRow) {
  Mask mask = Mask::from_shape({4, 6});
  mask.fill(false);
  mask(0, 1) = mask(0, 4) = true;                      // holes: not a prefix row
  for (std::size_t j = 0; j < 6; ++j) mask(1, j) = true;  // fully masked row
  mask(2, 0) = mask(2, 5) = true;                      // masked first key
  // row 3: nothing masked (a prefix row with k = d)
  const Array x = randn({2, 4, 6}), R = randn({2, 4, 6});
  const auto fused = run(x, &R, [&](const Tensor& a) { return masked_softmax(a, mask); });
  const auto composed = run(x, &R, [&](const Tensor& a) { return composed_masked_softmax(a, mask); });
  expect_close(fused.value, composed.value, 1e-15, "value");
  expect_close(fused.grad, composed.grad, 1e-15, "grad");
  expect_exact_zeros_at_masked(fused.value, fused.grad, mask);
  for (std::size_t b = 0; b < 2; ++b) {  // the fully masked row: zeros, and each other row sums to 1
    double total[4] = {0, 0, 0, 0};
    for (std::size_t r = 0; r < 4; ++r)
      for (std::size_t j = 0; j < 6; ++j) total[r] += fused.value.data()[(b * 4 + r) * 6 + j];
    EXPECT_EQ(total[1], 0.0);
    for (std::size_t r : {0, 2, 3}) EXPECT_NEAR(total[r], 1.0, 1e-14);
  }
}

TEST_F(FusedVsComposed, MaskedSoftmaxWithABroadcastMask) {
  // Mask (2, 1, 5) over x (2, 3, 5): each batch element has its own key padding, shared by its
  // 3 rows (not a trailing-shape mask, so masked_fill's expansion path is used).
  Mask mask = Mask::from_shape({2, 1, 5});
  mask.fill(false);
  mask(0, 0, 3) = mask(0, 0, 4) = true;  // prefix rows (k = 3)
  mask(1, 0, 0) = mask(1, 0, 2) = true;  // general rows
  const Array x = randn({2, 3, 5}), R = randn({2, 3, 5});
  const auto fused = run(x, &R, [&](const Tensor& a) { return masked_softmax(a, mask); });
  const auto composed = run(x, &R, [&](const Tensor& a) { return composed_masked_softmax(a, mask); });
  expect_close(fused.value, composed.value, 1e-15, "value");
  expect_close(fused.grad, composed.grad, 1e-15, "grad");
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t t = 0; t < 3; ++t)
      for (std::size_t j = 0; j < 5; ++j)
        if (mask(b, 0, j)) {
          EXPECT_EQ(fused.value(b, t, j), 0.0);
          EXPECT_EQ(fused.grad(b, t, j), 0.0);
        }
}

TEST_F(FusedVsComposed, MaskedSoftmaxOfMinusInfScoresInAllowedPlaces) {
  // Allowed entries that are already -inf (a row with nothing finite) give zeros, not NaN.
  Array x = randn({2, 4});
  for (std::size_t j = 0; j < 4; ++j) x(0, j) = -std::numeric_limits<double>::infinity();
  const Mask mask = causal_mask(2, 4, 2);  // row 0 allows keys 0..2, row 1 all keys
  const Array R = randn({2, 4});
  const auto fused = run(x, &R, [&](const Tensor& a) { return masked_softmax(a, mask); });
  const auto composed = run(x, &R, [&](const Tensor& a) { return composed_masked_softmax(a, mask); });
  expect_close(fused.value, composed.value, 1e-14, "value");
  expect_close(fused.grad, composed.grad, 1e-14, "grad");
  for (std::size_t j = 0; j < 4; ++j) EXPECT_EQ(fused.value(0, j), 0.0);
}

// ---- attention_scores / attention_mix = transposes + repeat_kv + matmul ----------------------

/// One attention shape: B batch, n queries, m keys, H query heads, H_kv KV heads, D head_dim.
struct AttnShape {
  std::size_t B, n, m, H, H_kv, D;
};

const AttnShape kAttnShapes[] = {
    {2, 3, 4, 4, 2, 3},  // GQA, n != m
    {2, 5, 5, 2, 2, 4},  // H_kv == H: no repetition
    {2, 1, 6, 4, 2, 3},  // one query (the gemv path of generation) against m > 1 keys
    {1, 1, 7, 3, 3, 2},  // one query, no GQA
    {3, 4, 2, 6, 2, 5},  // n_rep = 3, more queries than keys
};

/// Value of f(a, b) and the gradients of sum(f(a, b) * R), or, with `reuse`, of
/// sum(f(a, b) * R) + sum(a * a) + sum(b * b) with the squares recorded after f: then the backward
/// of f finds a and b already holding a gradient and must add to it.
struct ValueTwoGrads {
  Array value, da, db;
};
template <class F>
ValueTwoGrads run_pair(const Array& a, const Array& b, const Array& R, bool reuse, F f) {
  const Tensor at(a, true), bt(b, true);
  const Tensor y = f(at, bt);
  Tensor loss = sum(y * Tensor(R));
  if (reuse) loss = loss + sum(at * at) + sum(bt * bt);
  loss.backward();
  return {y.value(), at.grad(), bt.grad()};
}

TEST_F(FusedVsComposed, AttentionScoresEqualsMatmulNtOfHeadsFirstRepeatedKeys) {
  const double scale = 0.41;
  for (const AttnShape& s : kAttnShapes) {
    const std::size_t n_rep = s.H / s.H_kv;
    const Array q = randn({s.B, s.n, s.H, s.D}), k = randn({s.B, s.m, s.H_kv, s.D});
    const Array R = randn({s.B, s.H, s.n, s.m});
    for (bool reuse : {false, true}) {
      const auto fused = run_pair(q, k, R, reuse, [&](auto& a, auto& b) {
        return attention_scores(a, b, scale);
      });
      const auto composed = run_pair(q, k, R, reuse, [&](auto& a, auto& b) {
        return matmul_nt(transpose(a, 1, 2), repeat_kv(transpose(b, 1, 2), n_rep), scale);
      });
      const std::string what = "B" + std::to_string(s.B) + " n" + std::to_string(s.n) + " m" +
                               std::to_string(s.m) + " H" + std::to_string(s.H) + " H_kv" +
                               std::to_string(s.H_kv) + (reuse ? " reuse" : "");
      ASSERT_EQ(shape_of(fused.value), (Shape{s.B, s.H, s.n, s.m})) << what;
      expect_close(fused.value, composed.value, 1e-12, ("value " + what).c_str());
      expect_close(fused.da, composed.da, 1e-12, ("grad q " + what).c_str());
      expect_close(fused.db, composed.db, 1e-12, ("grad k " + what).c_str());
    }
  }
}

TEST_F(FusedVsComposed, AttentionMixEqualsMatmulWithRepeatedValuesTransposedBack) {
  for (const AttnShape& s : kAttnShapes) {
    const std::size_t n_rep = s.H / s.H_kv;
    const Array w = randn({s.B, s.H, s.n, s.m}), v = randn({s.B, s.m, s.H_kv, s.D});
    const Array R = randn({s.B, s.n, s.H, s.D});
    for (bool reuse : {false, true}) {
      const auto fused = run_pair(w, v, R, reuse, [](auto& a, auto& b) { return attention_mix(a, b); });
      const auto composed = run_pair(w, v, R, reuse, [&](auto& a, auto& b) {
        return transpose(matmul(a, repeat_kv(transpose(b, 1, 2), n_rep)), 1, 2);
      });
      const std::string what = "B" + std::to_string(s.B) + " n" + std::to_string(s.n) + " m" +
                               std::to_string(s.m) + " H" + std::to_string(s.H) + " H_kv" +
                               std::to_string(s.H_kv) + (reuse ? " reuse" : "");
      ASSERT_EQ(shape_of(fused.value), (Shape{s.B, s.n, s.H, s.D})) << what;
      expect_close(fused.value, composed.value, 1e-12, ("value " + what).c_str());
      expect_close(fused.da, composed.da, 1e-12, ("grad weights " + what).c_str());
      expect_close(fused.db, composed.db, 1e-12, ("grad v " + what).c_str());
    }
  }
}

TEST_F(FusedVsComposed, AttentionScoresOfOneTensorWithItself) {
  // q = k (H == H_kv, n == m): both gradients land in the same tensor.
  const Array x = randn({2, 4, 3, 5}), R = randn({2, 3, 4, 4});
  const auto fused = run(x, &R, [](const Tensor& a) { return attention_scores(a, a, 0.5); });
  const auto composed = run(x, &R, [](const Tensor& a) {
    const Tensor heads = transpose(a, 1, 2);
    return matmul_nt(heads, heads, 0.5);
  });
  expect_close(fused.value, composed.value, 1e-12, "value");
  expect_close(fused.grad, composed.grad, 1e-12, "grad");
}

TEST_F(FusedVsComposed, AttentionProductsWithOnlyOneInputRequiringGrad) {
  // Generation-like: k and v are constants (from a cache), only q and the weights need gradients.
  const Array q = randn({2, 3, 4, 3}), k = randn({2, 5, 2, 3}), w = randn({2, 4, 3, 5});
  const Array R = randn({2, 4, 3, 5}), R2 = randn({2, 3, 4, 3});
  const Tensor kc(k), vc(k);
  const auto scores = run(q, &R, [&](const Tensor& a) { return attention_scores(a, kc, 0.3); });
  const auto scores_ref = run(q, &R, [&](const Tensor& a) {
    return matmul_nt(transpose(a, 1, 2), repeat_kv(transpose(kc, 1, 2), 2), 0.3);
  });
  expect_close(scores.grad, scores_ref.grad, 1e-12, "grad q");
  const auto mix = run(w, &R2, [&](const Tensor& a) { return attention_mix(a, vc); });
  const auto mix_ref = run(w, &R2, [&](const Tensor& a) {
    return transpose(matmul(a, repeat_kv(transpose(vc, 1, 2), 2)), 1, 2);
  });
  expect_close(mix.grad, mix_ref.grad, 1e-12, "grad weights");
  EXPECT_FALSE(kc.has_grad());
  EXPECT_FALSE(vc.has_grad());
}

// ---- the masked overloads = their definitions -----------------------------------------------
//   attention_scores(q, k, scale, mask) = masked_fill(attention_scores(q, k, scale), mask, -inf)
//   attention_mix(weights, v, mask)     = attention_mix(masked_fill(weights, mask, 0), v)
// The projection R and the weights are random everywhere, also at the masked places, so a
// masked place that leaked into a product or received a gradient would show.

/// A shape and the mask (n, m) to use with it.
struct MaskedCase {
  AttnShape s;
  Mask mask;
  std::string what;
};

/// Prefix rows of any lengths: row i allows keys 0 .. allowed(i) - 1.
Mask prefix_mask(std::size_t n, std::size_t m, const std::function<std::size_t(std::size_t)>& allowed) {
  Mask mask = Mask::from_shape({n, m});
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < m; ++j) mask(i, j) = j >= allowed(i);
  return mask;
}

std::vector<MaskedCase> masked_cases() {
  std::vector<MaskedCase> c;
  // Causal, n = m = 70: blocks of 32 or 64 rows leave a partial last block.
  c.push_back({{2, 70, 70, 4, 2, 3}, causal_mask(70, 70), "causal n70 m70"});
  // Causal after 4 cached positions: n = 5, m = 9 (n != m), GQA.
  c.push_back({{2, 5, 9, 4, 2, 3}, causal_mask(5, 9, 4), "causal n5 m9 start4"});
  // Causal after 60 positions, n = 40 over two blocks, n_rep = 2 with H_kv = 1.
  c.push_back({{1, 40, 100, 2, 1, 4}, causal_mask(40, 100, 60), "causal n40 m100 start60"});
  // n = 1 (generation): the last position sees every key (nothing masked), or an earlier one.
  c.push_back({{2, 1, 7, 4, 2, 3}, causal_mask(1, 7, 6), "causal n1 m7 start6"});
  c.push_back({{2, 1, 7, 4, 2, 3}, causal_mask(1, 7, 2), "causal n1 m7 start2"});
  // Prefix rows in no order, some fully masked (k_i = 0), and a whole block of fully masked
  // rows (rows 64..69 under blocks of 32; with blocks of 64 they share a block with none).
  c.push_back({{1, 70, 13, 2, 2, 3},
               prefix_mask(70, 13, [](std::size_t i) { return i < 64 ? (i * 7) % 14 : 0; }),
               "ragged prefixes"});
  // Not prefix rows: holes, a masked first key, a fully masked row (the general path).
  Mask holes = causal_mask(6, 8, 2);
  holes(0, 1) = holes(3, 0) = holes(4, 2) = holes(5, 6) = true;
  for (std::size_t j = 0; j < 8; ++j) holes(2, j) = true;
  c.push_back({{2, 6, 8, 4, 2, 3}, holes, "holes"});
  return c;
}

/// Like expect_close, but equal infinities (the -inf of masked scores) also match.
void expect_close_or_same_inf(const Array& a, const Array& b, double tol, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double x = a.data()[i], y = b.data()[i];
    if (std::isinf(x) || std::isinf(y))
      EXPECT_EQ(x, y) << what << " at flat index " << i;
    else
      EXPECT_NEAR(x, y, tol) << what << " at flat index " << i;
  }
}

TEST_F(FusedVsComposed, MaskedAttentionScoresEqualMaskedFillOfTheScores) {
  const double scale = 0.41, inf = std::numeric_limits<double>::infinity();
  for (const MaskedCase& c : masked_cases()) {
    const AttnShape& s = c.s;
    const Array q = randn({s.B, s.n, s.H, s.D}), k = randn({s.B, s.m, s.H_kv, s.D});
    const Array R = randn({s.B, s.H, s.n, s.m});
    for (bool reuse : {false, true}) {
      const auto fused = run_pair(q, k, R, reuse, [&](auto& a, auto& b) {
        return attention_scores(a, b, scale, c.mask);
      });
      const auto composed = run_pair(q, k, R, reuse, [&](auto& a, auto& b) {
        return masked_fill(attention_scores(a, b, scale), c.mask, -inf);
      });
      const std::string what = c.what + (reuse ? " reuse" : "");
      ASSERT_EQ(shape_of(fused.value), (Shape{s.B, s.H, s.n, s.m})) << what;
      expect_close_or_same_inf(fused.value, composed.value, 1e-12, "value " + what);
      expect_close(fused.da, composed.da, 1e-12, ("grad q " + what).c_str());
      expect_close(fused.db, composed.db, 1e-12, ("grad k " + what).c_str());
    }
  }
}

TEST_F(FusedVsComposed, MaskedAttentionMixEqualsMixOfZeroedWeights) {
  for (const MaskedCase& c : masked_cases()) {
    const AttnShape& s = c.s;
    const Array w = randn({s.B, s.H, s.n, s.m}), v = randn({s.B, s.m, s.H_kv, s.D});
    const Array R = randn({s.B, s.n, s.H, s.D});
    for (bool reuse : {false, true}) {
      const auto fused = run_pair(w, v, R, reuse, [&](auto& a, auto& b) {
        return attention_mix(a, b, c.mask);
      });
      const auto composed = run_pair(w, v, R, reuse, [&](auto& a, auto& b) {
        return attention_mix(masked_fill(a, c.mask, 0.0), b);
      });
      const std::string what = c.what + (reuse ? " reuse" : "");
      ASSERT_EQ(shape_of(fused.value), (Shape{s.B, s.n, s.H, s.D})) << what;
      expect_close(fused.value, composed.value, 1e-12, ("value " + what).c_str());
      expect_close(fused.da, composed.da, 1e-12, ("grad weights " + what).c_str());
      expect_close(fused.db, composed.db, 1e-12, ("grad v " + what).c_str());
      // The gradient at the masked places is exactly 0 (2 with reuse: d sum(w * w) = 2 w only).
      for (std::size_t flat = 0; flat < w.size(); ++flat) {
        const std::size_t j = flat % s.m, i = flat / s.m % s.n;
        if (c.mask(i, j)) {
          ASSERT_EQ(fused.da.data()[flat], reuse ? 2 * w.data()[flat] : 0.0) << what << " at " << flat;
        }
      }
    }
  }
}

TEST_F(FusedVsComposed, MaskedProductsOfTheAttentionChainEqualThePlainOnes) {
  // The model's chain: scores under the causal mask -> masked_softmax -> mix under the mask,
  // against the plain products (masked_softmax already zeroes the masked weights): same values
  // and gradients of q, k and v.
  const std::size_t B = 2, n = 37, start = 3, m = start + n, H = 4, H_kv = 2, D = 5;
  const Mask mask = causal_mask(n, m, start);
  const Array q = randn({B, n, H, D}), k = randn({B, m, H_kv, D}), v = randn({B, m, H_kv, D});
  const Array R = randn({B, n, H, D});
  auto chain = [&](bool masked) {
    const Tensor qt(q, true), kt(k, true), vt(v, true);
    const Tensor scores = masked ? attention_scores(qt, kt, 0.3, mask) : attention_scores(qt, kt, 0.3);
    const Tensor weights = masked_softmax(scores, mask);
    const Tensor mix = masked ? attention_mix(weights, vt, mask) : attention_mix(weights, vt);
    sum(mix * Tensor(R)).backward();
    return std::make_tuple(mix.value(), qt.grad(), kt.grad(), vt.grad());
  };
  const auto [yf, dqf, dkf, dvf] = chain(true);
  const auto [yp, dqp, dkp, dvp] = chain(false);
  expect_close(yf, yp, 1e-12, "value");
  expect_close(dqf, dqp, 1e-12, "grad q");
  expect_close(dkf, dkp, 1e-12, "grad k");
  expect_close(dvf, dvp, 1e-12, "grad v");
}

}  // namespace
