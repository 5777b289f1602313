#pragma once
// Every differentiable op of GlassLLM. Forward and backward of each op live side by side in
// one .cpp per family (ops_elementwise.cpp, ops_reduce.cpp, ops_shape.cpp, ops_matmul.cpp,
// ops_nn.cpp). Each op, when needs_grad(...) holds, records itself on the tape.
//
// Conventions
// - Axes are ints; negative axes count from the end (-1 = last), as in NumPy/PyTorch.
// - Binary elementwise ops broadcast like NumPy; their backward sums the gradient back to each
//   input's shape.
// - Wrong shapes or axes throw std::invalid_argument whose message names the op and the shapes,
//   e.g. "matmul: inner dimensions differ: (2, 3) @ (4, 5)".

#include <vector>

#include "autograd/tape.hpp"
#include "autograd/tensor.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

// ---- elementwise (ops_elementwise.cpp) ----------------------------------------------------
Tensor add(const Tensor& a, const Tensor& b);  ///< a + b, broadcast
Tensor sub(const Tensor& a, const Tensor& b);  ///< a - b, broadcast
Tensor mul(const Tensor& a, const Tensor& b);  ///< a * b, broadcast
Tensor div(const Tensor& a, const Tensor& b);  ///< a / b, broadcast
Tensor neg(const Tensor& a);                   ///< -a
Tensor add(const Tensor& a, Scalar s);         ///< a + s
Tensor mul(const Tensor& a, Scalar s);         ///< a * s
Tensor pow(const Tensor& a, Scalar p);         ///< a^p (a > 0 unless p is an integer)
Tensor exp(const Tensor& a);                   ///< e^a
Tensor log(const Tensor& a);                   ///< natural log; a must be > 0
Tensor sigmoid(const Tensor& a);               ///< 1 / (1 + e^-a)
Tensor silu(const Tensor& a);                  ///< a * sigmoid(a) (Swish, Ramachandran et al. 2017)
/// silu(gate) * up fused: SwiGLU's gate (Shazeer 2020, "GLU Variants Improve Transformer").
/// gate and up must have the same shape (no broadcasting), which is the output's shape; throws
/// std::invalid_argument "silu_mul: shapes (..) and (..) differ" otherwise. One pass over memory
/// forward and one backward (sigmoid(gate) is recomputed there, not stored).
Tensor silu_mul(const Tensor& gate, const Tensor& up);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a);
Tensor operator+(const Tensor& a, Scalar s);
Tensor operator-(const Tensor& a, Scalar s);
Tensor operator*(const Tensor& a, Scalar s);
Tensor operator*(Scalar s, const Tensor& a);
Tensor operator/(const Tensor& a, Scalar s);

// ---- reductions (ops_reduce.cpp) ----------------------------------------------------------
Tensor sum(const Tensor& a);                                   ///< sum of all elements, shape ()
Tensor mean(const Tensor& a);                                  ///< mean of all elements, shape ()
Tensor sum(const Tensor& a, int axis, bool keepdim = false);   ///< sum over one axis
Tensor mean(const Tensor& a, int axis, bool keepdim = false);  ///< mean over one axis

// ---- shape (ops_shape.cpp) ----------------------------------------------------------------
/// Same elements, new shape (element count must match).
Tensor reshape(const Tensor& a, const Shape& shape);
/// Swaps two axes (the result is a contiguous copy).
Tensor transpose(const Tensor& a, int axis0, int axis1);
/// Reorders axes: result axis i is input axis perm[i].
Tensor permute(const Tensor& a, const std::vector<int>& perm);
/// Elements begin..end-1 along `axis`.
Tensor slice(const Tensor& a, int axis, std::size_t begin, std::size_t end);
/// Joins tensors along `axis`; all other extents must agree.
Tensor concat(const std::vector<Tensor>& tensors, int axis);

