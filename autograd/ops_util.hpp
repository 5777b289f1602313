#pragma once
// Internal helpers shared by the ops_*.cpp files (not part of the public API).

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include <xsimd/xsimd.hpp>

#include "autograd/parallel.hpp"
#include "autograd/tape.hpp"
#include "autograd/tensor.hpp"

namespace glass {
inline namespace GLASS_PRECISION {
namespace detail {

/// Product of the extents (1 for shape ()).
inline std::size_t numel(const Shape& shape) {
  std::size_t n = 1;
  for (auto s : shape) n *= s;
  return n;
}

/// Maps a possibly negative axis to 0..ndim-1; throws std::invalid_argument naming `op`.
inline std::size_t normalize_axis(int axis, std::size_t ndim, const char* op, const Shape& shape) {
  const int n = static_cast<int>(ndim);
  if (axis < -n || axis >= n) {
    throw std::invalid_argument(std::string(op) + ": axis " + std::to_string(axis) +
                                " is out of range for a tensor of shape " + shape_str(shape));
  }
  return static_cast<std::size_t>(axis < 0 ? axis + n : axis);
}

/// An uninitialized array of the given shape (every element is written by the caller).
inline Array empty_array(const Shape& shape) { return Array::from_shape(shape); }

/// out[i] = e^in[i] for i < n (in == out is allowed). The hot exponentials (softmax rows,
/// SiLU) go through here: xsimd evaluates a whole SIMD register of them at once (16 floats with
/// AVX-512), several times faster than calling std::exp per element; the tail uses std::exp.
inline void exp_n(const Scalar* in, Scalar* out, std::size_t n) {
  using Batch = xsimd::batch<Scalar>;
  constexpr std::size_t width = Batch::size;
  std::size_t i = 0;
  for (; i + width <= n; i += width) xsimd::exp(Batch::load_unaligned(in + i)).store_unaligned(out + i);
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
  for (; i + Batch::size <= n; i += Batch::size) partial = xsimd::max(partial, Batch::load_unaligned(x + i));
  alignas(64) Scalar lanes[Batch::size];
  partial.store_aligned(lanes);
  Scalar m = kLowest;
  for (Scalar lane : lanes) m = std::max(m, lane);
  for (; i < n; ++i) m = std::max(m, x[i]);
  return m;
}

/// parallel_for over the rows of a row kernel (rows of d elements), each thread getting at least
/// ~16k elements: smaller tensors (one generated token) stay on the calling thread. Rows are
/// independent, so the result does not depend on the thread count.
template <class F>
void parallel_rows(std::size_t rows, std::size_t d, F&& body) {
  parallel_for(rows, std::max<std::size_t>(1, std::size_t(16384) / std::max<std::size_t>(d, 1)),
               body);
}

/// Elements per block of parallel_elements: a multiple of every SIMD width.
constexpr std::size_t kElementBlock = 4096;

/// parallel_for over n elements, body(begin, end) getting whole blocks of kElementBlock elements
/// (only the last range ends at n). A kernel with a SIMD main loop and a scalar tail therefore
/// sends every element through the same path, whatever the thread count: the result is
/// identical to one loop over [0, n). Parallel from 32k elements up.
template <class F>
void parallel_elements(std::size_t n, F&& body) {
  const std::size_t blocks = (n + kElementBlock - 1) / kElementBlock;
  parallel_for(blocks, 4, [&](std::size_t b0, std::size_t b1) {
    body(b0 * kElementBlock, std::min(b1 * kElementBlock, n));
  });
}

/// The op's output tensor; it requires grad exactly when the op is recorded.
inline Tensor make_output(Array value, bool track) { return Tensor(std::move(value), track); }

}  // namespace detail
}  // namespace GLASS_PRECISION
}  // namespace glass
