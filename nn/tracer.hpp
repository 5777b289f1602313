#pragma once
// Tracer: named snapshots of a forward pass, for the inspector and the tutorials, and hook
// points where a hook may read or replace a value (interventions: ablation, patching).

#include <functional>
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
///
/// Hook points: places in the forward pass where hooks added with add_hook see the whole value,
/// batch axis included, and may change it in place (one line each in the forward code,
/// hook_point below):
///   "embeddings", "layers.L.mid", "layers.L.out"   (B, n, d_model)   the residual stream
///   "layers.L.attn.softmax"   (B, n_heads, n, m)   each head's attention pattern
///   "layers.L.attn.mix"       (B, n_heads, n, head_dim)  each head's output before W_O
///   "layers.L.attn.out"       (B, n, d_model)      the attention output after W_O
///   "layers.L.feed_forward.out" (B, n, d_model)    the MLP output
/// "layers.L.mid" (the stream after the attention add) and "layers.L.feed_forward.out" are hook
/// points only: they record no snapshot, so the snapshot list above stays as it is.
/// The residual stream entering block L is "embeddings" (L = 0) or "layers.{L-1}.out". A hook
/// runs before the snapshot is recorded, so the snapshot shows the value the model went on
/// with. When a hook changes the value, the forward pass continues with the changed value as
/// a constant (no gradient flows back through that point); when no hook changes it, the
/// original tensor goes on untouched. The hook-point vocabulary follows TransformerLens's
/// hook points (Nanda & Bloom 2022), in this model's module-path names.
class Tracer {
 public:
  /// A hook: called with the hook point's name and its value (full batch); may modify it.
  using Hook = std::function<void(const std::string& name, Array& value)>;

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

  /// Runs `hook` at every hook point named `name` (exact match; "" matches every hook point).
  /// Hooks at one point run in the order they were added.
  void add_hook(const std::string& name, Hook hook);
  /// Whether snapshots are stored (default true). With false, only hooks run: an intervention
  /// run does not pay for copies it does not need.
  void set_recording(bool on) { recording_ = on; }
  bool recording() const { return recording_; }

  /// Keeps a handle to the tensor that goes on at hook point `name`, so that its gradient can
  /// be read after a backward pass (watched(name).grad(); the gradient of an intermediate
  /// tensor survives the pass while a handle holds it). When the tape tracks nothing before the
  /// point (under NoGradGuard nothing changes; with the parameters' requires_grad off, the
  /// first watched point), the tensor goes on as a new leaf that requires grad, so the tape
  /// tracks what follows it; a tracked tensor goes on as it is, so no path is cut and the
  /// gradient is the total derivative.
  void watch(const std::string& name);
  /// The tensor of the last forward pass at watched hook point `name` (full batch);
  /// std::out_of_range when `name` is not watched or the pass did not reach it.
  const Tensor& watched(const std::string& name) const;

  /// A hook point: runs the hooks registered for `name` on a copy of x's value (full batch),
  /// then records the snapshot (batch element batch_index(), if recording() and `snapshot`).
  /// Returns x itself when no hook changed the value, else a constant tensor holding the
  /// changed value. std::invalid_argument when a hook changed the shape.
  Tensor point(const std::string& name, const Tensor& x, bool snapshot = true);

  /// The per-layer attention snapshot names, in the order of the nine steps ("attn.q", ..., "attn.out").
  static const std::vector<std::string>& attention_snapshots();

 private:
  /// point() without the watch: the hooks, the snapshot, and the tensor that goes on.
  Tensor run_hooks(const std::string& name, const Tensor& x, bool snapshot);

  std::size_t batch_index_;
  std::map<std::string, Array> values_;
  std::vector<std::string> order_;
  std::vector<std::pair<std::string, Hook>> hooks_;
  bool recording_ = true;
  std::map<std::string, Tensor> watched_;  // name -> the tensor (undefined until reached)
};

/// A hook point in a forward pass, one line each: `x = hook_point(tracer, "name", x);`
/// Without a tracer it returns x (no copy, no cost); otherwise tracer->point(name, x, snapshot).
inline Tensor hook_point(Tracer* tracer, const std::string& name, const Tensor& x,
                         bool snapshot = true) {
  return tracer ? tracer->point(name, x, snapshot) : x;
}

}  // namespace GLASS_PRECISION
}  // namespace glass
