#pragma once
// SIMD helpers of the fast kernels (xsimd): exp, sum, dot and max of a contiguous row, and the
// fast row softmax. Internal to autograd/kernels/ (not a public header).
//
// Replaces, in the kernels only: the plain loops of the reference ops (std::exp per element,
// left-to-right sums). Results differ from those by rounding only; tests/autograd/
// fast_kernels_f64_test.cpp compares them.

#include <algorithm>
#include <cmath>
#include <limits>

#include <xsimd/xsimd.hpp>

#include "autograd/tensor.hpp"

namespace glass {
inline namespace GLASS_PRECISION {
namespace simd {

/// out[i] = e^in[i] for i < n (in == out is allowed). The hot exponentials (softmax rows,
/// SiLU) go through here: xsimd evaluates a whole SIMD register of them at once (16 floats with
/// AVX-512), several times faster than calling std::exp per element; the tail uses std::exp.
inline void exp_n(const Scalar* in, Scalar* out, std::size_t n) {
  using Batch = xsimd::batch<Scalar>;
  constexpr std::size_t width = Batch::size;
  std::size_t i = 0;
  for (; i + width <= n; i += width)
    xsimd::exp(Batch::load_unaligned(in + i)).store_unaligned(out + i);
  for (; i < n; ++i) out[i] = std::exp(in[i]);
}

/// Row reductions for the row-wise kernels (softmax, RMSNorm): sum, dot product and max of
/// n contiguous values. They keep one SIMD register of partial results and combine its lanes at
/// the end (a plain `total += x[j]` loop cannot be vectorized without -ffast-math, because it
/// fixes the order of the additions); the result differs from a left-to-right sum by rounding only.
inline Scalar sum_n(const Scalar* x, std::size_t n) {
  using Batch = xsimd::batch<Scalar>;
  Batch partial(Scalar(0));
  std::size_t i = 0;
  for (; i + Batch::size <= n; i += Batch::size) partial += Batch::load_unaligned(x + i);
  Scalar total = xsimd::hadd(partial);
  for (; i < n; ++i) total += x[i];
  return total;
}

inline Scalar dot_n(const Scalar* x, const Scalar* y, std::size_t n) {
  using Batch = xsimd::batch<Scalar>;
  Batch partial(Scalar(0));
  std::size_t i = 0;
  for (; i + Batch::size <= n; i += Batch::size)
    partial = xsimd::fma(Batch::load_unaligned(x + i), Batch::load_unaligned(y + i), partial);
  Scalar total = xsimd::hadd(partial);
  for (; i < n; ++i) total += x[i] * y[i];
  return total;
}

/// max of x[0..n); -infinity when n == 0.
inline Scalar max_n(const Scalar* x, std::size_t n) {
  using Batch = xsimd::batch<Scalar>;
  constexpr Scalar kLowest = -std::numeric_limits<Scalar>::infinity();
  Batch partial(kLowest);
  std::size_t i = 0;
  for (; i + Batch::size <= n; i += Batch::size)
    partial = xsimd::max(partial, Batch::load_unaligned(x + i));
  alignas(64) Scalar lanes[Batch::size];
  partial.store_aligned(lanes);
  Scalar m = kLowest;
  for (Scalar lane : lanes) m = std::max(m, lane);
  for (; i < n; ++i) m = std::max(m, x[i]);
  return m;
}

/// y = softmax(x) of one row of n values: e^(x - max) / sum, with the vectorized exp and sum.
/// A row of all -inf (fully masked) gives zeros; a row with a NaN gives NaN. y == x is allowed. The one fast row
/// softmax: generation's attention over the KV cache, the sampler and
/// the inspector use it. Replaces the reference softmax (ops_nn.cpp) row by row.
inline void softmax_row(const Scalar* x, Scalar* y, std::size_t n) {
  const Scalar m = max_n(x, n);
  if (m == -std::numeric_limits<Scalar>::infinity()) {
    // Every entry is -inf (fully masked: zeros) or NaN (max skipped it: the row is NaN, as in
    // PyTorch). A NaN next to a finite entry needs no check: e^(NaN - m) spreads it.
    const bool nan = std::any_of(x, x + n, [](Scalar v) { return std::isnan(v); });
    std::fill(y, y + n, nan ? std::numeric_limits<Scalar>::quiet_NaN() : Scalar(0));
    return;
  }
  for (std::size_t j = 0; j < n; ++j) y[j] = x[j] - m;
  exp_n(y, y, n);  // e^(x - max); masked entries (-inf) give 0
  const Scalar inv = 1 / sum_n(y, n);
  for (std::size_t j = 0; j < n; ++j) y[j] *= inv;
}

}  // namespace simd
}  // namespace GLASS_PRECISION
}  // namespace glass
