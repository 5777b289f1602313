#include "train/clip.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "autograd/ops_util.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

double global_grad_norm(const std::vector<Tensor>& params) {
  double sum_sq = 0.0;
  for (const Tensor& p : params) {
    if (!p.has_grad()) continue;
    const Scalar* g = p.grad().data();
    const std::size_t n = p.size();
    // Blocks of 1024 squares are summed with SIMD (detail::dot_n), the blocks in double: as
    // accurate as a plain double loop for this purpose and several times faster (a plain
    // `sum += g * g` in double can be neither vectorized nor pipelined).
    // The blocks may run on different threads (parallel_for); their sums are added in block
    // order, so the norm does not depend on the thread count.
    constexpr std::size_t kBlock = 1024;
    const std::size_t blocks = (n + kBlock - 1) / kBlock;
    std::vector<double> block_sums(blocks);
    parallel_for(blocks, 16, [&](std::size_t b_begin, std::size_t b_end) {
      for (std::size_t b = b_begin; b < b_end; ++b) {
        const std::size_t i = b * kBlock, len = std::min(kBlock, n - i);
        block_sums[b] = static_cast<double>(detail::dot_n(g + i, g + i, len));
      }
    });
    for (double s : block_sums) sum_sq += s;
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
    detail::parallel_elements(n, [=](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i) g[i] *= scale;
    });
  }
  return norm;
}

}  // namespace GLASS_PRECISION
}  // namespace glass
