#pragma once
// The reference ops of GlassLLM: every primitive the model is written in. Forward and backward
// of each op live side by side in one .cpp per family (ops_elementwise.cpp, ops_reduce.cpp,
// ops_shape.cpp, ops_matmul.cpp, ops_nn.cpp). Each op, when needs_grad(...) holds, records
// itself on the tape. The fused and vectorised kernels that replace some of them on the model's
// fast path are declared apart, in autograd/kernels/kernels.hpp.
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
Tensor relu(const Tensor& a);                  ///< max(a, 0); gradient 0 at a = 0, as PyTorch
Tensor tanh(const Tensor& a);                  ///< hyperbolic tangent, in (-1, 1)

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
/// (Same as matmul(a, transpose(b, -2, -1)).) `alpha` scales the
/// product inside the gemm: matmul_nt(q, k, 1 / sqrt(d_k)) is the attention scores' Q K^T / sqrt(d_k)
/// without a separate division pass.
Tensor matmul_nt(const Tensor& a, const Tensor& b, Scalar alpha = 1);
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
/// gives zeros (and zero gradient); a row holding a NaN gives NaN, as in PyTorch.
Tensor softmax(const Tensor& a);
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
/// TopK activation of a sparse autoencoder (Gao et al. 2024, "Scaling and evaluating sparse
/// autoencoders", eq. 2: z = ReLU(TopK(W_enc (x - b_pre) + b_enc))): over the last axis, keeps
/// the k largest entries of each row that are also > 0 and sets every other entry to 0. Ties at
/// the k-th value go to the lower index; a NaN counts as largest and stays NaN. The gradient
/// flows only through the kept entries. a (..., n), 1 <= k <= n; std::invalid_argument else.
Tensor topk_relu(const Tensor& a, std::size_t k);
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

}  // namespace GLASS_PRECISION
}  // namespace glass
