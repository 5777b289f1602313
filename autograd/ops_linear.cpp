// Matrix products through one cblas_sgemm / cblas_dgemm per product (blas.hpp): matmul_nt
// (a @ b^T) and linear (x @ W^T, every layer of the model on both paths). matmul itself is in
// ops_matmul.cpp (xtensor-blas; its BLAS declarations cannot share a file with cblas.h).
//
// The model's fast path runs linear as fast_linear (autograd/kernels/linear.cpp), which writes
// the gradients straight into existing ones and takes one row (generating one token) as a
// matrix-vector product; here each gradient is a fresh array and every product one gemm.
//
// For Y = A @ B the backward pass is  dA = dY @ B^T  and  dB = A^T @ dY;
// for Y = A @ B^T it is               dA = dY @ B    and  dB = dY^T @ A.
// When B is one 2-D matrix shared by all the rows of A (linear layers, or a batched A times a
// 2-D B), all leading axes of A are folded into one tall matrix so that the whole product is a
// single gemm, and dB sums the contributions of every row in that same gemm.

#include "autograd/blas.hpp"
#include "autograd/ops.hpp"
#include "autograd/ops_util.hpp"

#include <algorithm>

namespace glass {
inline namespace GLASS_PRECISION {

namespace {

using blas::as_int;

/// The common core. a (..., n, k); b is either 2-D, shared by all rows of a, or has a's
/// leading (batch) axes. trans_b = false: b (..., k, m); trans_b = true: b (..., m, k).
/// `min_a_dim` is 2 for matmul and 1 for linear. The product is scaled by `alpha` (the gemm's
/// own factor, so a scale such as 1/sqrt(d_k) costs no extra pass); its gradients too.
Tensor product(const char* name, const Tensor& a, const Tensor& b, bool trans_b,
               std::size_t min_a_dim, Scalar alpha = 1) {
  const Shape sa = a.shape(), sb = b.shape();
  auto fail = [&](const std::string& why) {
    return std::invalid_argument(std::string(name) + ": " + why + ": " + shape_str(sa) +
                                 (trans_b ? " @ T" : " @ ") + shape_str(sb));
  };
  if (sa.size() < min_a_dim || sb.size() < 2) throw fail("too few axes");
  const bool shared_b = sb.size() == 2;
  if (!shared_b) {
    if (sa.size() != sb.size() || !std::equal(sa.begin(), sa.end() - 2, sb.begin()))
      throw fail("batch (leading) dimensions differ");
  }
  const std::size_t k = sa.back();
  const std::size_t kb = trans_b ? sb[sb.size() - 1] : sb[sb.size() - 2];
  const std::size_t m = trans_b ? sb[sb.size() - 2] : sb[sb.size() - 1];
  if (k != kb) throw fail("inner dimensions differ");

  // Shared b: every leading axis of a is a row. Batched: `batch` products of (n, k) @ (k, m).
  const std::size_t rows_total = detail::numel(sa) / std::max<std::size_t>(k, 1);
  const std::size_t batch = shared_b ? 1 : detail::numel(Shape(sa.begin(), sa.end() - 2));
  const std::size_t n = rows_total / std::max<std::size_t>(batch, 1);
  Shape so = sa;
  so.back() = m;
  // Every element is written by the gemm (beta = 0); only an empty inner dimension (k = 0)
  // leaves the product as zeros.
  Array out = k > 0 ? detail::empty_array(so) : Array(so, Scalar(0));
  const std::size_t a_step = n * k, b_step = shared_b ? 0 : k * m, y_step = n * m;
  // ld = row length as stored: b is (k, m) normally, (m, k) when transposed.
  const int ldb = as_int(trans_b ? k : m);
  if (k > 0 && n > 0 && m > 0) {
    for (std::size_t i = 0; i < batch; ++i) {
      const Scalar* ai = a.value().data() + i * a_step;
      const Scalar* bi = b.value().data() + i * b_step;
      blas::gemm(false, trans_b, as_int(n), as_int(m), as_int(k), alpha, ai, as_int(k), bi, ldb,
                 Scalar(0), out.data() + i * y_step, as_int(m));
    }
  }
  const bool track = needs_grad({&a, &b});
  Tensor result = detail::make_output(std::move(out), track);
  if (track) {
    tape().record(name, result, [=](const Array& grad) {
      if (k == 0 || n == 0 || m == 0) {
        accumulate_grad(a, Array(sa, Scalar(0)));
        accumulate_grad(b, Array(sb, Scalar(0)));
        return;
      }
      const Scalar* g = grad.data();
      if (a.requires_grad()) {
        Array ga = detail::empty_array(sa);
        for (std::size_t i = 0; i < batch; ++i) {
          // dA (n, k) = alpha dY (n, m) @ op(B)^T
          blas::gemm(false, !trans_b, as_int(n), as_int(k), as_int(m), alpha, g + i * y_step,
                     as_int(m), b.value().data() + i * b_step, ldb, Scalar(0),
                     ga.data() + i * a_step, as_int(k));
        }
        accumulate_grad(a, std::move(ga));
      }
      if (b.requires_grad()) {
        Array gb = detail::empty_array(sb);
        for (std::size_t i = 0; i < batch; ++i) {
          const Scalar* ai = a.value().data() + i * a_step;
          if (!trans_b) {  // dB (k, m) = alpha A^T (k, n) @ dY (n, m)
            blas::gemm(true, false, as_int(k), as_int(m), as_int(n), alpha, ai, as_int(k),
                       g + i * y_step, as_int(m), Scalar(0), gb.data() + i * b_step, as_int(m));
          } else {  // dB (m, k) = alpha dY^T (m, n) @ A (n, k)
            blas::gemm(true, false, as_int(m), as_int(k), as_int(n), alpha, g + i * y_step,
                       as_int(m), ai, as_int(k), Scalar(0), gb.data() + i * b_step, as_int(k));
          }
        }
        accumulate_grad(b, std::move(gb));
      }
    });
  }
  return result;
}

}  // namespace

Tensor matmul_nt(const Tensor& a, const Tensor& b, Scalar alpha) {
  return product("matmul_nt", a, b, true, 2, alpha);
}

Tensor linear(const Tensor& x, const Tensor& weight) {
  if (weight.dim() != 2) {
    throw std::invalid_argument("linear: weight must be (out_features, in_features), got " +
                                shape_str(weight.shape()) + " for input " + shape_str(x.shape()));
  }
  return product("linear", x, weight, true, 1);
}

}  // namespace GLASS_PRECISION
}  // namespace glass
