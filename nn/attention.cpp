// Grouped-query causal self-attention with RoPE and a KV cache, in the order of seed 000:
// X -> Q/K/V -> RoPE on Q/K -> KV cache -> GQA expansion -> QK^T/sqrt(d_k) -> causal mask ->
// softmax -> mix with V -> W_O. Read Attention::forward top to bottom: one numbered step per
// arrow, each followed by its tracer snapshot. q, k and v keep the projections' layout
// (B, positions, heads, head_dim) throughout: attention_scores and attention_mix read each head
// in place (BLAS leading dimensions), so no transposed or repeated copies are made; given the
// causal mask, they skip the future keys (about half of each product at full length).
// One shortcut: generation under NoGradGuard without a tracer runs steps 3-8 as a single loop
// over the cache's storage (attend_to_cache, right after step 2); it computes what the numbered
// steps compute, which is what the rest of Attention::forward shows. A second one: training
// (recording, without a tracer or a cache) runs steps 5-8 as one fused op, causal_attention
// (FlashAttention-style, autograd/ops_attention.cpp), right after step 2; it too computes what
// the numbered steps compute, without storing the (B, n_heads, n, m) scores and weights.

#include "nn/decoder.hpp"

#include "autograd/blas.hpp"
#include "autograd/ops_util.hpp"
#include "autograd/tape.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace glass {
inline namespace GLASS_PRECISION {

// ---- KV cache ------------------------------------------------------------------------------

KVCache::KVCache(const ModelConfig& config, std::size_t batch_size)
    : capacity_(config.context_length),
      batch_size_(batch_size),
      n_kv_heads_(config.n_kv_heads),
      head_dim_(config.head_dim()) {
  if (batch_size == 0) throw std::invalid_argument("KVCache: batch_size must be at least 1");
  const Shape shape = {batch_size_, capacity_, n_kv_heads_, head_dim_};
  for (std::size_t layer = 0; layer < config.n_layers; ++layer) {
    keys.emplace_back(Array(shape, Scalar(0)));
    values.emplace_back(Array(shape, Scalar(0)));
  }
}

void KVCache::clear() { length_ = 0; }

void KVCache::advance(std::size_t n) {
  if (length_ + n > capacity_) {
    throw std::invalid_argument("KVCache::advance: " + std::to_string(length_) + " + " +
                                std::to_string(n) + " positions exceed the capacity " +
                                std::to_string(capacity_));
  }
  length_ += n;
}

void KVCache::append(std::size_t layer, const Array& new_keys, const Array& new_values) {
  if (layer >= keys.size()) {
    throw std::invalid_argument("KVCache::append: layer " + std::to_string(layer) +
                                " does not exist (the cache has " + std::to_string(keys.size()) +
                                " layers)");
  }
  const Shape shape = shape_of(new_keys);
  if (shape.size() != 4 || shape[0] != batch_size_ || shape[2] != n_kv_heads_ ||
      shape[3] != head_dim_ || shape_of(new_values) != shape) {
    throw std::invalid_argument(
        "KVCache::append: expected keys and values of shape (" + std::to_string(batch_size_) +
        ", n, " + std::to_string(n_kv_heads_) + ", " + std::to_string(head_dim_) + "), got " +
        shape_str(shape) + " and " + shape_str(shape_of(new_values)));
  }
  const std::size_t n = shape[1];
  if (length_ + n > capacity_) {
    throw std::invalid_argument("KVCache::append: " + std::to_string(length_) + " cached + " +
                                std::to_string(n) + " new positions exceed the capacity " +
                                std::to_string(capacity_));
  }
  // Positions come before heads, so for each batch row the n new positions (all heads) are one
  // contiguous block, written at positions length_ .. length_+n-1.
  const std::size_t block = n * n_kv_heads_ * head_dim_;
  for (std::size_t b = 0; b < batch_size_; ++b) {
    const std::size_t dst = (b * capacity_ + length_) * n_kv_heads_ * head_dim_;
    std::copy_n(new_keys.data() + b * block, block, keys[layer].data() + dst);
    std::copy_n(new_values.data() + b * block, block, values[layer].data() + dst);
  }
}

namespace {

// The first m positions of one layer's cache storage (B, capacity, H_kv, D): (B, m, H_kv, D),
// one contiguous copy per batch row.
Array first_positions(const Array& storage, std::size_t m) {
  const Shape& full = shape_of(storage);
  const std::size_t capacity = full[1], row = full[2] * full[3];  // one position, all heads
  Array out = Array::from_shape({full[0], m, full[2], full[3]});
  for (std::size_t b = 0; b < full[0]; ++b)
    std::copy_n(storage.data() + b * capacity * row, m * row, out.data() + b * m * row);
  return out;
}

}  // namespace

Array KVCache::cached_keys(std::size_t layer, std::size_t m) const {
  return first_positions(keys.at(layer), std::min(m, capacity_));
}

Array KVCache::cached_values(std::size_t layer, std::size_t m) const {
  return first_positions(values.at(layer), std::min(m, capacity_));
}

// ---- Attention -----------------------------------------------------------------------------

namespace {

// (B, n, H, D) -> (B, H, n, D), a plain copy; only used to show snapshots per head (the
// seed's layout), and only when a tracer is given.
Array heads_first(const Array& x) {
  const std::size_t B = x.shape()[0], n = x.shape()[1], H = x.shape()[2], D = x.shape()[3];
  Array out = Array::from_shape({B, H, n, D});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < n; ++t)
      for (std::size_t h = 0; h < H; ++h)
        std::copy_n(x.data() + ((b * n + t) * H + h) * D, D,
                    out.data() + ((b * H + h) * n + t) * D);
  return out;
}

// The boolean mask as numbers: 1 where masked, 0 elsewhere.
Array mask_as_numbers(const Mask& mask) {
  Array out = Array::from_shape(shape_of(mask));
  std::transform(mask.begin(), mask.end(), out.begin(),
                 [](bool masked) { return masked ? Scalar(1) : Scalar(0); });
  return out;
}

// Steps 3-8 of one layer for generation under NoGradGuard, read straight from the cache's
// storage (B, capacity, n_kv_heads, head_dim): query i of q (B, n, n_heads, head_dim), at
// position start + i, attends to the cached keys 0 .. start + i of its KV head h / n_rep:
//   s = K q / sqrt(d_k) (one gemv), p = softmax(s), out = V^T p (one gemv).
// The same computation as attention_scores + masked_softmax + attention_mix on the first m
// cached positions (the tests compare the logits of both paths), without copying the cached
// keys and values out of the cache, without the (B, n_heads, n, m) score tensor and without the
// mask (the loop stops at the last allowed key). Returns (B, n, n_heads, head_dim).
Array attend_to_cache(const KVCache& cache, std::size_t layer, const Array& q, Scalar scale,
                      std::size_t start) {
  const std::size_t B = q.shape()[0], n = q.shape()[1], H = q.shape()[2], D = q.shape()[3];
  const Array& keys = cache.keys.at(layer);
  const Array& values = cache.values.at(layer);
  const std::size_t capacity = keys.shape()[1], H_kv = keys.shape()[2];
  const std::size_t n_rep = H / H_kv;
  const int row_stride = static_cast<int>(H_kv * D);  // one cached position = H_kv heads
  Array out = Array::from_shape({B, n, H, D});
  std::vector<Scalar> p(start + n);  // the attention weights of one query
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t h = 0; h < H; ++h) {
        const std::size_t m_i = start + i + 1;  // keys 0 .. start+i are visible
        const std::size_t kv_offset = (b * capacity * H_kv + h / n_rep) * D;
        const Scalar* q_row = q.data() + ((b * n + i) * H + h) * D;
        blas::gemv(false, static_cast<int>(m_i), static_cast<int>(D), scale,
                   keys.data() + kv_offset, row_stride, q_row, Scalar(0), p.data());
        detail::softmax_row(p.data(), p.data(), m_i);
        blas::gemv(true, static_cast<int>(m_i), static_cast<int>(D), Scalar(1),
                   values.data() + kv_offset, row_stride, p.data(), Scalar(0),
                   out.data() + ((b * n + i) * H + h) * D);
      }
  return out;
}

}  // namespace

