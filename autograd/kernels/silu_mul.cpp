// Fast kernel: silu_mul(gate, up) = silu(gate) * up, vectorised with xsimd.
// Replaces the reference ops silu and mul (ops_elementwise.cpp); tests/autograd/
// tests/autograd/fast_kernels_f64_test.cpp checks values and gradients against them.

#include <cmath>

#include <xsimd/xsimd.hpp>

#include "autograd/kernels/kernels.hpp"
#include "autograd/kernels/grad_buffers.hpp"
#include "autograd/ops_util.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

// ---- fused SwiGLU gate -------------------------------------------------------------------------

// z = x * s(x) * u with s = sigmoid, x = gate, u = up (SwiGLU's gate, Shazeer 2020):
//   dz/dx = u (s + x s (1 - s))    dz/du = x s
// One pass instead of the three of silu(x) * u (e^-x, x * s, * u), and no intermediate array:
// s is recomputed by the backward pass, which reads g, x, u once and writes both gradients.
// Each SIMD batch evaluates the sigmoid, the products and the store in one go; the tail (fewer
// elements than a batch) runs the same formulas one element at a time.
Tensor silu_mul(const Tensor& gate, const Tensor& up) {
  if (gate.shape() != up.shape()) {
    throw std::invalid_argument("silu_mul: shapes " + shape_str(gate.shape()) + " and " +
                                shape_str(up.shape()) + " differ");
  }
  using Batch = xsimd::batch<Scalar>;
  const std::size_t n = gate.size();
  Array out = detail::empty_array(gate.shape());
  {
    const Scalar* x = gate.value().data();
    const Scalar* u = up.value().data();
    Scalar* z = out.data();
    const Batch one(Scalar(1));
    std::size_t i = 0;
    for (; i + Batch::size <= n; i += Batch::size) {
      const Batch xb = Batch::load_unaligned(x + i);
      const Batch s = one / (one + xsimd::exp(-xb));
      (xb * s * Batch::load_unaligned(u + i)).store_unaligned(z + i);
    }
    for (; i < n; ++i) {
      const Scalar s = 1 / (1 + std::exp(-x[i]));
      z[i] = x[i] * s * u[i];
    }
  }
  const bool track = needs_grad({&gate, &up});
  Tensor result = detail::make_output(std::move(out), track);
  if (track) {
    tape().record("silu_mul", result, [gate, up](Array& grad) {
      // An input that does not require grad gets no array and no arithmetic. d_gate takes over
      // the output gradient's buffer when the tape frees it (each element of g is read before
      // its place is written); otherwise it is a fresh array.
      const bool need_gate = gate.requires_grad(), need_up = up.requires_grad();
      const bool in_place = need_gate && grad_disposable();
      Array d_gate = in_place    ? detail::take_grad(grad)
                     : need_gate ? detail::empty_array(gate.shape())
                                 : Array();
      Array d_up = need_up ? detail::empty_array(up.shape()) : Array();
      const Scalar* g = in_place ? d_gate.data() : grad.data();
      const Scalar* x = gate.value().data();
      const Scalar* u = up.value().data();
      const std::size_t n = gate.size();
      const Batch one(Scalar(1));
      std::size_t i = 0;
      for (; i + Batch::size <= n; i += Batch::size) {
        const Batch gb = Batch::load_unaligned(g + i), xb = Batch::load_unaligned(x + i);
        const Batch s = one / (one + xsimd::exp(-xb));
        if (need_gate)
          (gb * Batch::load_unaligned(u + i) * (s + xb * s * (one - s)))
              .store_unaligned(d_gate.data() + i);
        if (need_up) (gb * (xb * s)).store_unaligned(d_up.data() + i);
      }
      for (; i < n; ++i) {
        const Scalar gi = g[i],
                     s = 1 / (1 + std::exp(-x[i]));  // g[i] read before d_gate[i] is written
        if (need_gate) d_gate.data()[i] = gi * u[i] * (s + x[i] * s * (1 - s));
        if (need_up) d_up.data()[i] = gi * (x[i] * s);
      }
      if (need_gate) accumulate_grad(gate, std::move(d_gate));
      if (need_up) accumulate_grad(up, std::move(d_up));
    });
  }
  return result;
}

}  // namespace GLASS_PRECISION
}  // namespace glass
