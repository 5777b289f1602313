// The snapshot catalogue: what each tracer snapshot means. See snapshots.hpp.

#include "inspect/snapshots.hpp"

namespace glass {

const std::vector<SnapshotInfo>& snapshot_catalogue() {
  static const std::vector<SnapshotInfo> table = {
      {"attn.q", HeadAxis::query, "position", "dim", true, false, false,
       "queries per head, before RoPE"},
      {"attn.k", HeadAxis::kv, "position", "dim", true, false, false,
       "new keys per KV head, before RoPE"},
      {"attn.v", HeadAxis::kv, "position", "dim", true, false, false, "new values per KV head"},
      {"attn.rope_q", HeadAxis::query, "position", "dim", true, false, false,
       "queries after RoPE (rotated by position)"},
      {"attn.rope_k", HeadAxis::kv, "position", "dim", true, false, false,
       "keys after RoPE (rotated by position)"},
      {"attn.scores", HeadAxis::query, "query position i", "key position j", true, true, false,
       "QK^T / sqrt(head_dim), before the causal mask"},
      {"attn.mask", HeadAxis::none, "query position i", "key position j", true, true, false,
       "causal mask: 1 = future key (forbidden), 0 = visible"},
      {"attn.softmax", HeadAxis::query, "query position i", "key position j", true, true, false,
       "attention weights: softmax over keys, each row sums to 1"},
      {"attn.mix", HeadAxis::query, "position", "dim", true, false, false,
       "weights @ V: each position's mix of the values it looks at"},
      {"attn.out", HeadAxis::none, "position", "feature", true, false, false,
       "heads concatenated and projected by W_O"},
      {"out", HeadAxis::none, "position", "feature", true, false, false,
       "the block's output: residual stream after attention and SwiGLU"},
      {"embeddings", HeadAxis::none, "position", "feature", true, false, false,
       "token embeddings (input of layer 0)"},
      {"logits", HeadAxis::none, "position", "vocabulary entry", true, false, true,
       "next-token logits at every position (LM head)"},
      {"probs", HeadAxis::none, "position", "vocabulary entry", true, false, true,
       "next-token probabilities: softmax of the logits, each row sums to 1"},
  };
  return table;
}

const SnapshotInfo* snapshot_info(const std::string& name) {
  for (const SnapshotInfo& info : snapshot_catalogue())
    if (name == info.name) return &info;
  return nullptr;
}

const char* meaning_of(const std::string& name) {
  const SnapshotInfo* info = snapshot_info(name);
  return info ? info->meaning : "";
}

}  // namespace glass