Attention::Attention(const ModelConfig& config, Rng& rng)
    : wq(config.d_model, config.n_heads * config.head_dim(), config.init_std, rng),
      wk(config.d_model, config.n_kv_heads * config.head_dim(), config.init_std, rng),
      wv(config.d_model, config.n_kv_heads * config.head_dim(), config.init_std, rng),
      // nanoGPT: residual output projections get std / sqrt(2 * n_layers)
      wo(config.n_heads * config.head_dim(), config.d_model,
         config.init_std / std::sqrt(2.0 * static_cast<double>(config.n_layers)), rng),
      n_heads(config.n_heads),
      n_kv_heads(config.n_kv_heads),
      head_dim(config.head_dim()),
      rope_base(config.rope_base) {
  register_module("wq", wq);
  register_module("wk", wk);
  register_module("wv", wv);
  register_module("wo", wo);
}

Tensor Attention::forward(const Tensor& x, std::size_t layer, KVCache* cache,
                          Tracer* tracer) const {
  if (x.dim() != 3) {
    throw std::invalid_argument("Attention::forward: x must have shape (B, n, d_model), got " +
                                shape_str(x.shape()));
  }
  const std::size_t B = x.shape()[0];
  const std::size_t n = x.shape()[1];                    // new queries
  const std::size_t start = cache ? cache->length() : 0;  // positions already cached
  const std::size_t m = start + n;                       // keys attended to
  const std::string snapshot = tracer ? "layers." + std::to_string(layer) + "." : std::string();

  // 1. X -> Q/K/V: three projections, split into heads: (B, n, heads, head_dim).
  Tensor q = reshape(wq.forward(x), {B, n, n_heads, head_dim});
  Tensor k = reshape(wk.forward(x), {B, n, n_kv_heads, head_dim});
  Tensor v = reshape(wv.forward(x), {B, n, n_kv_heads, head_dim});
  if (tracer) {
    tracer->record(snapshot + "attn.q", heads_first(q.value()));
    tracer->record(snapshot + "attn.k", heads_first(k.value()));
    tracer->record(snapshot + "attn.v", heads_first(v.value()));
  }

  // 2. RoPE on Q and K at the absolute positions start .. start+n-1. The layout stays
  //    (B, n, heads, head_dim); the snapshots show it heads first, (B, heads, n, head_dim).
  q = rope(q, start, static_cast<Scalar>(rope_base));
  k = rope(k, start, static_cast<Scalar>(rope_base));
  if (tracer) {
    tracer->record(snapshot + "attn.rope_q", heads_first(q.value()));
    tracer->record(snapshot + "attn.rope_k", heads_first(k.value()));
  }

  const Scalar scale = 1 / std::sqrt(static_cast<Scalar>(head_dim));
  if (cache && !is_recording() && !tracer) {
    // Generation under NoGradGuard, the common case: nothing is recorded and nothing traced, so
    // steps 3-8 run as one loop over the cache's own storage (attend_to_cache above): the new
    // keys and values are stored, and each query reads the cached ones in place. Same numbers
    // as the steps below; the tests compare the logits with and without the cache.
    cache->append(layer, k.value(), v.value());
    const Tensor mix(attend_to_cache(*cache, layer, q.value(), scale, start));
    return wo.forward(reshape(mix, {B, n, n_heads * head_dim}));  // 9. W_O
  }

  if (!cache && !tracer && is_recording()) {
    // Training, the common case: recording, nothing traced, no KV cache (step 3 does nothing and
    // step 4 only chooses KV head h / n_rep, which the op does too). Steps 5-8 run as one fused op,
    // causal_attention, which computes what they compute: the same numbers to rounding, and the
    // same gradients (the tests compare the logits and every parameter gradient of both paths),
    // without storing the (B, n_heads, n, m) scores and weights or their gradients: per block of
    // 32 query rows it makes scores -> causal softmax -> mix with V in a small scratch and keeps
    // each row's logsumexp, from which the backward pass recomputes the weights.
    const Tensor mix = causal_attention(q, k, v, scale);  // (B, n, n_heads, head_dim)
    return wo.forward(reshape(mix, {B, n, n_heads * head_dim}));  // 9. W_O
  }

  // 3. KV cache: positions come first in its storage, (B, capacity, n_kv_heads, head_dim), so
  //    the n new positions are appended and the first m read back along axis 1 with one copy per
  //    batch row. Afterwards k and v hold all m = start + n positions:
  //    (B, m, n_kv_heads, head_dim).
  if (cache && !is_recording()) {
    // Under NoGradGuard with a tracer (the inspector): no gradient has to reach the new keys, so
    // store them first and read all m positions back at once (one copy instead of two: the
    // cached copy and the concat below).
    cache->append(layer, k.value(), v.value());
    k = Tensor(cache->cached_keys(layer, m));
    v = Tensor(cache->cached_values(layer, m));
  } else if (cache) {
    // While recording: positions 0 .. start-1 come from the cache (constants), the new post-RoPE
    // ones are stored there for the next call and keep their gradients.
    Tensor past_k(cache->cached_keys(layer, start));
    Tensor past_v(cache->cached_values(layer, start));
    cache->append(layer, k.value(), v.value());
    if (start > 0) {
      k = concat({past_k, k}, 1);
      v = concat({past_v, v}, 1);
    }
  }

  // 4. GQA: query head h uses KV head h / n_rep (n_rep = n_heads / n_kv_heads query heads per KV
  //    head). attention_scores and attention_mix below read KV head h / n_rep directly for query
  //    head h: the same numbers as expanding k and v with repeat_kv, without making the copies.

  // 5. Scores S = Q K^T / sqrt(d_k) per head: (B, n_heads, n, m).
  // (The 1/sqrt(d_k) is the gemm's scale factor: no separate division pass.)
  // The causal mask of step 6 is built first and given to the product: the scores it masks
  // (key j > start + i, about half of them) are not computed but are -inf at once, which is
  // what step 6 would make of them.
  const Mask mask = causal_mask(n, m, start);  // (n, m), broadcast over B and heads
  Tensor scores = attention_scores(q, k, scale, mask);
  if (tracer) {
    // The snapshot shows the scores before the mask, every one of them: computed again in full
    // for it (not recorded on the tape, and only when tracing).
    NoGradGuard no_grad;
    tracer->record(snapshot + "attn.scores", attention_scores(q, k, scale).value());
  }

  // 6. Causal mask: key j > start + i is in the future of query i and gets -inf (already done
  //    inside step 5's product; the snapshot shows the mask itself).
  if (tracer) tracer->record(snapshot + "attn.mask", mask_as_numbers(mask), false);

  // 7. Softmax over the keys: each row of attention weights sums to 1.
  // masked_softmax = masked_fill(scores, mask, -inf) followed by softmax, fused into one pass
  // (masked keys get weight exactly 0; the values equal the two separate steps to the last bit).
  Tensor weights = masked_softmax(scores, mask);
  if (tracer) tracer->record(snapshot + "attn.softmax", weights.value());

  // 8. Mix with V: each query's output is the weighted average of the values, per head:
  //    weights_h @ V_{h / n_rep}, written as (B, n, n_heads, head_dim). The masked weights are
  //    0, so the mask lets the product skip them (the same numbers as without it).
  Tensor mix = attention_mix(weights, v, mask);
  if (tracer) {
    tracer->record(snapshot + "attn.mix", heads_first(mix.value()));  // (B, heads, n, head_dim)
  }

  // 9. W_O: the heads of each position are already side by side, so reshaping to
  //    (B, n, n_heads * head_dim) concatenates them; then project back to d_model.
  Tensor out = wo.forward(reshape(mix, {B, n, n_heads * head_dim}));
  if (tracer) tracer->record(snapshot + "attn.out", out.value());
  return out;
}

}  // namespace GLASS_PRECISION
}  // namespace glass
