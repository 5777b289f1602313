// fast_rope: the reference rope (autograd/ops_nn.cpp) with its cos and sin read from a
// per-thread table instead of computed at every call (a pow and a sincos per pair and position,
// at every layer and every generated token), and its backward turning the output's gradient
// back in place when the tape frees that buffer next (detail::take_grad).
//
// For position p = start + t and pair i = (x[2i], x[2i+1]), angle = p * base^(-2i/D):
//   y[2i]   = x[2i] cos - x[2i+1] sin
//   y[2i+1] = x[2i] sin + x[2i+1] cos
// A rotation is orthogonal, so the backward pass rotates the gradient by -angle.

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/kernels/grad_buffers.hpp"
#include "autograd/kernels/kernels.hpp"
#include "autograd/ops_util.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

namespace {

/// cos and sin of every angle p * base^(-2i/D) for positions p = first .. first+positions-1 and
/// pairs i = 0 .. D/2-1, row p - first at [(p - first) * D/2]. Computed in double for accuracy
/// at large positions.
struct RopeTable {
  double base = 0;
  std::size_t head_dim = 0, first = 0, positions = 0;
  std::vector<Scalar> cos, sin;
};

std::shared_ptr<RopeTable> make_rope_table(double base, std::size_t head_dim, std::size_t first,
                                           std::size_t positions) {
  auto table = std::make_shared<RopeTable>();
  table->base = base;
  table->head_dim = head_dim;
  table->first = first;
  table->positions = positions;
  const std::size_t half = head_dim / 2;
  std::vector<double> theta(half);  // pair i turns by base^(-2i/D) per position
  for (std::size_t i = 0; i < half; ++i)
    theta[i] = std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(head_dim));
  table->cos.resize(positions * half);
  table->sin.resize(positions * half);
  for (std::size_t r = 0; r < positions; ++r) {
    for (std::size_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(first + r) * theta[i];
      table->cos[r * half + i] = static_cast<Scalar>(std::cos(angle));
      table->sin[r * half + i] = static_cast<Scalar>(std::sin(angle));
    }
  }
  return table;
}

/// A table covering positions start .. start+count-1 for (base, head_dim). The usual case,
/// positions below kRopeCached, shares one table per thread that starts at position 0 and
/// doubles when a later position is asked for, so a training step or a generated token does
/// not recompute a pow and a sincos per pair. Positions beyond that get a table of just their
/// own rows (what rope computed before the cache existed). A replaced table is a new object:
/// backward closures keep the one they were recorded with.
std::shared_ptr<const RopeTable> rope_table(Scalar base, std::size_t head_dim, std::size_t start,
                                            std::size_t count) {
  constexpr std::size_t kRopeCached = std::size_t(1) << 16;  // 64k positions
  const std::size_t end = start + count;
  if (end > kRopeCached) return make_rope_table(static_cast<double>(base), head_dim, start, count);
  thread_local std::shared_ptr<const RopeTable> cached;
  if (cached && cached->base == static_cast<double>(base) && cached->head_dim == head_dim &&
      cached->positions >= end)
    return cached;
  std::size_t positions = 256;  // the default context_length; doubled as needed
  if (cached && cached->base == static_cast<double>(base) && cached->head_dim == head_dim)
    positions = std::max(positions, 2 * cached->positions);
  while (positions < end) positions *= 2;
  cached =
      make_rope_table(static_cast<double>(base), head_dim, 0, std::min(positions, kRopeCached));
  return cached;
}

}  // namespace

Tensor fast_rope(const Tensor& x, std::size_t start, Scalar base) {
  const Shape s = x.shape();
  if (s.size() != 4 || s[3] % 2 != 0) {
    throw std::invalid_argument("rope: x must be (B, T, H, D) with D even, got " + shape_str(s));
  }
  const std::size_t B = s[0], T = s[1], H = s[2], D = s[3], half = D / 2;
  // cos/sin of positions start .. start+T-1: rows (T, D/2) of the shared table.
  const std::shared_ptr<const RopeTable> table = rope_table(base, D, start, T);
  const Scalar* cos_t = table->cos.data() + (start - table->first) * half;
  const Scalar* sin_t = table->sin.data() + (start - table->first) * half;
  // Rotates every pair by the table's angle (sign = +1) or its negative (sign = -1).
  // The closure owns a reference to the table, so the backward pass can still read it.
  auto rotate = [table, cos_t, sin_t, B, T, H, D, half](const Scalar* in, Scalar* out,
                                                        Scalar sign) {
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t t = 0; t < T; ++t)
        for (std::size_t h = 0; h < H; ++h) {
          const std::size_t base_index = ((b * T + t) * H + h) * D;
          for (std::size_t i = 0; i < half; ++i) {
            const Scalar c = cos_t[t * half + i], sn = sign * sin_t[t * half + i];
            const Scalar x0 = in[base_index + 2 * i], x1 = in[base_index + 2 * i + 1];
            out[base_index + 2 * i] = x0 * c - x1 * sn;
            out[base_index + 2 * i + 1] = x0 * sn + x1 * c;
          }
        }
  };
  Array out = detail::empty_array(s);
  rotate(x.value().data(), out.data(), Scalar(1));
  const bool track = needs_grad({&x});
  Tensor result = detail::make_output(std::move(out), track);
  if (track) {
    tape().record("rope", result, [x, rotate](Array& grad) {
      Array gx = detail::take_grad(grad);
      rotate(gx.data(), gx.data(), Scalar(-1));  // in place: each pair is read, then written
      accumulate_grad(x, std::move(gx));
    });
  }
  return result;
}

}  // namespace GLASS_PRECISION
}  // namespace glass
