// Each fast kernel of autograd/kernels/ against the reference ops it replaces, written out here
// step by step (transpose, repeat_kv, matmul, masked_fill, softmax), values and gradients in
// double precision. (fused_vs_composed_f64_test.cpp covers silu_mul, masked_softmax and the
// attention products the same way.) And NaN: a row holding a NaN gives NaN in the reference
// softmax and in the fast row softmax, while a fully -inf row still gives zeros.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include <xtensor/xview.hpp>

#include "autograd/kernels/kernels.hpp"
#include "autograd/ops.hpp"

namespace {

using namespace glass;

static_assert(sizeof(Scalar) == sizeof(double), "these comparisons need Scalar = double");
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// Attention steps 4-8 on the reference ops: q (B, n, H, D), k and v (B, m, H_kv, D), the
/// queries at positions m - n .. m - 1 -> (B, n, H, D).
Tensor reference_attention(const Tensor& q, const Tensor& k, const Tensor& v, double scale) {
  const std::size_t n = q.shape()[1], m = k.shape()[1], n_rep = q.shape()[2] / k.shape()[2];
  const Tensor Q = transpose(q, 1, 2);
  const Tensor K = repeat_kv(transpose(k, 1, 2), n_rep);
  const Tensor V = repeat_kv(transpose(v, 1, 2), n_rep);
  const Tensor scores = matmul(Q, transpose(K, -2, -1)) * Scalar(scale);
  const Tensor weights = softmax(masked_fill(scores, causal_mask(n, m, m - n), -kInf));
  return transpose(matmul(weights, V), 1, 2);
}

void expect_close(const Array& a, const Array& b, double tol, const char* what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  for (std::size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a.data()[i], b.data()[i], tol) << what << " at flat index " << i;
}

TEST(Kernels, CausalAttentionEqualsTheReferenceSteps) {
  Rng rng(3);
  // (B, n, m, H, H_kv, D): training (n = m), with cached positions (n < m), GQA and not, and a
  // length past one block of 32 query rows.
  for (const auto& s : std::vector<std::vector<std::size_t>>{
           {2, 5, 5, 4, 2, 3}, {1, 3, 7, 2, 2, 4}, {2, 40, 40, 4, 1, 2}}) {
    const Array q0 = Tensor::randn({s[0], s[1], s[3], s[5]}, 1, rng).value();
    const Array k0 = Tensor::randn({s[0], s[2], s[4], s[5]}, 1, rng).value();
    const Array v0 = Tensor::randn({s[0], s[2], s[4], s[5]}, 1, rng).value();
    const Array R = Tensor::randn({s[0], s[1], s[3], s[5]}, 1, rng).value();
    const double scale = 1 / std::sqrt(double(s[5]));
    auto run = [&](bool fast) {
      Tensor q(q0, true), k(k0, true), v(v0, true);
      const Tensor out = fast ? causal_attention(q, k, v, scale) : reference_attention(q, k, v, scale);
      sum(out * Tensor(R)).backward();
      return std::vector<Array>{out.value(), q.grad(), k.grad(), v.grad()};
    };
    const auto fast = run(true), ref = run(false);
    expect_close(fast[0], ref[0], 1e-12, "value");
    expect_close(fast[1], ref[1], 1e-12, "dq");
    expect_close(fast[2], ref[2], 1e-12, "dk");
    expect_close(fast[3], ref[3], 1e-12, "dv");
  }
}

TEST(Kernels, AttendToCacheEqualsTheReferenceSteps) {
  // One layer's cache (B, capacity, H_kv, D) holding 6 positions; 2 new queries at 4 and 5.
  Rng rng(4);
  const std::size_t B = 2, capacity = 9, H = 4, H_kv = 2, D = 3, start = 4, n = 2;
  const Array storage_k = Tensor::randn({B, capacity, H_kv, D}, 1, rng).value();
  const Array storage_v = Tensor::randn({B, capacity, H_kv, D}, 1, rng).value();
  const Array q = Tensor::randn({B, n, H, D}, 1, rng).value();
  const Array fast = attend_to_cache(storage_k, storage_v, q, 0.5, start);
  const Tensor k(Array(xt::view(storage_k, xt::all(), xt::range(0, start + n)))),
      v(Array(xt::view(storage_v, xt::all(), xt::range(0, start + n))));
  const Array ref = reference_attention(Tensor(q), k, v, 0.5).value();
  expect_close(fast, ref, 1e-12, "value");
}

TEST(Kernels, FastRowSoftmaxEqualsTheReferenceSoftmax) {
  Rng rng(5);
  Array x = Tensor::randn({3, 4, 37}, 3, rng).value();  // 37: whole SIMD batches and a tail
  x(0, 1, 5) = 800;                                      // overflows exp without the max shift
  expect_close(softmax_rows(x), softmax(Tensor(x)).value(), 1e-15, "value");
}

TEST(Kernels, ARowWithANaNGivesNaNAndAFullyMaskedRowGivesZeros) {
  // Rows: [NaN, 1, 2], [NaN, NaN, NaN], [NaN, -inf, -inf], [-inf, -inf, -inf], [1, 2, 3].
  const Array x = {{kNaN, 1, 2}, {kNaN, kNaN, kNaN}, {kNaN, -kInf, -kInf}, {-kInf, -kInf, -kInf}, {1, 2, 3}};
  Mask none = Mask::from_shape({5, 3});
  none.fill(false);
  const Tensor leaf(x, true);
  const Tensor reference = softmax(leaf);
  sum(reference).backward();
  for (const Array& y : {reference.value(), softmax_rows(x), masked_softmax(Tensor(x), none).value()}) {
    for (std::size_t r = 0; r < 3; ++r)
      for (std::size_t j = 0; j < 3; ++j) EXPECT_TRUE(std::isnan(y(r, j))) << "row " << r;
    for (std::size_t j = 0; j < 3; ++j) EXPECT_EQ(y(3, j), 0.0);  // fully -inf: zeros
    EXPECT_NEAR(y(4, 0) + y(4, 1) + y(4, 2), 1.0, 1e-15);
  }
  for (std::size_t j = 0; j < 3; ++j) EXPECT_EQ(leaf.grad()(3, j), 0.0);  // and zero gradient
}

}  // namespace
