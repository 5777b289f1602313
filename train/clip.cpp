#include "train/clip.hpp"

#include <cmath>
#include <vector>

#include "autograd/kernels/kernels.hpp"
#include "autograd/threads.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

double global_grad_norm(const std::vector<Tensor>& params) {
  // Each parameter's sum on one of num_threads() threads, then added in parameter order: the
  // same bits for any thread count.
  const long n = static_cast<long>(params.size());
  std::vector<double> sums(params.size(), 0.0);
#pragma omp parallel for schedule(dynamic) \
    num_threads(static_cast <int>(num_threads())) if (num_threads() > 1)
  for (long i = 0; i < n; ++i)
    if (params[i].has_grad())
      sums[i] =
          sum_of_squares(params[i].grad());  // SIMD in blocks (autograd/kernels/sum_squares.cpp)
  double sum_sq = 0.0;
  for (double s : sums) sum_sq += s;
  return std::sqrt(sum_sq);
}

double clip_grad_norm(const std::vector<Tensor>& params, double max_norm) {
  const double norm = global_grad_norm(params);
  if (!std::isfinite(norm) || max_norm <= 0.0) return norm;
  const double coef = max_norm / (norm + 1e-6);
  if (coef >= 1.0) return norm;  // PyTorch multiplies by the clamped coefficient 1.0: a no-op
  const long n_params = static_cast<long>(params.size());
#pragma omp parallel for schedule(dynamic) \
    num_threads(static_cast <int>(num_threads())) if (num_threads() > 1)
  for (long k = 0; k < n_params; ++k) {
    if (!params[k].has_grad()) continue;
    Tensor handle = params[k];  // shares storage
    Scalar* g = handle.grad().data();
    const std::size_t n = handle.size();
    const Scalar scale = static_cast<Scalar>(coef);  // in Scalar, so the loop vectorizes
    for (std::size_t i = 0; i < n; ++i) g[i] *= scale;
  }
  return norm;
}

}  // namespace GLASS_PRECISION
}  // namespace glass
