// Fast kernel: topk_decode(pre, k, W) = matmul(topk_relu(pre, k), W), the decoder of a TopK
// sparse autoencoder multiplying only the active latents. Replaces the reference ops topk_relu
// (ops_nn.cpp) and matmul (ops_matmul.cpp); tests/autograd/fast_kernels_f64_test.cpp checks values
// and gradients against them.

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "autograd/kernels/kernels.hpp"
#include "autograd/ops_util.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

namespace {

/// The kept entries of one row of n pre-activations (topk_relu's choice, ops_nn.cpp): the k
/// largest in the order "value, then the lower index first; a NaN above every number", of which
/// those > 0 (or NaN) are kept. Appends their indices, ascending, to `kept`. `top` is scratch.
/// Without NaN, one pass keeps the k largest seen so far in a min-heap (its front the smallest in
/// that order): a later entry displaces the front only when its value is strictly larger, since
/// at an equal value the earlier index wins. Most entries are only compared with the front.
void kept_latents(const Scalar* row, std::size_t n, std::size_t k, std::vector<std::size_t>& top,
                  std::vector<std::uint32_t>& kept) {
  const auto larger = [row](std::size_t i, std::size_t j) {
    const bool nan_i = std::isnan(row[i]), nan_j = std::isnan(row[j]);
    if (nan_i != nan_j) return nan_i;
    if (!nan_i && row[i] != row[j]) return row[i] > row[j];
    return i < j;
  };
  top.resize(k);
  if (std::any_of(row, row + n, [](Scalar v) { return std::isnan(v); })) {
    // rare: the reference's selection, as written there
    std::vector<std::size_t> order(n);
    for (std::size_t j = 0; j < n; ++j) order[j] = j;
    std::nth_element(order.begin(), order.begin() + (k - 1), order.end(), larger);
    std::copy_n(order.begin(), k, top.begin());
  } else {
    for (std::size_t j = 0; j < k; ++j) top[j] = j;
    std::make_heap(top.begin(), top.end(), larger);
    for (std::size_t j = k; j < n; ++j) {
      if (!(row[j] > row[top.front()])) continue;
      std::pop_heap(top.begin(), top.end(), larger);
      top.back() = j;
      std::push_heap(top.begin(), top.end(), larger);
    }
  }
  std::sort(top.begin(), top.end());
  for (const std::size_t j : top)
    if (!(row[j] <= 0)) kept.push_back(static_cast<std::uint32_t>(j));  // > 0, or NaN
}

}  // namespace

// y_r = sum over the kept latents j of row r: pre[r, j] W[j]   (N k D multiply-adds, not N F D)
// Backward, g_r = dL/dy_r:
//   dpre[r, j] = g_r . W[j]     for a kept j (0 elsewhere: topk_relu's mask)
//   dW[j]     += pre[r, j] g_r  for every row r that keeps j
Tensor topk_decode(const Tensor& pre, std::size_t k, const Tensor& W,
                   std::vector<std::uint32_t>* active) {
  if (pre.dim() != 2 || W.dim() != 2 || pre.shape()[1] != W.shape()[0] || k == 0 ||
      k > pre.shape()[1]) {
    throw std::invalid_argument("topk_decode: pre " + shape_str(pre.shape()) + ", W " +
                                shape_str(W.shape()) + " and k = " + std::to_string(k) +
                                " must be (N, F), (F, D) and 1 <= k <= F");
  }
  const std::size_t N = pre.shape()[0], F = pre.shape()[1], D = W.shape()[1];
  // The kept latents of every row, as CSR: row r's are kept[start[r] .. start[r + 1]).
  std::vector<std::uint32_t> kept;
  kept.reserve(N * k);
  std::vector<std::size_t> start(N + 1, 0);
  std::vector<std::size_t> scratch;
  const Scalar* p = pre.value().data();
  for (std::size_t r = 0; r < N; ++r) {
    kept_latents(p + r * F, F, k, scratch, kept);
    start[r + 1] = kept.size();
  }
  Array out = xt::zeros<Scalar>({N, D});
  const Scalar* w = W.value().data();
  for (std::size_t r = 0; r < N; ++r) {
    Scalar* y = out.data() + r * D;
    for (std::size_t e = start[r]; e < start[r + 1]; ++e) {
      const Scalar z = p[r * F + kept[e]];
      const Scalar* w_j = w + kept[e] * D;
      for (std::size_t d = 0; d < D; ++d) y[d] += z * w_j[d];
    }
  }
  if (active != nullptr) *active = kept;
  const bool track = needs_grad({&pre, &W});
  Tensor result = detail::make_output(std::move(out), track);
  if (track) {
    tape().record("topk_decode", result,
                  [pre, W, kept = std::move(kept), start = std::move(start)](const Array& grad) {
                    const std::size_t N = pre.shape()[0], F = pre.shape()[1], D = W.shape()[1];
                    const bool need_pre = pre.requires_grad(), need_w = W.requires_grad();
                    Array d_pre = need_pre ? Array(xt::zeros<Scalar>({N, F})) : Array();
                    Array d_w = need_w ? Array(xt::zeros<Scalar>({F, D})) : Array();
                    const Scalar* g = grad.data();
                    const Scalar* p = pre.value().data();
                    const Scalar* w = W.value().data();
                    for (std::size_t r = 0; r < N; ++r) {
                      const Scalar* g_r = g + r * D;
                      for (std::size_t e = start[r]; e < start[r + 1]; ++e) {
                        const std::size_t j = kept[e];
                        if (need_pre) {
                          const Scalar* w_j = w + j * D;
                          Scalar dot = 0;
                          for (std::size_t d = 0; d < D; ++d) dot += g_r[d] * w_j[d];
                          d_pre.data()[r * F + j] = dot;
                        }
                        if (need_w) {
                          const Scalar z = p[r * F + j];
                          Scalar* dw_j = d_w.data() + j * D;
                          for (std::size_t d = 0; d < D; ++d) dw_j[d] += z * g_r[d];
                        }
                      }
                    }
                    if (need_pre) accumulate_grad(pre, std::move(d_pre));
                    if (need_w) accumulate_grad(W, std::move(d_w));
                  });
  }
  return result;
}

}  // namespace GLASS_PRECISION
}  // namespace glass
