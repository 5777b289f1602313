// Grouped-query causal self-attention with RoPE and a KV cache, the reference path: read
// Attention::forward_reference top to bottom, one numbered step per arrow of
//   X -> Q/K/V -> (QK-norm) -> RoPE on Q/K -> KV cache -> GQA expansion -> QK^T/sqrt(d_k) ->
//   causal mask -> softmax -> mix with V -> W_O,
// each on the primitive ops of autograd/ops.hpp (Linear, rope, concat, repeat_kv, matmul,
// masked_fill, softmax) and each followed by its tracer snapshot (the last three are hook points, where a hook
// may also replace the value: nn/tracer.hpp). This is the code the
// inspector, `glass gradcheck` and the tutorials run. The fast path (nn/attention_fast.cpp)
// computes the same numbers with fused kernels; tests/nn/attention_paths_f64_test.cpp and
// tests/train/attention_paths_test.cpp compare them.

#include "nn/decoder.hpp"

#include "autograd/kernels/kernels.hpp"

#include <xtensor/xmanipulation.hpp>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>

namespace glass {
inline namespace GLASS_PRECISION {

namespace {

// (B, n, heads, head_dim) -> (B, heads, n, head_dim): how the snapshots show q, k and v (one
// matrix per head). A copy for the tracer only; nothing is recorded on the tape.
Array heads_first(const Tensor& x) { return xt::transpose(x.value(), {0, 2, 1, 3}); }

// The boolean mask as numbers for its snapshot: 1 where masked, 0 elsewhere.
Array as_numbers(const Mask& mask) { return xt::cast<Scalar>(mask); }

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
      rope_base(config.rope_base),
      qk_norm(config.qk_norm),
      norm_eps(config.norm_eps),
      unit_gain_(Tensor::ones({config.head_dim()})) {
  register_module("wq", wq);
  register_module("wk", wk);
  register_module("wv", wv);
  register_module("wo", wo);
  set_ops_path(config.ops_path);
}

Tensor Attention::forward(const Tensor& x, LayerKVCache* cache, Tracer* tracer) const {
  if (x.dim() != 3) {
    throw std::invalid_argument("Attention::forward: x must have shape (B, n, d_model), got " +
                                shape_str(x.shape()));
  }
  // The switch (OpsPath, nn/config.hpp). A tracer records the reference path's steps.
  if (ops_path() == OpsPath::fast && !tracer) return forward_fast(x, cache);
  return forward_reference(x, cache, tracer);
}

std::string Attention::snapshot_name(const std::string& step) const {
  const std::string suffix = "attention";
  std::string block = path();
  if (block.size() >= suffix.size() &&
      block.compare(block.size() - suffix.size(), suffix.size(), suffix) == 0)
    block.erase(block.size() - suffix.size());  // "layers.2.attention" -> "layers.2."
  else if (!block.empty())
    block += ".";
  return block + "attn." + step;
}

// QK-norm as modded-nanogpt's train_gpt.py writes it, `q, k = norm(q), norm(k)` right before
// `q, k = self.rotary(q), self.rotary(k)`, with norm(x) = F.rms_norm(x, (x.size(-1),)): no
// learned gain (nanochat's gpt.py uses the same parameter-free norm). Without a gain the order
// does not matter: RoPE rotates pairs of coordinates, which keeps each head's RMS, so norm then
// rotate equals rotate then norm (nanochat's order) up to rounding. No gain also means no new
// weights, and the KV cache keeps the normalised, rotated keys as before. Both paths run it;
// the fast one through fast_rms_norm (same values to rounding).
void Attention::normalise_qk(Tensor& q, Tensor& k, bool fast) const {
  const Scalar eps = static_cast<Scalar>(norm_eps);
  q = fast ? fast_rms_norm(q, unit_gain_, eps) : rms_norm(q, unit_gain_, eps);
  k = fast ? fast_rms_norm(k, unit_gain_, eps) : rms_norm(k, unit_gain_, eps);
}

Tensor Attention::forward_reference(const Tensor& x, LayerKVCache* cache, Tracer* tracer) const {
  const std::size_t B = x.shape()[0];
  const std::size_t n = x.shape()[1];                               // new queries
  const std::size_t start = cache ? cache->length() : 0;            // positions already cached
  const std::size_t m = start + n;                                  // keys attended to
  const std::size_t position = cache ? cache->next_position() : 0;  // of the first new token
  const std::size_t n_rep = n_heads / n_kv_heads;                   // query heads per KV head
  auto snapshot = [&](const char* step, const Array& value, bool has_batch_axis = true) {
    if (tracer) tracer->record(snapshot_name(step), value, has_batch_axis);
  };

  // 1. X -> Q/K/V: three projections, split into heads: (B, n, heads, head_dim).
  Tensor q = reshape(wq.forward(x), {B, n, n_heads, head_dim});
  Tensor k = reshape(wk.forward(x), {B, n, n_kv_heads, head_dim});
  Tensor v = reshape(wv.forward(x), {B, n, n_kv_heads, head_dim});
  if (tracer) {
    snapshot("q", heads_first(q));
    snapshot("k", heads_first(k));
    snapshot("v", heads_first(v));
  }

  // 1b. QK-norm (config.qk_norm; off by default): each head's q and k divided by its RMS over
  //     head_dim, so a score q.k / sqrt(d_k) can never exceed sqrt(d_k) in size. See
  //     normalise_qk. The snapshots above show the projections before it.
  if (qk_norm) normalise_qk(q, k, /*fast=*/false);

  // 2. RoPE on Q and K: each pair of coordinates turns by an angle that grows with the absolute
  //    position position .. position+n-1 (= start .. start+n-1 unless a rolling cache dropped
  //    its oldest positions: LayerKVCache::drop_oldest).
  q = rope(q, position, static_cast<Scalar>(rope_base));
  k = rope(k, position, static_cast<Scalar>(rope_base));
  if (tracer) {
    snapshot("rope_q", heads_first(q));
    snapshot("rope_k", heads_first(k));
  }

  // 3. KV cache: the keys and values of the start cached positions come from the cache
  //    (constants, no gradient), the n new ones are stored there for the next call. Afterwards k
  //    and v hold all m = start + n positions: (B, m, n_kv_heads, head_dim).
  if (cache) std::tie(k, v) = cache->extend(k, v);
  // Heads first, one (positions, head_dim) matrix per head: (B, heads, positions, head_dim).
  q = transpose(q, 1, 2);
  k = transpose(k, 1, 2);
  v = transpose(v, 1, 2);

  // 4. GQA expansion: query head h uses KV head h / n_rep, so each KV head is repeated n_rep
  //    times: (B, n_heads, m, head_dim).
  k = repeat_kv(k, n_rep);
  v = repeat_kv(v, n_rep);

  // 5. Scores S = Q K^T / sqrt(d_k) per head: (B, n_heads, n, m).
  const Tensor scores = matmul(q, transpose(k, -2, -1)) / std::sqrt(static_cast<Scalar>(head_dim));
  snapshot("scores", scores.value());

  // 6. Causal mask: key j > start + i is in the future of query i and gets -inf.
  const Mask mask = causal_mask(n, m, start);  // (n, m), broadcast over B and heads
  const Tensor masked = masked_fill(scores, mask, -std::numeric_limits<Scalar>::infinity());
  snapshot("mask", as_numbers(mask), false);

  // 7. Softmax over the keys: each row of attention weights sums to 1 (masked keys get 0).
  //    A hook point (nn/tracer.hpp): a hook may read or replace the pattern.
  const Tensor weights = hook_point(tracer, snapshot_name("softmax"), softmax(masked));

  // 8. Mix with V: each query's output is the weighted average of the values, per head:
  //    (B, n_heads, n, head_dim). A hook point: each head's output before W_O.
  const Tensor mix = hook_point(tracer, snapshot_name("mix"), matmul(weights, v));

  // 9. W_O: positions first again, the heads of each position side by side
  //    (B, n, n_heads * head_dim), projected back to d_model. A hook point.
  return hook_point(tracer, snapshot_name("out"),
                    wo.forward(reshape(transpose(mix, 1, 2), {B, n, n_heads * head_dim})));
}

}  // namespace GLASS_PRECISION
}  // namespace glass
