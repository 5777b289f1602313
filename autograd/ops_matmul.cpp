// matmul, the reference matrix product, through xtensor-blas (xt::linalg::dot, which calls
// OpenBLAS's gemm). matmul_nt and linear, one cblas call each, are in ops_linear.cpp: the
// BLAS declarations of xtensor-blas and of OpenBLAS's cblas.h cannot meet in one file.

#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xview.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "autograd/ops.hpp"
#include "autograd/ops_util.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

// ---- matmul: the reference product, through xtensor-blas --------------------------------------
// Y = A @ B for every batch element (the leading axes of a; b is 2-D and shared, or has a's
// leading axes):  Y_i = A_i @ B_i.  Backward:  dA_i = dY_i @ B_i^T,  dB_i = A_i^T @ dY_i
// (summed over the batch when b is shared).
Tensor matmul(const Tensor& a, const Tensor& b) {
  const Shape sa = a.shape(), sb = b.shape();
  auto fail = [&](const std::string& why) {
    return std::invalid_argument("matmul: " + why + ": " + shape_str(sa) + " @ " + shape_str(sb));
  };
  if (sa.size() < 2 || sb.size() < 2) throw fail("too few axes");
  const bool shared_b = sb.size() == 2;
  if (!shared_b && (sa.size() != sb.size() || !std::equal(sa.begin(), sa.end() - 2, sb.begin())))
    throw fail("batch (leading) dimensions differ");
  if (sa.back() != sb[sb.size() - 2]) throw fail("inner dimensions differ");
  const std::size_t n = sa[sa.size() - 2], k = sa.back(), m = sb.back();
  const std::size_t batch = detail::numel(Shape(sa.begin(), sa.end() - 2));
  const bool empty = batch == 0 || n == 0 || k == 0 || m == 0;  // BLAS never sees a zero size

  // A (batch, n, k), B (k, m) or (batch, k, m): copies with the batch axes folded into one.
  auto batched = [batch](const Array& x, std::size_t rows, std::size_t cols) {
    Array out = x;
    out.reshape({batch, rows, cols});
    return out;
  };
  const Array A = batched(a.value(), n, k);
  const Array B = shared_b ? b.value() : batched(b.value(), k, m);
  auto B_at = [shared_b](const Array& B, std::size_t i) {
    return shared_b ? Array(B) : Array(xt::view(B, i));
  };

  Array Y(Shape{batch, n, m}, Scalar(0));
  if (!empty)
    for (std::size_t i = 0; i < batch; ++i)
      xt::view(Y, i) = xt::linalg::dot(Array(xt::view(A, i)), B_at(B, i));
  Shape so = sa;
  so.back() = m;
  Y.reshape(so);

  const bool track = needs_grad({&a, &b});
  Tensor result = detail::make_output(std::move(Y), track);
  if (track) {
    tape().record(
        "matmul", result,
        [a, b, sa, sb, batch, n, k, m, shared_b, empty, batched, B_at](const Array& grad) {
          const Array G = batched(grad, n, m);
          const Array A = batched(a.value(), n, k);
          const Array B = shared_b ? b.value() : batched(b.value(), k, m);
          Array dA(Shape{batch, n, k}, Scalar(0));
          Array dB(shared_b ? Shape{k, m} : Shape{batch, k, m}, Scalar(0));
          if (!empty)
            for (std::size_t i = 0; i < batch; ++i) {
              const Array G_i = xt::view(G, i), A_i = xt::view(A, i);
              xt::view(dA, i) = xt::linalg::dot(G_i, Array(xt::transpose(B_at(B, i))));  // dY B^T
              const Array dB_i = xt::linalg::dot(Array(xt::transpose(A_i)), G_i);        // A^T dY
              if (shared_b)
                dB += dB_i;
              else
                xt::view(dB, i) = dB_i;
            }
          dA.reshape(sa);
          dB.reshape(sb);
          accumulate_grad(a, std::move(dA));
          accumulate_grad(b, std::move(dB));
        });
  }
  return result;
}

}  // namespace GLASS_PRECISION
}  // namespace glass
