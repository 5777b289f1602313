// fast_rms_norm: the reference rms_norm (autograd/ops_nn.cpp) as plain row loops that vectorize,
// with dx added straight into x's existing gradient (detail::GradTarget): x is the residual
// stream, whose add has already sent it a gradient when this backward runs, so neither a
// temporary nor a separate `+=` pass is needed.

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/kernels/grad_buffers.hpp"
#include "autograd/kernels/kernels.hpp"
#include "autograd/ops_util.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

namespace {

/// x . y over n values. Eight independent partial sums (the compiler keeps them in one SIMD
/// register without -ffast-math), combined at the end.
Scalar dot_n(const Scalar* x, const Scalar* y, std::size_t n) {
  Scalar partial[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (std::size_t j = 0; j < 8; ++j) partial[j] += x[i + j] * y[i + j];
  Scalar total = 0;
  for (Scalar p : partial) total += p;
  for (; i < n; ++i) total += x[i] * y[i];
  return total;
}

}  // namespace

// y_j = x_j * r * gain_j with r = 1 / sqrt(mean_k x_k^2 + eps), row by row.
// Backward, with xh = x * r and dxh = g * gain:
//   dgain_j = sum over rows of g_j xh_j
//   dx_j    = r (dxh_j - xh_j * mean_k(dxh_k xh_k))
Tensor fast_rms_norm(const Tensor& x, const Tensor& gain, Scalar eps) {
  const Shape sx = x.shape(), sg = gain.shape();
  if (sx.empty() || sg.size() != 1 || sg[0] != sx.back()) {
    throw std::invalid_argument("rms_norm: x must be (..., d) and gain (d), got x " +
                                shape_str(sx) + " and gain " + shape_str(sg));
  }
  const std::size_t d = sx.back(), rows = d == 0 ? 0 : detail::numel(sx) / d;
  std::vector<Scalar> inv_rms(rows);
  Array out = detail::empty_array(sx);
  const Scalar* w = gain.value().data();
  for (std::size_t r = 0; r < rows; ++r) {
    const Scalar* xr = x.value().data() + r * d;
    const Scalar ss = dot_n(xr, xr, d);  // sum of squares
    const Scalar rr = 1 / std::sqrt(ss / static_cast<Scalar>(d) + eps);
    inv_rms[r] = rr;
    Scalar* y = out.data() + r * d;
    for (std::size_t j = 0; j < d; ++j) y[j] = xr[j] * rr * w[j];
  }
  const bool track = needs_grad({&x, &gain});
  Tensor result = detail::make_output(std::move(out), track);
  if (track) {
    tape().record(
        "rms_norm", result, [x, gain, inv_rms = std::move(inv_rms), rows, d](const Array& grad) {
          // dx is added straight into x's gradient when there is one already (x is
          // the residual stream, whose add ran first in the backward pass): no
          // temporary array and no separate `+=` pass.
          detail::GradTarget gx(x);
          const bool add_into = gx.beta == 1;
          Scalar* dx_all = gx.data;
          Array gg(gain.shape(), Scalar(0));
          const Scalar* w = gain.value().data();
          std::vector<Scalar> dxh(d);  // d(loss)/d(x_hat) of one row: g * gain
          for (std::size_t r = 0; r < rows; ++r) {
            const Scalar* xr = x.value().data() + r * d;
            const Scalar* g = grad.data() + r * d;
            const Scalar rr = inv_rms[r];
            // Plain loops without a running sum, so that they vectorize; the one
            // reduction goes through the SIMD dot product.
            for (std::size_t j = 0; j < d; ++j) {
              dxh[j] = g[j] * w[j];
              gg.data()[j] += g[j] * xr[j] * rr;  // d/d(gain_j): g_j * x_hat_j
            }
            // (1/d) sum_k dxh_k x_hat_k, with x_hat = x * rr
            const Scalar mean_dot = rr * dot_n(dxh.data(), xr, d) / static_cast<Scalar>(d);
            Scalar* dx = dx_all + r * d;
            if (add_into) {
              for (std::size_t j = 0; j < d; ++j) dx[j] += rr * (dxh[j] - xr[j] * rr * mean_dot);
            } else {
              for (std::size_t j = 0; j < d; ++j) dx[j] = rr * (dxh[j] - xr[j] * rr * mean_dot);
            }
          }
          gx.finish();
          accumulate_grad(gain, std::move(gg));
        });
  }
  return result;
}

}  // namespace GLASS_PRECISION
}  // namespace glass
