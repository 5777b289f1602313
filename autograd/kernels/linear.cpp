// fast_linear: the reference linear (autograd/ops_linear.cpp) with its gradients written by the
// gemm itself into the inputs' existing gradients (beta = 1, detail::GradTarget) when they have
// one: a weight after zero_grad, the normed x read by wq, wk and wv. Saves a temporary and the
// `+=` pass of accumulate_grad per product. The forward pass is the reference one, call for call.

#include <algorithm>
#include <stdexcept>
#include <string>

#include "autograd/blas.hpp"
#include "autograd/kernels/grad_buffers.hpp"
#include "autograd/kernels/kernels.hpp"
#include "autograd/ops_util.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

Tensor fast_linear(const Tensor& x, const Tensor& weight) {
  using blas::as_int;
  const Shape sx = x.shape(), sw = weight.shape();
  if (sw.size() != 2) {
    throw std::invalid_argument("linear: weight must be (out_features, in_features), got " +
                                shape_str(sw) + " for input " + shape_str(sx));
  }
  if (sx.empty() || sx.back() != sw[1]) {  // the reference linear's messages
    throw std::invalid_argument(std::string("linear: ") +
                                (sx.empty() ? "too few axes: " : "inner dimensions differ: ") +
                                shape_str(sx) + " @ T" + shape_str(sw));
  }
  // Every leading axis of x is a row: Y (rows, m) = X (rows, k) @ W^T, W (m, k).
  const std::size_t k = sx.back(), m = sw[0];
  const std::size_t rows = detail::numel(sx) / std::max<std::size_t>(k, 1);
  Shape so = sx;
  so.back() = m;
  Array out = k > 0 ? detail::empty_array(so) : Array(so, Scalar(0));
  const Scalar* w = weight.value().data();
  if (k > 0 && rows > 0 && m > 0) {
    if (rows == 1)  // one row (generating one token): y = W x
      blas::gemv(false, as_int(m), as_int(k), Scalar(1), w, as_int(k), x.value().data(), Scalar(0),
                 out.data());
    else
      blas::gemm(false, true, as_int(rows), as_int(m), as_int(k), Scalar(1), x.value().data(),
                 as_int(k), w, as_int(k), Scalar(0), out.data(), as_int(m));
  }
  const bool track = needs_grad({&x, &weight});
  Tensor result = detail::make_output(std::move(out), track);
  if (track) {
    tape().record("linear", result, [x, weight, rows, k, m](const Array& grad) {
      if (k == 0 || rows == 0 || m == 0) {
        accumulate_grad(x, Array(x.shape(), Scalar(0)));
        accumulate_grad(weight, Array(weight.shape(), Scalar(0)));
        return;
      }
      const Scalar* g = grad.data();
      if (x.requires_grad()) {  // dX (rows, k) = dY (rows, m) @ W (m, k)
        detail::GradTarget gx(x);
        blas::gemm(false, false, as_int(rows), as_int(k), as_int(m), Scalar(1), g, as_int(m),
                   weight.value().data(), as_int(k), gx.beta, gx.data, as_int(k));
        gx.finish();
      }
      if (weight.requires_grad()) {  // dW (m, k) = dY^T (m, rows) @ X (rows, k)
        detail::GradTarget gw(weight);
        blas::gemm(true, false, as_int(m), as_int(k), as_int(rows), Scalar(1), g, as_int(m),
                   x.value().data(), as_int(k), gw.beta, gw.data, as_int(k));
        gw.finish();
      }
    });
  }
  return result;
}

}  // namespace GLASS_PRECISION
}  // namespace glass
