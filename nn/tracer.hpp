#pragma once
// Tracer: named snapshots of a forward pass, for the inspector and the tutorials.

#include <map>
#include <string>
#include <vector>

#include "autograd/tensor.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

/// Records copies of intermediate values of one forward pass, with the batch axis removed
/// (batch element `batch_index`). Attach it by passing it to Decoder::forward; a null tracer
/// costs nothing.
///
/// Snapshot names (L = layer index: the block's module path "layers.L"; the attention steps
/// are those of Attention::forward_reference, which runs whenever a tracer is given), shapes
/// for the default model with n new tokens and m keys:
///   "embeddings"            (n, d_model)      token embeddings
///   "layers.L.attn.q"       (4, n, 32)        queries, per head, before RoPE
///   "layers.L.attn.k"       (2, n, 32)        new keys, per KV head, before RoPE
///   "layers.L.attn.v"       (2, n, 32)        new values, per KV head
///   "layers.L.attn.rope_q"  (4, n, 32)        queries after RoPE
///   "layers.L.attn.rope_k"  (2, n, 32)        new keys after RoPE
///   "layers.L.attn.scores"  (4, n, m)         QK^T / sqrt(head_dim), before the mask
///   "layers.L.attn.mask"    (n, m)            1 where masked (future), 0 elsewhere
///   "layers.L.attn.softmax" (4, n, m)         attention weights (rows sum to 1)
///   "layers.L.attn.mix"     (4, n, 32)        weights @ V, per head
///   "layers.L.attn.out"     (n, d_model)      after W_O
///   "layers.L.out"          (n, d_model)      the block's output (residual stream)
///   "logits"                (n, vocab_size)
///   "probs"                 (n, vocab_size)   softmax of the logits (next-token probabilities)
class Tracer {
 public:
  /// Records batch element `batch_index` of every snapshot that has a batch axis.
  explicit Tracer(std::size_t batch_index = 0) : batch_index_(batch_index) {}

  /// Stores a copy of `value` under `name`; when `has_batch_axis`, axis 0 is the batch and
  /// only element batch_index() is kept.
  void record(const std::string& name, const Array& value, bool has_batch_axis = true);
  /// Whether a snapshot named `name` was recorded.
  bool has(const std::string& name) const;
  /// Throws std::out_of_range listing the valid names when `name` was not recorded.
  const Array& get(const std::string& name) const;
  /// Recorded names in recording order.
  const std::vector<std::string>& names() const { return order_; }
  /// Forgets every snapshot (batch_index() is kept).
  void clear();
  std::size_t batch_index() const { return batch_index_; }

  /// The per-layer attention snapshot names, in the order of the nine steps ("attn.q", ..., "attn.out").
  static const std::vector<std::string>& attention_snapshots();

 private:
  std::size_t batch_index_;
  std::map<std::string, Array> values_;
  std::vector<std::string> order_;
};

}  // namespace GLASS_PRECISION
}  // namespace glass
