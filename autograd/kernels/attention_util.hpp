#pragma once
// Internal helpers of the fused attention kernel, causal_attention.cpp (not part of the public
// API): the shapes of one attention, the GQA check, the row block and a packed transpose.

#include <cstddef>
#include <string>

#include "autograd/scalar.hpp"

namespace glass {
inline namespace GLASS_PRECISION {
namespace detail {

/// Shapes of one attention computation: B batch, H query heads, H_kv key/value heads, n queries,
/// m keys, D head_dim; n_rep = H / H_kv query heads share one KV head (GQA: query head h reads
/// KV head h / n_rep).
struct AttentionDims {
  std::size_t B, H, H_kv, n, m, D, n_rep;
  bool empty() const { return B == 0 || H == 0 || n == 0 || m == 0 || D == 0; }
  /// With a KV cache: the keys before the first query (query i sits at position start + i).
  std::size_t start() const { return m - n; }
};

/// Checks that H is a positive multiple of H_kv (GQA), else throws fail(reason).
template <class Fail>
void check_heads(std::size_t H, std::size_t H_kv, const Fail& fail) {
  if (H_kv == 0 || H % H_kv != 0) {
    throw fail(std::to_string(H) + " query heads are not a multiple of " + std::to_string(H_kv) +
               " key/value heads");
  }
}

/// Query rows per block in the causal kernels. Smaller blocks skip more of the masked triangle
/// (at n = m = 256, blocks of 32 rows compute 56 % of the (n, m) entries, blocks of 64 rows
/// 62 %) but make smaller gemms. Measured with bench_train_step at 8x256 (head_dim 32): 32 rows
/// a little faster than 64, and no better at 12x64.
constexpr std::size_t kRowBlock = 32;

/// xt (D, rows) = the transpose of x (rows, D) stored with row stride ld, for the products with
/// K^T or V^T: a row block times a contiguous (D, hi) matrix runs faster in OpenBLAS than the
/// same product with the transpose read in place (measured: ~25 % less time at D = 32).
inline void transpose_into(const Scalar* x, std::size_t rows, std::size_t D, std::size_t ld,
                           Scalar* xt) {
  for (std::size_t j = 0; j < rows; ++j)
    for (std::size_t e = 0; e < D; ++e) xt[e * rows + j] = x[j * ld + e];
}

}  // namespace detail
}  // namespace GLASS_PRECISION
}  // namespace glass
