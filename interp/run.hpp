#pragma once
// Shared pieces of the interpretability lab (interp/): token prompts, a forward pass with hooks,
// and the names of the residual-stream hook points.

#include <cstdint>
#include <string>
#include <vector>

#include "nn/decoder.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

/// A prompt as token ids (the tools work in tokens, whatever the tokenizer).
using Tokens = std::vector<std::int32_t>;

/// One attention head: block `layer` (0 .. n_layers-1), query head `head` (0 .. n_heads-1).
struct HeadRef {
  std::size_t layer = 0;
  std::size_t head = 0;
};

/// The prompt as a batch of one: (1, T). std::invalid_argument when empty.
Ids as_batch(const Tokens& tokens);

/// Runs the model on `tokens` (B, T) with `tracer` (its hooks and snapshots) under NoGradGuard
/// and returns the logits (B, T, vocab_size). A tracer sends the attention through the
/// reference path (Attention::forward_reference), so hooks see every hook point.
Array run_with_hooks(const Decoder& model, const Ids& tokens, Tracer& tracer);

/// The residual-stream hook points in order, n_layers + 1 of them: "embeddings" (the stream
/// entering block 0), then "layers.L.out" (the stream after block L, entering block L+1).
std::vector<std::string> residual_points(const Decoder& model);

/// "layers.L.attn.<step>" for block L.
std::string attention_point(std::size_t layer, const std::string& step);

/// Throws std::invalid_argument unless head.layer < n_layers and head.head < n_heads.
void check_head(const Decoder& model, const HeadRef& head);

}  // namespace GLASS_PRECISION
}  // namespace glass
