#pragma once
// The fast kernels: fused and vectorised versions of chains of reference ops (autograd/ops.hpp),
// used by the model's fast path (OpsPath::fast, nn/config.hpp). Each one names the reference ops
// it replaces; tests/autograd/fast_kernels_f64_test.cpp, one table with a row per kernel, shows
// (in double precision) that its values and gradients equal theirs. Sources: autograd/kernels/*.cpp; SIMD helpers in kernels/simd.hpp (internal).

#include <cstddef>
#include <cstdint>
#include <vector>

#include "autograd/ops.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

// ---- single reference ops with buffer reuse or cached tables ----------------------------------
// Same forward pass as the reference op they are named after (same values), but their backward
// writes the inputs' gradients straight into existing ones (a gemm with beta = 1, a loop that
// adds) or hands the output's gradient buffer itself to an input when the tape frees it next
// (Tensor::backward); see kernels/grad_buffers.hpp. The model's fast path uses them for every
// linear layer, RMSNorm, RoPE, reshape and residual add. Their rows in
// tests/autograd/fast_kernels_f64_test.cpp run with and without existing gradients and with the
// output held or not.

/// Replaces: linear(x, weight) (ops.hpp). x (..., in_features), weight (out_features,
/// in_features) -> (..., out_features). dX and dW are written by the gemm into x's and weight's
/// gradients when they exist (beta = 1). Throws std::invalid_argument as linear.
/// (kernels/linear.cpp)
Tensor fast_linear(const Tensor& x, const Tensor& weight);
/// Replaces: rms_norm(x, gain, eps) (ops.hpp). x (..., d), gain (d). Row loops that vectorize;
/// dx is added into x's gradient when it exists (the residual stream's). Throws
/// std::invalid_argument as rms_norm. (kernels/rms_norm.cpp)
Tensor fast_rms_norm(const Tensor& x, const Tensor& gain, Scalar eps);
/// Replaces: rope(x, start, base) (ops.hpp). x (B, T, H, D), D even. cos and sin come from a
/// per-thread table of positions 0 .. 64k per (base, head_dim), grown by doubling (past 64k: rows
/// computed for the call); the backward pass turns the gradient back in place when it may take
/// the buffer. Throws std::invalid_argument as rope. (kernels/rope.cpp)
Tensor fast_rope(const Tensor& x, std::size_t start, Scalar base = 10000);
/// Replaces: reshape(a, shape) (ops.hpp). The backward pass hands the output's gradient buffer to
/// a when it may. Throws std::invalid_argument as reshape. (kernels/reshape_add.cpp)
Tensor fast_reshape(const Tensor& a, const Shape& shape);
/// Replaces: add(a, b) (ops.hpp) of two tensors of the same shape (the residual stream): the
/// backward pass gives one input the output's gradient buffer itself when it may, and adds it to
/// the other. Tensors of different shapes go to the reference add (broadcasting).
/// (kernels/reshape_add.cpp)
Tensor fast_add(const Tensor& a, const Tensor& b);

// ---- sum of squares (kernels/sum_squares.cpp). Replaces: sum(x * x) in double -----------------
/// sum over every element of x of x^2, accumulated in double: SIMD partial sums of blocks of 1024
/// squares in Scalar, added in double; a block whose Scalar sum would overflow or vanish is summed
/// element by element in double, so the result is right for any finite x. For the global gradient
/// norm (train/clip.cpp).
double sum_of_squares(const Array& x);

// ---- SwiGLU gate (kernels/silu_mul.cpp). Replaces: mul(silu(gate), up) -----------------------
/// silu(gate) * up fused: SwiGLU's gate (Shazeer 2020, "GLU Variants Improve Transformer").
/// gate and up must have the same shape (no broadcasting), which is the output's shape; throws
/// std::invalid_argument "silu_mul: shapes (..) and (..) differ" otherwise. One pass over memory
/// forward and one backward (sigmoid(gate) is recomputed there, not stored).
Tensor silu_mul(const Tensor& gate, const Tensor& up);

