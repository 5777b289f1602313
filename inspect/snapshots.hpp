#pragma once
// The snapshot catalogue: what each tracer snapshot of the decoder means — its head axis, what
// its rows and columns are, one sentence of meaning. The data functions (inspect.cpp) and every
// view (terminal, HTML) read it from here.

#include <cstddef>
#include <string>
#include <vector>

namespace glass {

/// Which head axis a per-layer snapshot has (nn/tracer.hpp: Q and the weights have n_heads
/// heads, projected K/V have n_kv_heads).
enum class HeadAxis { none, query, kv };

/// What one snapshot holds, after the batch axis is removed.
struct SnapshotInfo {
  const char* name;  ///< relative to its layer ("attn.q") or model-wide ("logits")
  HeadAxis head_axis;
  const char* rows;  ///< meaning of the rows, e.g. "query position i"
  const char* cols;  ///< meaning of the columns, e.g. "key position j"
  bool rows_are_positions, cols_are_positions, cols_are_vocab;
  const char* meaning;  ///< one sentence, e.g. "queries per head, before RoPE"
};

/// Every snapshot the decoder records, in recording order within a layer (attn.q ... out),
/// then the model-wide ones (embeddings, logits, probs).
const std::vector<SnapshotInfo>& snapshot_catalogue();

/// The entry of `name` (relative, e.g. "attn.softmax", or model-wide); nullptr when unknown.
const SnapshotInfo* snapshot_info(const std::string& name);

/// The meaning sentence of `name`, or "" when it is not in the catalogue.
const char* meaning_of(const std::string& name);

}  // namespace glass
