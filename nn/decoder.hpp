#pragma once
// The LLaMA-style character decoder: Linear, Embedding, RMSNorm, Attention (RoPE + GQA +
// KV cache), the feed-forward (SwiGLU, or ReLU² as a recipe option), Block, Decoder.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/ops.hpp"
#include "nn/config.hpp"
#include "nn/module.hpp"
#include "nn/tracer.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

/// y = x W^T, no bias. weight (out_features, in_features), PyTorch nn.Linear layout, drawn
/// from N(0, init_std^2) with `rng`.
class Linear : public Module {
 public:
  Linear(std::size_t in_features, std::size_t out_features, double init_std, Rng& rng);
  /// (..., in_features) -> (..., out_features); std::invalid_argument when the last axis of x
  /// is not in_features. linear, or fast_linear on the fast path (the same forward computation
  /// up to BLAS's gemv for one row; the backward pass reuses gradient buffers).
  Tensor forward(const Tensor& x) const;
  Tensor weight;
};

/// Token embedding table, weight (vocab_size, d_model) drawn from N(0, init_std^2).
class Embedding : public Module {
 public:
  Embedding(std::size_t vocab_size, std::size_t d_model, double init_std, Rng& rng);
  /// Row lookup: ids (B, T) -> (B, T, d_model); std::out_of_range for an id >= vocab_size.
  Tensor forward(const Ids& ids) const;
  Tensor weight;
};

/// RMSNorm (Zhang & Sennrich 2019): x / sqrt(mean(x^2) + eps) * weight over the last axis,
/// with learnable gain `weight` (d), initialised to 1.
class RMSNorm : public Module {
 public:
  RMSNorm(std::size_t d, double eps);
  /// (..., d) -> (..., d): rms_norm, or fast_rms_norm (the same values to rounding) on the fast
  /// path when no tracer is given: a traced forward runs the reference path, as Attention's.
  Tensor forward(const Tensor& x, const Tracer* tracer = nullptr) const;
  Tensor weight;
  double eps;
};

/// One layer's post-RoPE keys and values, for incremental decoding (generation). keys and values
/// are (B, capacity, n_kv_heads, head_dim), capacity = context_length, positions before heads
/// (the projections' layout, so one position of a batch row, all heads, is contiguous);
/// slots 0 .. length()-1 are filled, slot j holding the token at absolute position
/// first_position() + j. Plain values (no gradient flows into past positions), so it is meant
/// for use under NoGradGuard. Each Attention reads and writes only its own.
///
/// Rolling window: drop_oldest(n) forgets the n oldest slots and moves the rest to the front,
/// so generation can go on past the capacity. The keys keep the RoPE rotation of their absolute
/// position, and new tokens are rotated at their own absolute position (next_position()):
/// RoPE's q . k depends only on the distance between the two positions (RoFormer, Su et al. 2021, section 3.2),
/// so the cached keys stay valid when the window slides. llama.cpp shifts its cache the same way
/// ("context shift").
class LayerKVCache {
 public:
  LayerKVCache(std::size_t batch_size, std::size_t capacity, std::size_t n_kv_heads,
               std::size_t head_dim);
  std::size_t length() const { return length_; }  ///< positions already cached (= start)
  std::size_t capacity() const { return capacity_; }
  /// Absolute position of slot 0: 0 until drop_oldest is called, then the number of positions
  /// dropped so far.
  std::size_t first_position() const { return first_position_; }
  /// Absolute position of the next new token, first_position() + length(): the position RoPE
  /// rotates it by.
  std::size_t next_position() const { return first_position_ + length_; }
  /// Writes new keys and values (B, n, n_kv_heads, head_dim) at positions length() ..
  /// length()+n-1 without advancing length() (KVCache::advance does, once every layer wrote).
  /// Throws std::invalid_argument on a shape mismatch or when the positions do not fit.
  void append(const Array& new_keys, const Array& new_values);
  /// Step 3 of attention, "KV cache", as both attention paths run it: stores the new keys and
  /// values (B, n, n_kv_heads, head_dim) (append) and returns the keys and values of all
  /// m = length() + n positions, (B, m, n_kv_heads, head_dim): the cached ones as constants (no
  /// gradient), followed by the new ones as given (concat, so their gradient flows back).
  /// Does not advance length(). Throws as append.
  std::pair<Tensor, Tensor> extend(const Tensor& new_keys, const Tensor& new_values);
  /// Copies of the first `m` cached positions (m is capped at capacity()):
  /// (B, m, n_kv_heads, head_dim), one contiguous copy per batch row.
  Array cached_keys(std::size_t m) const;
  Array cached_values(std::size_t m) const;
  /// Marks n more positions as cached. Throws std::invalid_argument past capacity().
  void advance(std::size_t n);
  /// Forgets the n oldest positions (n <= length(), else std::invalid_argument): slots
  /// n .. length()-1 move to 0 .. length()-n-1 and first_position() grows by n.
  void drop_oldest(std::size_t n);
  /// Forgets every position: length() and first_position() become 0.
  void clear() { length_ = 0, first_position_ = 0; }
  Array keys, values;  ///< (B, capacity, n_kv_heads, head_dim)