// ---- sparse decoder of a TopK SAE (kernels/topk_decode.cpp). Replaces: matmul(topk_relu(pre, k), W)
/// The decoder of a TopK sparse autoencoder (interp/sae.hpp) multiplying only the active latents:
/// y = topk_relu(pre, k) W, with the same choice of kept entries as topk_relu (the k largest of
/// each row, ties to the lower index, a NaN above every number; kept when > 0 or NaN), in
/// N k D multiply-adds instead of N F D, and the same in the backward pass (the gradient of pre
/// is non-zero only at the kept entries, W's only at the rows of kept latents). pre (N, F),
/// W (F, D) -> (N, D). `active`, when given, receives the latent index of every kept entry,
/// row after row (its size is the number of non-zero latents). Throws std::invalid_argument
/// unless the shapes are (N, F) and (F, D) and 1 <= k <= F.
Tensor topk_decode(const Tensor& pre, std::size_t k, const Tensor& W,
                   std::vector<std::uint32_t>* active = nullptr);

// ---- fused causal attention (kernels/causal_attention.cpp). Replaces attention steps 5-8:
// matmul(Q, K^T) / sqrt(d_k) -> masked_fill(causal_mask, -inf) -> softmax -> matmul with V.
/// Scaled dot-product attention under the causal mask, fused (FlashAttention, Dao et al. 2022,
/// Algorithms 1-2, with the exact softmax of each row): per batch row and query head h,
///   out = softmax(q_h k_g^T * scale, masked where key j > start + i) v_g,   g = h / n_rep,
/// with n_rep = n_heads / n_kv_heads (GQA: query head h reads KV head h / n_rep) and
/// start = m - n (the positions before the first query, e.g. cached). Shapes: q (B, n, n_heads,
/// head_dim), k and v (B, m, n_kv_heads, head_dim) -> out (B, n, n_heads, head_dim), the layout
/// of the projections, so reshape(out, {B, n, n_heads * head_dim}) concatenates the heads.
/// The same numbers (to rounding) and gradients as the reference steps (nn/attention.cpp), per
/// batch row with q_h, k_g, v_g taken heads-first:
///   matmul(softmax(masked_fill(matmul_nt(q_h, k_g, scale), causal_mask(n, m, m - n), -inf)), v_g)
/// but the (B, n_heads, n, m) scores and weights are never
/// stored: blocks of 32 query rows are computed in a small scratch, and only each row's
/// logsumexp (B, n_heads, n) is kept for the backward pass, which recomputes the weights.
/// Throws std::invalid_argument (with the three shapes) when an input is not 4-D, k and v differ
/// in shape, batch sizes or head_dims differ, n_heads % n_kv_heads != 0, or n > m.
Tensor causal_attention(const Tensor& q, const Tensor& k, const Tensor& v, Scalar scale);

// ---- generation over the KV cache (kernels/kv_attention.cpp) ----------------------------------
/// Attention steps 5-8 for generation, without tape, read in place from one layer's KV cache
/// storage keys / values (B, capacity, n_kv_heads, head_dim): query i of q (B, n, n_heads,
/// head_dim), at position start + i, attends to the cached keys 0 .. start + i of KV head
/// h / n_rep:  s = scale K q (one gemv), p = softmax_row(s), out = V^T p (one gemv).
/// Replaces: matmul(Q, repeat_kv(K)^T) * scale -> masked_fill(causal_mask(n, start + n, start),
/// -inf) -> softmax -> matmul with repeat_kv(V), on the first start + n cached positions.
/// Returns (B, n, n_heads, head_dim). The positions start .. start+n-1 must already be stored.
Array attend_to_cache(const Array& keys, const Array& values, const Array& q, Scalar scale,
                      std::size_t start);

// ---- fast row softmax (kernels/simd.hpp) ---------------------------------------------------
/// softmax over the last axis of a plain array (no tape), vectorised; the numbers of the
/// reference softmax(Tensor) to rounding. Fully -inf rows give zeros, a row with a NaN gives
/// NaN. For the sampler's and the inspector's probabilities.
Array softmax_rows(const Array& x);

}  // namespace GLASS_PRECISION
}  // namespace glass
