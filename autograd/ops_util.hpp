#pragma once
// Internal helpers shared by the ops_*.cpp files (not part of the public API).

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include <xsimd/xsimd.hpp>

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

/// y = softmax(x) of one row of n values: e^(x - max) / sum, with the vectorized exp and sum.
/// A row of all -inf (fully masked) gives zeros, never NaN. y == x is allowed. Used by the
/// softmax op and by generation's attention over the KV cache.
inline void softmax_row(const Scalar* x, Scalar* y, std::size_t n) {
  const Scalar m = max_n(x, n);
  if (m == -std::numeric_limits<Scalar>::infinity()) {
    std::fill(y, y + n, Scalar(0));
    return;
  }
  for (std::size_t j = 0; j < n; ++j) y[j] = x[j] - m;
  exp_n(y, y, n);  // e^(x - max); masked entries (-inf) give 0
  const Scalar inv = 1 / sum_n(y, n);
  for (std::size_t j = 0; j < n; ++j) y[j] *= inv;
}

/// Where an op's backward writes the gradient of input t: straight into t's existing grad
/// (beta = 1: add to it, as a gemm with beta = 1 does) or, for the first contribution, into a
/// fresh array (beta = 0: write it) that finish() hands to accumulate_grad. Saves a temporary
/// and the `+=` pass of accumulate_grad whenever t already has a gradient (a weight after
/// zero_grad, an input used twice, the residual stream). With `zeroed` the fresh array starts
/// as zeros and beta is 1 either way (for a backward that adds several pieces and may leave some
/// places untouched). A tensor that does not require grad always gets a fresh array, which
/// finish() then drops.
struct GradTarget {
  explicit GradTarget(const Tensor& t, bool zeroed = false) : tensor(t) {
    if (tensor.requires_grad() && tensor.has_grad()) {
      data = tensor.grad().data();
      beta = 1;
    } else {
      fresh = zeroed ? Array(tensor.shape(), Scalar(0)) : empty_array(tensor.shape());
      data = fresh.data();
      beta = zeroed ? 1 : 0;
      accumulate_fresh = true;
    }
  }
  void finish() {
    if (accumulate_fresh) accumulate_grad(tensor, std::move(fresh));
  }
  Tensor tensor;
  Array fresh;
  Scalar* data;
  Scalar beta;
  bool accumulate_fresh = false;
};

/// For a backward closure that takes its argument as `Array& grad`: the output's gradient as an
/// array the closure may keep (hand to accumulate_grad, or overwrite in place with an input's
/// gradient of the same size). It is the buffer itself when the tape frees it right after the
/// closure (Tape::grad_disposable, under Tensor::backward), otherwise a copy, so an
/// intermediate gradient the caller can still read is never changed. Call it at most once.
inline Array take_grad(Array& grad) {
  if (tape().grad_disposable()) return std::move(grad);
  return grad;
}

/// The op's output tensor; it requires grad exactly when the op is recorded.
inline Tensor make_output(Array value, bool track) { return Tensor(std::move(value), track); }

}  // namespace detail
}  // namespace GLASS_PRECISION
}  // namespace glass