 private:
  std::size_t length_ = 0;
  std::size_t first_position_ = 0;
  std::size_t capacity_ = 0;
  std::size_t batch_size_ = 0;
  std::size_t n_kv_heads_ = 0;
  std::size_t head_dim_ = 0;
};

/// The KV cache of the whole model: one LayerKVCache per decoder block (layers[i] belongs to
/// Decoder::layers[i]). Decoder::forward hands each block its part and advances all of them by
/// the number of new tokens at the end.
class KVCache {
 public:
  KVCache(const ModelConfig& config, std::size_t batch_size);
  std::size_t length() const { return layers.empty() ? 0 : layers[0].length(); }
  std::size_t capacity() const { return capacity_; }
  std::size_t batch_size() const { return batch_size_; }
  /// Absolute position of the oldest cached token (see LayerKVCache::first_position).
  std::size_t first_position() const { return layers.empty() ? 0 : layers[0].first_position(); }
  /// Forgets every cached position (length() and first_position() become 0); the storage is kept.
  void clear();
  /// Marks n more positions as cached in every layer. Throws std::invalid_argument past capacity().
  void advance(std::size_t n);
  /// Forgets the n oldest positions of every layer (LayerKVCache::drop_oldest): the rolling
  /// window of generation. Throws std::invalid_argument when n > length().
  void drop_oldest(std::size_t n);
  std::vector<LayerKVCache> layers;

 private:
  std::size_t capacity_ = 0;
  std::size_t batch_size_ = 0;
};

/// Grouped-query causal self-attention in nine steps:
/// X -> Q/K/V -> (QK-norm, when config.qk_norm) -> RoPE on Q/K -> KV cache -> GQA expansion
/// (repeat_kv) -> QK^T/sqrt(d_k) -> causal mask (masked_fill) -> softmax -> mix with V (matmul)
/// -> W_O.
/// forward_reference (nn/attention.cpp) runs them on the reference ops; forward_fast
/// (nn/attention_fast.cpp) runs steps 3-8 in the fused kernels of autograd/kernels/.
class Attention : public Module {
 public:
  Attention(const ModelConfig& config, Rng& rng);
  /// x (B, n, d_model) -> (B, n, d_model). Without a cache the n positions are 0 .. n-1. With a
  /// cache holding start = cache->length() positions, the new ones are rotated by RoPE at the
  /// absolute positions cache->next_position() .. +n-1, attend over the m = start + n cached and
  /// new keys, and are written into it (the caller advances it). Runs forward_fast on the fast
  /// path (ops_path()) when no tracer is given, forward_reference otherwise. std::invalid_argument when x is not 3-D.
  Tensor forward(const Tensor& x, LayerKVCache* cache = nullptr, Tracer* tracer = nullptr) const;
  /// The nine steps on matmul, masked_fill, softmax and repeat_kv; the tracer (if any) records
  /// each step as "<block path>.attn.q" ... ".attn.out" (see nn/tracer.hpp).
  Tensor forward_reference(const Tensor& x, LayerKVCache* cache, Tracer* tracer) const;
  /// The same numbers to rounding, steps 3-8 fused: causal_attention while training,
  /// attend_to_cache when generating under NoGradGuard with a cache.
  Tensor forward_fast(const Tensor& x, LayerKVCache* cache) const;
  /// The tracer's name of a step: path "layers.2.attention" -> "layers.2.attn.<step>".
  std::string snapshot_name(const std::string& step) const;
  Linear wq, wk, wv, wo;
  std::size_t n_heads, n_kv_heads, head_dim;
  double rope_base;
  bool qk_norm;     ///< config.qk_norm: step 1b normalises q and k per head
  double norm_eps;  ///< QK-norm's epsilon (config.norm_eps)

 private:
  Tensor unit_gain_;  // (head_dim) ones, a constant: QK-norm has no learned gain
  // Step 1b on the projections q (B, n, heads, head_dim) and k: RMSNorm over head_dim, with
  // rms_norm, or fast_rms_norm when `fast`.
  void normalise_qk(Tensor& q, Tensor& k, bool fast) const;
};

/// The feed-forward of a block: (..., d_model) -> (..., d_model). SwiGLU or ReLUSquared, as
/// config.mlp says (make_feed_forward).
class FeedForward : public Module {
 public:
  virtual Tensor forward(const Tensor& x) const = 0;
};

