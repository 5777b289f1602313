// The fast path of Attention (OpsPath::fast, the default of `glass train` and
// `glass sample`). Steps 1-2 as in the reference path (nn/attention.cpp), on the kernels
// fast_linear, fast_reshape and fast_rope (same values, gradient buffers reused); steps 3-8 run in one
// fused kernel of autograd/kernels/ (kernels.hpp names the reference ops each one replaces):
// - training (recording, no cache): causal_attention, FlashAttention-style, never storing the
//   (B, n_heads, n, m) scores and weights;
// - generation under NoGradGuard with a cache: attend_to_cache, two gemv per query and head
//   straight over the cache's storage;
// - recording with a cache (rare; gradient checks): the past positions are read from the cache,
//   then causal_attention with start = m - n.
// tests/autograd/fast_kernels_f64_test.cpp compares each kernel with the reference ops it
// replaces; tests/nn/attention_paths_f64_test.cpp and tests/train/attention_paths_test.cpp show that both
// paths give the same logits, gradients, 30-step losses and greedy samples.

#include "nn/decoder.hpp"

#include "autograd/kernels/kernels.hpp"

#include <cmath>
#include <tuple>

namespace glass {
inline namespace GLASS_PRECISION {

Tensor Attention::forward_fast(const Tensor& x, LayerKVCache* cache) const {
  const std::size_t B = x.shape()[0], n = x.shape()[1];
  const std::size_t start = cache ? cache->length() : 0;            // slots already cached
  const std::size_t position = cache ? cache->next_position() : 0;  // RoPE: absolute position
  const Scalar scale = 1 / std::sqrt(static_cast<Scalar>(head_dim));

  // 1-2. Projections, QK-norm if on, and RoPE, in the (B, n, heads, head_dim) layout the kernels
  //      read in place.
  Tensor q = fast_reshape(wq.forward(x), {B, n, n_heads, head_dim});
  Tensor k = fast_reshape(wk.forward(x), {B, n, n_kv_heads, head_dim});
  Tensor v = fast_reshape(wv.forward(x), {B, n, n_kv_heads, head_dim});
  if (qk_norm) normalise_qk(q, k, /*fast=*/true);  // 1b, as the reference path
  q = fast_rope(q, position, static_cast<Scalar>(rope_base));
  k = fast_rope(k, position, static_cast<Scalar>(rope_base));

  // 3-8. Cache, GQA, scores, mask, softmax and mix in one kernel: (B, n, n_heads, head_dim).
  Tensor mix;
  if (cache && !is_recording()) {
    cache->append(k.value(), v.value());
    mix = Tensor(attend_to_cache(cache->keys, cache->values, q.value(), scale, start));
  } else {
    if (cache) std::tie(k, v) = cache->extend(k, v);
    mix = causal_attention(q, k, v, scale);
  }

  // 9. W_O over the concatenated heads.
  return wo.forward(fast_reshape(mix, {B, n, n_heads * head_dim}));
}

}  // namespace GLASS_PRECISION
}  // namespace glass