// ---- matrix products (ops_matmul.cpp), BLAS sgemm/dgemm ---------------------------------
/// a @ b. 2-D: (n, k) @ (k, m) -> (n, m). Batched: (..., n, k) @ (..., k, m) -> (..., n, m)
/// with equal leading dims; a 2-D b is shared by every batch element.
Tensor matmul(const Tensor& a, const Tensor& b);
/// a @ b^T over the last two axes, without copying a transpose: (..., n, k) @ (..., m, k)^T ->
/// (..., n, m), e.g. attention scores Q K^T. Leading dims equal, or b 2-D (m, k) shared.
/// (Added by the autograd core; same as matmul(a, transpose(b, -2, -1)).) `alpha` scales the
/// product inside the gemm: matmul_nt(q, k, 1 / sqrt(d_k)) is the attention scores' Q K^T / sqrt(d_k)
/// without a separate division pass.
Tensor matmul_nt(const Tensor& a, const Tensor& b, Scalar alpha = 1);
/// Attention scores of grouped-query attention, read from the projections' own layout:
/// q (B, n, H, D), k (B, m, H_kv, D) -> scores (B, H, n, m) with
///   scores[b, h] = scale * Q_{b,h} K_{b,h/n_rep}^T,   n_rep = H / H_kv,
/// where Q_{b,h} (n, D) is head h of q and K_{b,g} (m, D) KV head g of k (GQA: query head h uses
/// KV head h / n_rep, Ainslie et al. 2023). Same numbers as
///   matmul_nt(transpose(q, 1, 2), repeat_kv(transpose(k, 1, 2), n_rep), scale)
/// without the transposed and repeated copies: BLAS reads each head with row stride H*D (q) or
/// H_kv*D (k). scale = 1 / sqrt(D) gives Vaswani et al.'s Q K^T / sqrt(d_k).
/// Throws std::invalid_argument (naming the op and both shapes) when q or k is not 4-D, the
/// batch sizes or head_dims differ, or H is not a multiple of H_kv.
Tensor attention_scores(const Tensor& q, const Tensor& k, Scalar scale);
/// Mixes the values with the attention weights, written in the (B, n, H, D) layout:
/// weights (B, H, n, m), v (B, m, H_kv, D) -> (B, n, H, D) with
///   out[b, :, h, :] = weights[b, h] @ V_{b,h/n_rep},   n_rep = H / H_kv.
/// Same numbers as transpose(matmul(weights, repeat_kv(transpose(v, 1, 2), n_rep)), 1, 2), with
/// no copies: each head's (n, D) block is written in place with row stride H*D, so
/// reshape(out, {B, n, H*D}) is the concatenation of the heads. Throws std::invalid_argument
/// (naming the op and both shapes) when an input is not 4-D, the batch sizes differ, weights'
/// m differs from v's positions, or H is not a multiple of H_kv.
Tensor attention_mix(const Tensor& weights, const Tensor& v);
/// attention_scores under a mask, skipping what the mask throws away. Defined as
///   masked_fill(attention_scores(q, k, scale), mask, -inf)
/// with mask of shape (n, m) (true = masked, e.g. causal_mask(n, m, start)) broadcast over B and
/// H: scores (B, H, n, m), -inf at the masked places, whose gradient is exactly 0. When every
/// mask row is a prefix (keys 0 .. k_i - 1 allowed, the rest masked: every causal row), the
/// masked places are not computed: the gemms run over blocks of query rows and only the key
/// columns the block allows (about half the work under a causal mask). Other masks take the
/// definition (full product, then masked_fill). Throws std::invalid_argument as the plain
/// overload, and when mask is not (n, m).
Tensor attention_scores(const Tensor& q, const Tensor& k, Scalar scale, const Mask& mask);
/// attention_mix under a mask (n, m) (true = masked) broadcast over B and H. Defined as
///   attention_mix(masked_fill(weights, mask, 0), v):
/// masked weights count as 0 whatever their value and get exactly 0 gradient. After
/// masked_softmax(scores, mask) they are 0 already, so the value equals attention_mix(weights, v).
/// Prefix rows (every causal row) skip the masked columns of the products, in blocks of query
/// rows as the masked attention_scores; other masks take the definition. Throws
/// std::invalid_argument as the plain overload, and when mask is not (n, m).
Tensor attention_mix(const Tensor& weights, const Tensor& v, const Mask& mask);
/// The linear layer without bias, as torch.nn.functional.linear: x (..., in_features),
/// weight (out_features, in_features) -> x @ weight^T of shape (..., out_features).
Tensor linear(const Tensor& x, const Tensor& weight);