/// SwiGLU feed-forward (Shazeer 2020): w2(silu(w1 x) * w3 x); w1 gate (ffn_hidden, d_model),
/// w3 up (ffn_hidden, d_model), w2 down (d_model, ffn_hidden), N(0, init_std / sqrt(2 n_layers)).
class SwiGLU : public FeedForward {
 public:
  SwiGLU(const ModelConfig& config, Rng& rng);
  /// (..., d_model) -> (..., d_model): w2(silu(w1 x) * w3 x), the gate as silu_mul on the fast
  /// path.
  Tensor forward(const Tensor& x) const override;
  Linear w1, w2, w3;
};

/// ReLU² feed-forward (So et al. 2021, "Primer"; the MLP of modded-nanogpt and
/// nanochat): w2(relu(w3 x)^2), no gate. w3 up (ffn_hidden, d_model), w2 down (d_model,
/// ffn_hidden), N(0, init_std / sqrt(2 n_layers)) for w2 as SwiGLU's. 2 * d_model * ffn_hidden
/// weights: two thirds of SwiGLU's at the same ffn_hidden.
class ReLUSquared : public FeedForward {
 public:
  ReLUSquared(const ModelConfig& config, Rng& rng);
  /// (..., d_model) -> (..., d_model) on the reference ops relu and pow on both paths.
  Tensor forward(const Tensor& x) const override;
  Linear w2, w3;
};

/// The feed-forward config.mlp names, its weights drawn from `rng`.
std::unique_ptr<FeedForward> make_feed_forward(const ModelConfig& config, Rng& rng);

/// Pre-norm decoder block: x = x + attention(attention_norm(x)); x = x + feed_forward(ffn_norm(x)).
class Block : public Module {
 public:
  Block(const ModelConfig& config, Rng& rng);
  /// x (B, n, d_model) -> (B, n, d_model); cache (this block's part) and tracer as in
  /// Attention::forward.
  /// The fast path's residual adds are fast_add.
  Tensor forward(const Tensor& x, LayerKVCache* cache = nullptr, Tracer* tracer = nullptr) const;
  /// The SwiGLU feed-forward (what the exporters write); std::logic_error when config.mlp is
  /// another.
  const SwiGLU& swiglu() const;
  RMSNorm attention_norm;
  Attention attention;
  RMSNorm ffn_norm;
  std::unique_ptr<FeedForward> feed_forward;  ///< SwiGLU or ReLUSquared (config.mlp)
};

/// The whole model: tok_embeddings -> layers -> norm -> output (LM head, not tied).
/// Parameter names follow Meta LLaMA / llama2.c (tok_embeddings.weight,
/// layers.{i}.attention.wq.weight, ..., norm.weight, output.weight).
class Decoder : public Module {
 private:
  ModelConfig config_;  // first: the members below are built from it
  Rng init_rng_;        // second: draws the initial weights, seeded by the constructor

 public:
  /// Validates the config (std::invalid_argument) and initialises as nanoGPT from `seed`:
  /// every matrix N(0, init_std^2), wo and w2 N(0, (init_std / sqrt(2 n_layers))^2), RMSNorm
  /// gains 1. The same seed gives the same weights. Each parameter tensor gets its full name.
  Decoder(const ModelConfig& config, std::uint64_t seed);
  /// tokens (B, T) -> logits (B, T, vocab_size). With a cache, tokens are the new ones after the
  /// cached ones (absolute positions cache->first_position() + cache->length() ..), and the cache
  /// advances by T (use it under NoGradGuard).
  /// A tracer records the snapshots listed in nn/tracer.hpp and runs its hooks at the hook
  /// points listed there (interventions: interp/). Throws std::invalid_argument when
  /// tokens are not 2-D or empty, start + T exceeds context_length, an id is outside
  /// [0, vocab_size), the cache was made for another batch size or the tracer's batch element
  /// does not exist; the cache is then unchanged.
  Tensor forward(const Ids& tokens, KVCache* cache = nullptr, Tracer* tracer = nullptr) const;
  /// The model's last steps on a residual stream x (..., d_model) -> logits (..., vocab_size):
  /// the final RMSNorm, the LM head and, when config().logit_softcap = c > 0, soft-capping
  /// c tanh(logits / c) (Gemma 2). What forward ends with, and what the logit lens reads.
  Tensor logits_of(const Tensor& x, const Tracer* tracer = nullptr) const;
  const ModelConfig& config() const { return config_; }
  /// Switches every layer to `path` and records it in config().ops_path; the weights stay.
  void set_ops_path(OpsPath path) override;

  Embedding tok_embeddings;
  std::vector<std::unique_ptr<Block>> layers;
  RMSNorm norm;
  Linear output;
};

}  // namespace GLASS_PRECISION
}  // namespace glass
