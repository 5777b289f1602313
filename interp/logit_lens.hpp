#pragma once
// The logit lens (nostalgebraist, 2020, "interpreting GPT: the logit lens", LessWrong): read the
// residual stream after each block as if it were the last one, through the final RMSNorm and
// the output matrix, and see which next tokens it already predicts.

#include <string>
#include <vector>

#include "interp/run.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

/// The lens of one prompt of T tokens, at the S = n_layers + 1 residual-stream points of
/// residual_points() ("embeddings", "layers.0.out", ..., "layers.{n_layers-1}.out").
struct LogitLens {
  std::vector<std::string> points;  ///< (S) hook-point names, rows of the arrays below
  Tokens tokens;                    ///< (T) the prompt
  Array logits;  ///< (S, T, vocab_size) output(norm(stream)), in nats (log-odds up to a constant)
  Array probs;   ///< (S, T, vocab_size) softmax of logits over the vocabulary
  Ids top_ids;  ///< (S, T, k) the k most probable next tokens, most probable first (ties: lower id first)
  Array top_probs;  ///< (S, T, k) their probabilities
  /// (S, T-1): probability of the true next token tokens[t+1] at position t.
  Array next_prob;
};

/// The logit lens of `tokens` (T >= 1 ids, T <= context_length), with the top `top_k` tokens
/// (1 <= top_k <= vocab_size) per point and position. Each stream (1, T, d_model) goes through
/// model.norm and model.output exactly as Decoder::forward sends the last one, so the last row
/// equals the model's logits bit for bit (on the path a traced forward takes).
/// std::invalid_argument for a bad top_k, an empty prompt or ids the model rejects.
LogitLens logit_lens(const Decoder& model, const Tokens& tokens, std::size_t top_k = 5);

/// The `k` largest entries of `row` (n) as indices, largest first (ties: lower index first).
std::vector<std::size_t> top_k_indices(const Scalar* row, std::size_t n, std::size_t k);

}  // namespace GLASS_PRECISION
}  // namespace glass
