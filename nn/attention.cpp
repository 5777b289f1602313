// Grouped-query causal self-attention with RoPE and a KV cache, in the order of seed 000:
// X -> Q/K/V -> RoPE on Q/K -> KV cache -> GQA expansion -> QK^T/sqrt(d_k) -> causal mask ->
// softmax -> mix with V -> W_O. Read Attention::forward top to bottom: one numbered step per
// arrow, each followed by its tracer snapshot.

#include "nn/decoder.hpp"

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
  const Shape shape = {batch_size_, n_kv_heads_, capacity_, head_dim_};
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
  if (shape.size() != 4 || shape[0] != batch_size_ || shape[1] != n_kv_heads_ ||
      shape[3] != head_dim_ || shape_of(new_values) != shape) {
    throw std::invalid_argument(
        "KVCache::append: expected keys and values of shape (" + std::to_string(batch_size_) +
        ", " + std::to_string(n_kv_heads_) + ", n, " + std::to_string(head_dim_) + "), got " +
        shape_str(shape) + " and " + shape_str(shape_of(new_values)));
  }
  const std::size_t n = shape[2];
  if (length_ + n > capacity_) {
    throw std::invalid_argument("KVCache::append: " + std::to_string(length_) + " cached + " +
                                std::to_string(n) + " new positions exceed the capacity " +
                                std::to_string(capacity_));
  }
  // For each (batch, head) the n new rows of head_dim go to positions length_ .. length_+n-1.
  const std::size_t rows = n * head_dim_;
  for (std::size_t bh = 0; bh < batch_size_ * n_kv_heads_; ++bh) {
    const std::size_t dst = (bh * capacity_ + length_) * head_dim_;
    std::copy_n(new_keys.data() + bh * rows, rows, keys[layer].data() + dst);
    std::copy_n(new_values.data() + bh * rows, rows, values[layer].data() + dst);
  }
}

namespace {

// The first m positions of one layer's cache storage (B, H_kv, capacity, D), each KV head
// written n_rep times in a row (the GQA expansion of repeat_kv): (B, H_kv * n_rep, m, D).
Array first_positions(const Array& storage, std::size_t m, std::size_t n_rep) {
  const Shape& full = shape_of(storage);
  const std::size_t capacity = full[2], head_dim = full[3];
  Array out = Array::from_shape({full[0], full[1] * n_rep, m, head_dim});
  Scalar* dst = out.data();
  for (std::size_t bh = 0; bh < full[0] * full[1]; ++bh) {
    const Scalar* src = storage.data() + bh * capacity * head_dim;
    for (std::size_t r = 0; r < n_rep; ++r, dst += m * head_dim) std::copy_n(src, m * head_dim, dst);
  }
  return out;
}

}  // namespace

Array KVCache::cached_keys(std::size_t layer, std::size_t m, std::size_t n_rep) const {
  if (n_rep == 0) throw std::invalid_argument("KVCache::cached_keys: n_rep must be at least 1");
  return first_positions(keys.at(layer), std::min(m, capacity_), n_rep);
}

Array KVCache::cached_values(std::size_t layer, std::size_t m, std::size_t n_rep) const {
  if (n_rep == 0) throw std::invalid_argument("KVCache::cached_values: n_rep must be at least 1");
  return first_positions(values.at(layer), std::min(m, capacity_), n_rep);
}

// ---- Attention -----------------------------------------------------------------------------

namespace {

// (B, n, H, D) -> (B, H, n, D), a plain copy; only used to show snapshots per head.
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

  // 2. RoPE on Q and K at the absolute positions start .. start+n-1, then heads first:
  //    (B, heads, n, head_dim).
  q = transpose(rope(q, start, static_cast<Scalar>(rope_base)), 1, 2);
  k = transpose(rope(k, start, static_cast<Scalar>(rope_base)), 1, 2);
  v = transpose(v, 1, 2);
  if (tracer) {
    tracer->record(snapshot + "attn.rope_q", q.value());
    tracer->record(snapshot + "attn.rope_k", k.value());
  }

  const std::size_t n_rep = n_heads / n_kv_heads;  // query heads per KV head
  if (cache && !is_recording()) {
    // 3-4. Generation under NoGradGuard, the common case: no gradient has to reach the new keys,
    //      so store them in the cache first and read all m positions back at once, each KV head
    //      already repeated for its n_rep query heads. Same values as steps 3-4 below, with one
    //      copy per token instead of three (cached copy, concat, repeat_kv).
    cache->append(layer, k.value(), v.value());
    k = Tensor(cache->cached_keys(layer, m, n_rep));  // (B, n_heads, m, head_dim)
    v = Tensor(cache->cached_values(layer, m, n_rep));
  } else {
    // 3. KV cache (while recording): the keys/values of positions 0 .. start-1 come from the
    //    cache (constants), the new post-RoPE ones are stored there for the next call and keep
    //    their gradients. Now k and v hold all m = start + n positions: (B, n_kv_heads, m, head_dim).
    if (cache) {
      Tensor past_k(cache->cached_keys(layer, start));
      Tensor past_v(cache->cached_values(layer, start));
      cache->append(layer, k.value(), v.value());
      if (start > 0) {
        k = concat({past_k, k}, 2);
        v = concat({past_v, v}, 2);
      }
    }

    // 4. GQA expansion: query head h uses KV head h / n_rep.
    k = repeat_kv(k, n_rep);  // (B, n_heads, m, head_dim)
    v = repeat_kv(v, n_rep);
  }

  // 5. Scores S = Q K^T / sqrt(d_k): (B, n_heads, n, m).
  // (The 1/sqrt(d_k) is the gemm's scale factor alpha: no separate division pass.)
  Tensor scores = matmul_nt(q, k, 1 / std::sqrt(static_cast<Scalar>(head_dim)));  // q @ k^T
  if (tracer) tracer->record(snapshot + "attn.scores", scores.value());

  // 6. Causal mask: key j > start + i is in the future of query i and gets -inf.
  const Mask mask = causal_mask(n, m, start);  // (n, m), broadcast over B and heads
  if (tracer) tracer->record(snapshot + "attn.mask", mask_as_numbers(mask), false);

  // 7. Softmax over the keys: each row of attention weights sums to 1.
  // masked_softmax = masked_fill(scores, mask, -inf) followed by softmax, fused into one pass
  // (masked keys get weight exactly 0; the values equal the two separate steps to the last bit).
  Tensor weights = masked_softmax(scores, mask);
  if (tracer) tracer->record(snapshot + "attn.softmax", weights.value());

  // 8. Mix with V: each query's output is the weighted average of the values.
  Tensor mix = matmul(weights, v);  // (B, n_heads, n, head_dim)
  if (tracer) tracer->record(snapshot + "attn.mix", mix.value());

  // 9. W_O: concatenate the heads back into (B, n, d_model) and project.
  Tensor out = wo.forward(reshape(transpose(mix, 1, 2), {B, n, n_heads * head_dim}));
  if (tracer) tracer->record(snapshot + "attn.out", out.value());
  return out;
}

}  // namespace GLASS_PRECISION
}  // namespace glass
