// causal_attention (the fused FlashAttention-style op, autograd/kernels/causal_attention.cpp) in double
// precision: gradient checks of q, k and v against central finite differences, and equality
// (value and all three gradients, to 1e-12) with the composition it replaces,
//   attention_mix(masked_softmax(attention_scores(q, k, scale, mask), mask), v, mask),
// mask = causal_mask(n, m, m - n). Shapes cover MHA and GQA (n_kv_heads 2 and 1), n = m and
// n < m (start > 0), one block of 32 query rows, several blocks and a partial last block.

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "autograd/kernels/kernels.hpp"
#include "autograd/gradcheck.hpp"
#include "autograd/ops.hpp"

namespace {

using namespace glass;

static_assert(sizeof(Scalar) == sizeof(double), "these checks need Scalar = double");

/// B batch, n queries, m keys, H query heads, H_kv KV heads, D head_dim.
struct Shape6 {
  std::size_t B, n, m, H, H_kv, D;
  std::string str() const {
    std::ostringstream os;
    os << "B" << B << " n" << n << " m" << m << " H" << H << " H_kv" << H_kv << " D" << D;
    return os.str();
  }
};

/// The composition of the attention's steps 5-8 that causal_attention fuses.
Tensor composed(const Tensor& q, const Tensor& k, const Tensor& v, Scalar scale) {
  const std::size_t n = q.shape()[1], m = k.shape()[1];
  const Mask mask = causal_mask(n, m, m - n);
  return attention_mix(masked_softmax(attention_scores(q, k, scale, mask), mask), v, mask);
}

Array randn(const Shape& shape, Rng& rng) { return Tensor::randn(shape, 1.0, rng).value(); }

TEST(CausalAttentionGradcheck, QueriesKeysAndValues) {
  const Shape6 shapes[] = {
      {2, 5, 5, 4, 4, 3},   // MHA, n = m, one partial block
      {2, 3, 7, 4, 2, 2},   // GQA n_rep 2, n < m (start 4)
      {1, 40, 40, 4, 2, 3},  // two blocks, the second partial
      {1, 40, 70, 4, 1, 2},  // n_kv_heads 1 (n_rep 4), start 30
      {1, 70, 70, 4, 1, 2},  // three blocks (32 + 32 + 6)
  };
  for (const Shape6& s : shapes) {
    Rng rng(11);
    const Tensor q = Tensor::randn({s.B, s.n, s.H, s.D}, 1.0, rng, true);
    const Tensor k = Tensor::randn({s.B, s.m, s.H_kv, s.D}, 1.0, rng, true);
    const Tensor v = Tensor::randn({s.B, s.m, s.H_kv, s.D}, 1.0, rng, true);
    const GradcheckReport report = gradcheck(
        [](const std::vector<Tensor>& in) { return causal_attention(in[0], in[1], in[2], 0.7); },
        {q, k, v});
    EXPECT_TRUE(report.passed) << s.str() << ": max abs error " << report.max_abs_error
                               << ", max rel error " << report.max_rel_error;
    EXPECT_EQ(report.inputs.size(), 3u) << s.str();
  }
}

/// Value and the gradients of sum(f(q, k, v) * R); with `reuse`, the loss also has
/// sum(q*q) + sum(k*k) + sum(v*v) recorded after f, so f's backward finds gradients to add to.
struct Result {
  Array value, dq, dk, dv;
};
template <class F>
Result run(const Array& q, const Array& k, const Array& v, const Array& R, bool reuse, F f) {
  const Tensor qt(q, true), kt(k, true), vt(v, true);
  const Tensor y = f(qt, kt, vt);
  Tensor loss = sum(y * Tensor(R));
  if (reuse) loss = loss + sum(qt * qt) + sum(kt * kt) + sum(vt * vt);
  loss.backward();
  return {y.value(), qt.grad(), kt.grad(), vt.grad()};
}

void expect_close(const Array& a, const Array& b, double tol, const std::string& what) {
  ASSERT_EQ(shape_of(a), shape_of(b)) << what;
  for (std::size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a.data()[i], b.data()[i], tol) << what << " at flat index " << i;
}

TEST(CausalAttention, EqualsTheComposedSteps) {
  const Shape6 shapes[] = {
      {2, 5, 5, 4, 4, 3},    {2, 3, 7, 4, 2, 2},    {3, 1, 6, 4, 2, 4},  // one query
      {1, 32, 32, 2, 2, 5},  // exactly one block
      {2, 40, 40, 4, 2, 8},  {1, 40, 70, 4, 1, 4},  {2, 70, 70, 4, 1, 6},
      {1, 70, 100, 4, 2, 3},  // three blocks, start 30
  };
  for (const Shape6& s : shapes) {
    Rng rng(5);
    const Array q = randn({s.B, s.n, s.H, s.D}, rng), k = randn({s.B, s.m, s.H_kv, s.D}, rng);
    const Array v = randn({s.B, s.m, s.H_kv, s.D}, rng), R = randn({s.B, s.n, s.H, s.D}, rng);
    const double scale = 1 / std::sqrt(static_cast<double>(s.D));
    for (bool reuse : {false, true}) {
      const std::string what = s.str() + (reuse ? " reuse" : "");
      const Result fused = run(q, k, v, R, reuse, [&](auto& a, auto& b, auto& c) {
        return causal_attention(a, b, c, scale);
      });
      const Result ref = run(q, k, v, R, reuse, [&](auto& a, auto& b, auto& c) {
        return composed(a, b, c, scale);
      });
      ASSERT_EQ(shape_of(fused.value), (Shape{s.B, s.n, s.H, s.D})) << what;
      expect_close(fused.value, ref.value, 1e-12, "value " + what);
      expect_close(fused.dq, ref.dq, 1e-12, "grad q " + what);
      expect_close(fused.dk, ref.dk, 1e-12, "grad k " + what);
      expect_close(fused.dv, ref.dv, 1e-12, "grad v " + what);
    }
  }
}

TEST(CausalAttention, OnlySomeInputsRequireGrad) {
  // k and v constants (as from a cache): only q gets a gradient, equal to the composition's.
  Rng rng(3);
  const Array q = randn({2, 40, 4, 3}, rng), R = randn({2, 40, 4, 3}, rng);
  const Tensor k(randn({2, 45, 2, 3}, rng)), v(randn({2, 45, 2, 3}, rng));
  Array dq[2];
  for (int which = 0; which < 2; ++which) {
    const Tensor qt(q, true);
    const Tensor y = which == 0 ? causal_attention(qt, k, v, 0.5) : composed(qt, k, v, 0.5);
    sum(y * Tensor(R)).backward();
    dq[which] = qt.grad();
  }
  expect_close(dq[0], dq[1], 1e-12, "grad q");
  EXPECT_FALSE(k.has_grad());
  EXPECT_FALSE(v.has_grad());

  // Only v requires grad: dV = sum over heads of P^T dO, P recomputed from the saved logsumexp.
  const Tensor qc(q);
  const Array va = v.value();
  Array dv[2];
  for (int which = 0; which < 2; ++which) {
    const Tensor vt(va, true);
    const Tensor y = which == 0 ? causal_attention(qc, k, vt, 0.5) : composed(qc, k, vt, 0.5);
    sum(y * Tensor(R)).backward();
    dv[which] = vt.grad();
  }
  expect_close(dv[0], dv[1], 1e-12, "grad v");
}

TEST(CausalAttention, OneTensorAsQueriesKeysAndValues) {
  // Self-attention on one tensor (H == H_kv, n == m): three gradients land in the same tensor.
  Rng rng(9);
  const Array x = randn({2, 36, 2, 4}, rng), R = randn({2, 36, 2, 4}, rng);
  Array grad[2], value[2];
  for (int which = 0; which < 2; ++which) {
    const Tensor xt(x, true);
    const Tensor y = which == 0 ? causal_attention(xt, xt, xt, 0.5) : composed(xt, xt, xt, 0.5);
    sum(y * Tensor(R)).backward();
    value[which] = y.value();
    grad[which] = xt.grad();
  }
  expect_close(value[0], value[1], 1e-12, "value");
  expect_close(grad[0], grad[1], 1e-12, "grad");
}

TEST(CausalAttention, FirstQueryAttendsOnlyToTheFirstKey) {
  // n = m: query 0 sees key 0 alone, so its output is v's row 0 whatever the scores (checked
  // exactly), and the large score differences of a big scale do not overflow.
  Rng rng(4);
  const Tensor q = Tensor::randn({1, 3, 2, 2}, 1.0, rng), k = Tensor::randn({1, 3, 1, 2}, 1.0, rng);
  const Tensor v = Tensor::randn({1, 3, 1, 2}, 1.0, rng);
  const Tensor out = causal_attention(q, k, v, 1e3);
  for (std::size_t h = 0; h < 2; ++h)
    for (std::size_t e = 0; e < 2; ++e) EXPECT_EQ(out.value()(0, 0, h, e), v.value()(0, 0, 0, e));
  for (const Scalar x : out.value()) EXPECT_TRUE(std::isfinite(x));
}

TEST(CausalAttention, EmptyShapes) {
  // n = 0 queries (and m = 0 keys): an empty output; gradients are empty arrays of the inputs'
  // shapes.
  const Tensor q(Array({2, 0, 4, 3}, 0.0), true), k(Array({2, 0, 2, 3}, 0.0), true);
  const Tensor v(Array({2, 0, 2, 3}, 0.0), true);
  const Tensor out = causal_attention(q, k, v, 0.5);
  EXPECT_EQ(out.shape(), (Shape{2, 0, 4, 3}));
  // head_dim 0: output (B, n, H, 0).
  const Tensor q0(Array({1, 2, 2, 0}, 0.0)), k0(Array({1, 3, 1, 0}, 0.0));
  EXPECT_EQ(causal_attention(q0, k0, k0, 0.5).shape(), (Shape{1, 2, 2, 0}));
}

}  // namespace
