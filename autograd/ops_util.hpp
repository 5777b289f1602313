#pragma once
// Internal helpers shared by the ops_*.cpp files and the kernels (not part of the public API):
// shapes, axes, masks. Nothing here is about speed; the kernels' own helpers are in
// autograd/kernels/ (simd.hpp, grad_buffers.hpp).

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

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

/// max of n contiguous values (-inf for n = 0). std::max, so a NaN compares false and is
/// skipped here: the callers' formulas propagate it.
inline Scalar row_max(const Scalar* x, std::size_t n) {
  Scalar m = -std::numeric_limits<Scalar>::infinity();
  for (std::size_t i = 0; i < n; ++i) m = std::max(m, x[i]);
  return m;
}

/// Checks that a mask of shape shape_of(mask) broadcasts to sa without stretching sa (NumPy
/// rules: extents aligned at the right, each equal or 1 in the mask). Throws
/// std::invalid_argument naming `op` and both shapes otherwise.
inline void check_mask_broadcasts(const Shape& sa, const Mask& mask, const char* op) {
  const Shape sm = shape_of(mask);
  bool ok = sm.size() <= sa.size();
  for (std::size_t i = 0; ok && i < sm.size(); ++i) {
    const std::size_t em = sm[sm.size() - 1 - i], ea = sa[sa.size() - 1 - i];
    ok = em == ea || em == 1;
  }
  if (!ok) {
    throw std::invalid_argument(std::string(op) + ": mask of shape " + shape_str(sm) +
                                " does not broadcast to the input shape " + shape_str(sa));
  }
}

/// The op's output tensor; it requires grad exactly when the op is recorded.
inline Tensor make_output(Array value, bool track) { return Tensor(std::move(value), track); }

}  // namespace detail
}  // namespace GLASS_PRECISION
}  // namespace glass
