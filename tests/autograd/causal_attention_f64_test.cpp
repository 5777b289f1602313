// causal_attention (the fused FlashAttention-style op, autograd/kernels/causal_attention.cpp) in double
// precision: gradient checks of q, k and v against central finite differences, for MHA and GQA
// (n_kv_heads 2 and 1), n = m and n < m (start > 0), one block of 32 query rows, several blocks
// and a partial last block; the first query's output; empty shapes. (Its equality with the
// reference steps it replaces is a row of fast_kernels_f64_test.cpp.)

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

TEST(CausalAttentionGradcheck, QueriesKeysAndValues) {
  const Shape6 shapes[] = {
      {2, 5, 5, 4, 4, 3},    // MHA, n = m, one partial block
      {2, 3, 7, 4, 2, 2},    // GQA n_rep 2, n < m (start 4)
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