// ---- neural-network ops (ops_nn.cpp) -----------------------------------------------------
/// Rows of `weight` (vocab_size, d) picked by `ids` of any shape S -> (S..., d).
/// Throws std::out_of_range when an id is outside [0, vocab_size).
Tensor embedding(const Tensor& weight, const Ids& ids);
/// a with `value` where mask is true. mask broadcasts to a's shape. The gradient at masked
/// places is exactly zero.
Tensor masked_fill(const Tensor& a, const Mask& mask, Scalar value);
/// Softmax over the last axis, subtracting each row's max. A row whose entries are all -inf
/// gives zeros (and zero gradient), never NaN.
Tensor softmax(const Tensor& a);
/// softmax(masked_fill(scores, mask, -inf)) fused, over the last axis: one pass, no masked copy
/// of scores. mask broadcasts to scores' shape as in masked_fill (e.g. causal_mask (n, m) under
/// scores (B, H, n, m)); true = masked. Masked entries are exactly 0 in the output and get exactly
/// 0 gradient; a fully masked row gives zeros. Rows whose mask is a prefix (first k keys allowed,
/// the rest masked: every row of a causal mask) only touch their first k entries. Throws
/// std::invalid_argument when the mask does not broadcast or scores is 0-d.
Tensor masked_softmax(const Tensor& scores, const Mask& mask);
/// log(softmax(a)) over the last axis, computed stably (x - max - log(sum(exp(x - max)))).
/// A row whose entries are all -inf gives -inf (log 0) and zero gradient, never NaN.
Tensor log_softmax(const Tensor& a);
/// Mean cross-entropy of logits (..., V) against integer targets of shape (...), fused with
/// log-softmax. Targets equal to ignore_index are skipped; the mean is over the others, and is
/// 0 when all are ignored. Throws std::out_of_range for a target outside [0, V) that is not
/// ignore_index. Returns a scalar (shape ()).
Tensor cross_entropy(const Tensor& logits, const Ids& targets, int ignore_index = -1);
/// RMSNorm (Zhang & Sennrich 2019): x / sqrt(mean(x^2 over last axis) + eps) * gain.
/// x (..., d), gain (d).
Tensor rms_norm(const Tensor& x, const Tensor& gain, Scalar eps);
/// Rotary position embedding (Su et al. 2021, RoFormer eq. 34), Meta-LLaMA interleaved pairs:
/// x of shape (B, T, H, D), D even; pair i = (x[2i], x[2i+1]) at absolute position
/// p = start + t is rotated by the angle p * base^(-2i/D).
Tensor rope(const Tensor& x, std::size_t start, Scalar base = 10000);
/// Grouped-query attention head repeat: x (B, H_kv, T, D) -> (B, H_kv * n_rep, T, D) where
/// output head h is input head h / n_rep (as LLaMA's repeat_kv / torch.repeat_interleave).
Tensor repeat_kv(const Tensor& x, std::size_t n_rep);

/// The causal mask for n new queries against m keys when `start` positions are already cached
/// (m = start + n usually): true where key j > start + i, i.e. in the future. Shape (n, m).
Mask causal_mask(std::size_t n, std::size_t m, std::size_t start = 0);

/// Scaled dot-product attention under the causal mask, fused (FlashAttention, Dao et al. 2022,
/// Algorithms 1-2, with the exact softmax of each row): per batch row and query head h,
///   out = softmax(q_h k_g^T * scale, masked where key j > start + i) v_g,   g = h / n_rep,
/// with n_rep = n_heads / n_kv_heads (GQA: query head h reads KV head h / n_rep) and
/// start = m - n (the positions before the first query, e.g. cached). Shapes: q (B, n, n_heads,
/// head_dim), k and v (B, m, n_kv_heads, head_dim) -> out (B, n, n_heads, head_dim), the layout
/// of attention_mix, so reshape(out, {B, n, n_heads * head_dim}) concatenates the heads.
/// The same numbers (to rounding) and gradients as
///   attention_mix(masked_softmax(attention_scores(q, k, scale, mask), mask), v, mask)
/// with mask = causal_mask(n, m, m - n), but the (B, n_heads, n, m) scores and weights are never
/// stored: blocks of 32 query rows are computed in a small scratch, and only each row's
/// logsumexp (B, n_heads, n) is kept for the backward pass, which recomputes the weights.
/// Throws std::invalid_argument (with the three shapes) when an input is not 4-D, k and v differ
/// in shape, batch sizes or head_dims differ, n_heads % n_kv_heads != 0, or n > m.
Tensor causal_attention(const Tensor& q, const Tensor& k, const Tensor& v, Scalar scale);

}  // namespace GLASS_PRECISION
}  // namespace glass
