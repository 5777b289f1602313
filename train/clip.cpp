#include "train/clip.hpp"

#include <algorithm>
#include <cmath>

#include "autograd/ops_util.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

double global_grad_norm(const std::vector<Tensor>& params) {
  double sum_sq = 0.0;
  for (const Tensor& p : params) {
    if (!p.has_grad()) continue;
    const Scalar* g = p.grad().data();
    const std::size_t n = p.size();
    // Blocks of 1024 squares are summed with SIMD in Scalar (detail::dot_n), the blocks in
    // double: several times faster than a plain `sum += g * g` in double, which can be neither
    // vectorized nor pipelined. In float a square overflows above ~1.8e19 and vanishes below
    // ~1e-19: a block whose float sum leaves [1e-30, 1e30] (or is 0) is summed again in
    // double, element by element, so the norm is right for any finite gradient.
    constexpr std::size_t kBlock = 1024;
    for (std::size_t i = 0; i < n; i += kBlock) {
      const std::size_t len = std::min(kBlock, n - i);
      const Scalar block = detail::dot_n(g + i, g + i, len);
      if (block >= Scalar(1e-30) && block <= Scalar(1e30)) {
        sum_sq += static_cast<double>(block);
      } else {
        for (std::size_t j = i; j < i + len; ++j) sum_sq += static_cast<double>(g[j]) * g[j];
      }
    }
  }
  return std::sqrt(sum_sq);
}

double clip_grad_norm(const std::vector<Tensor>& params, double max_norm) {
  const double norm = global_grad_norm(params);
  if (!std::isfinite(norm) || max_norm <= 0.0) return norm;
  const double coef = max_norm / (norm + 1e-6);
  if (coef >= 1.0) return norm;  // PyTorch multiplies by the clamped coefficient 1.0: a no-op
  for (const Tensor& p : params) {
    if (!p.has_grad()) continue;
    Tensor handle = p;  // shares storage
    Scalar* g = handle.grad().data();
    const std::size_t n = handle.size();
    const Scalar scale = static_cast<Scalar>(coef);  // in Scalar, so the loop vectorizes
    for (std::size_t i = 0; i < n; ++i) g[i] *= scale;
  }
  return norm;
}

}  // namespace GLASS_PRECISION
}  // namespace glass
