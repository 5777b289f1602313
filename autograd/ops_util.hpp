#pragma once
// Internal helpers shared by the ops_*.cpp files (not part of the public API).

#include <cmath>
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

/// The op's output tensor; it requires grad exactly when the op is recorded.
inline Tensor make_output(Array value, bool track) { return Tensor(std::move(value), track); }

}  // namespace detail
}  // namespace GLASS_PRECISION
}  // namespace glass
