#include "train/clip.hpp"

#include <cmath>

#include "autograd/kernels/kernels.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

double global_grad_norm(const std::vector<Tensor>& params) {
  double sum_sq = 0.0;
  for (const Tensor& p : params) {
    if (!p.has_grad()) continue;
    sum_sq += sum_of_squares(p.grad());  // SIMD in blocks (autograd/kernels/sum_squares.cpp)
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
