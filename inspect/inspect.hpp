#pragma once
// The inspector's data: run the decoder on a prompt with a Tracer attached and keep what is
// inside (every snapshot, the logits, the probabilities); choose a snapshot and a head, summarise,
// list the top-k next tokens. The views of it are apart: the terminal (render_terminal.hpp), JSON
// for scripts and notebooks (render_json.hpp) and one self-contained HTML page
// (render_html.hpp). Used by `glass inspect` (cli/inspect.cpp) and `glass serve`.
//
// Reading the snapshots (README, "Looking inside: glass inspect"): pick a layer, a head and a
// snapshot (attn.q, attn.k, attn.v, attn.rope_q, attn.rope_k, attn.scores, attn.mask,
// attn.softmax, attn.mix, attn.out); the batch axis is removed, so one head of attn.softmax
// is an (n, m) matrix. Attention weights mix context inside one head; output probabilities
// spread over the vocabulary. A high attention weight alone does not explain a prediction.

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "autograd/tensor.hpp"
#include "nn/config.hpp"

namespace glass {

struct LoadedModel;  // checkpoint/checkpoint.hpp

/// Bad inspector input the user can fix (layer/head out of range, unknown snapshot, a prompt
/// that is empty, too long or has characters outside the vocabulary). The message says what
/// is wrong and what would be valid.
class InspectError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Everything one forward pass over a prompt produced, batch axis removed (n = prompt length,
/// V = vocab_size). Snapshot names are the Tracer's (nn/tracer.hpp): "embeddings",
/// "layers.L.attn.q", ..., "layers.L.out"; "logits" and "probs" are kept apart.
struct Inspection {
  ModelConfig config;
  std::u32string prompt;             ///< the prompt's characters (one token each)
  std::vector<std::int32_t> tokens;  ///< (n) token ids
  std::vector<char32_t> vocab;       ///< vocab[id] = character of id; vocab[0] = U+FFFD (unknown)
  std::vector<std::pair<std::string, Array>> snapshots;  ///< every tracer snapshot, recording order
  Array logits;  ///< (n, V) next-token logits at every position
  Array probs;   ///< (n, V) softmax of the logits (rows sum to 1)

  std::size_t n() const { return tokens.size(); }
  /// True when a snapshot of that full name (e.g. "layers.0.attn.q") was recorded.
  bool has(const std::string& full_name) const;
  /// The snapshot with that full name; throws InspectError listing the recorded names.
  const Array& get(const std::string& full_name) const;
};

/// Runs `loaded.model` on `prompt` (UTF-8 decoded, one token per character) under NoGradGuard
/// with a Tracer, and returns every snapshot, the logits and the probabilities.
/// Throws InspectError for an empty prompt, a prompt longer than config.context_length, or
/// characters outside the vocabulary (all of them are named, with their positions) unless
/// `allow_unknown`: then they become the unknown id 0 and `unknown_count` (if given) says how many.
Inspection inspect(const LoadedModel& loaded, const std::u32string& prompt,
                   bool allow_unknown = false, std::size_t* unknown_count = nullptr);

/// The names `--snapshot` accepts for `layer` (relative, e.g. "attn.softmax", "out") followed
/// by the model-wide ones ("embeddings", "logits", "probs"), in recording order.
std::vector<std::string> snapshot_choices(const Inspection& inspection, std::size_t layer);

/// The full tracer name of a `--snapshot` choice: "attn.q" at layer 2 -> "layers.2.attn.q";
/// "embeddings"/"logits"/"probs" stay as they are. Throws InspectError when the layer is out of
/// range or the name is not a choice (the message lists the valid names).
std::string full_snapshot_name(const Inspection& inspection, std::size_t layer,
                               const std::string& name);

/// What the axes of a snapshot mean after choosing a head.
struct HeadView {
  Array values;                     ///< 1-D or 2-D: the chosen head's slice (or the whole snapshot)
  std::string rows, cols;           ///< axis meaning, e.g. "query position i" / "key position j"
  bool rows_are_positions = false;  ///< label rows with the prompt's characters
  bool cols_are_positions = false;  ///< label columns with the prompt's characters
  bool cols_are_vocab = false;      ///< label columns with vocabulary characters (logits, probs)
  bool per_head = false;            ///< the snapshot had a head axis and `head` was applied
  std::size_t kv_head = 0;          ///< for attn.k/v/rope_k: the KV head that query head uses
  std::string note;                 ///< e.g. the GQA mapping, or "scores before the mask"
};

/// Selects query head `head` from a snapshot (relative or model-wide name, see
/// snapshot_choices). Snapshots with a query-head axis (q, rope_q, scores, softmax, mix) take
/// head `head`; snapshots with a KV-head axis (k, v, rope_k) take the KV head that query head
/// uses under GQA, head / (n_heads / n_kv_heads). Throws InspectError when head >= n_heads.
HeadView head_view(const Inspection& inspection, std::size_t layer, std::size_t head,
                   const std::string& name);

/// min, max and mean of all entries (mean in double precision).
struct Summary {
  double min = 0, max = 0, mean = 0;
};
/// The Summary of `values` (any shape); all zeros for an empty array.
Summary summarize(const Array& values);

/// One candidate next token.
struct TopToken {
  std::int32_t id = 0;
  char32_t character = 0;
  double prob = 0;
};
/// The k most probable next tokens after position `position` (0-based), highest first (ties:
/// smaller id first); k is clamped to the vocabulary size. Throws InspectError for a bad position.
std::vector<TopToken> top_k(const Inspection& inspection, std::size_t position, std::size_t k);

}  // namespace glass
