#pragma once
// Head scores: numbers that say what kind of attention head a head is, read off its attention
// pattern A (n, n), A[t][j] = the weight query position t puts on key position j (rows sum
// to 1, A[t][j] = 0 for j > t: the causal mask).

#include <cstdint>

#include "interp/run.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

/// Previous-token score: the mean attention from each position to the one just before it,
///   (1 / (n-1)) * sum_{t=1}^{n-1} A[t][t-1],
/// 1 for a head that always looks one token back (Olsson et al. 2022, "In-context Learning
/// and Induction Heads", section "previous token heads"; TransformerLens's
/// detect_head(..., "previous_token_head") scores the same sub-diagonal). Position 0 has no
/// previous token and is left out. pattern (n, n), n >= 2; std::invalid_argument otherwise.
double previous_token_score(const Array& pattern);

/// Induction score (Olsson et al. 2022, "In-context Learning and Induction Heads", section
/// "Key concepts", the prefix-matching score): on a sequence of `period` random tokens
/// repeated twice (n = 2 * period), the mean attention from each position t of the second copy
/// to the position right after the earlier occurrence of its token, t - period + 1:
///   (1 / period) * sum_{t=period}^{2 period - 1} A[t][t - period + 1],
/// 1 for a perfect induction head (it attends to the token that came next last time).
/// pattern (n, n) with n = 2 * period, period >= 1; std::invalid_argument otherwise.
double induction_score(const Array& pattern, std::size_t period);

/// First-position ("attention sink") share: the mean attention each position puts on position
/// 0, (1 / (n-1)) * sum_{t=1}^{n-1} A[t][0] (position 0, which can only attend to itself, is
/// left out). Xiao et al. 2024, "Efficient Streaming Language Models with Attention Sinks"
/// name the effect. pattern (n, n), n >= 2; std::invalid_argument otherwise.
double first_position_share(const Array& pattern);

/// `period` token ids uniform in [0, vocab_size) from `seed` (std::mt19937_64), then the same
/// `period` ids again: the probe of induction_score, (2 * period).
Tokens repeated_random_tokens(std::size_t period, std::size_t vocab_size, std::uint64_t seed);

/// The three scores of every head, (n_layers, n_heads) each.
struct HeadScores {
  Array previous_token;
  Array induction;
  Array first_position;
};

/// The head scores of the model on `tokens` = a sequence of `period` tokens repeated twice
/// (repeated_random_tokens), from the attention patterns "layers.L.attn.softmax" of one
/// forward pass. std::invalid_argument when tokens.size() != 2 * period or the second half
/// does not repeat the first.
HeadScores head_scores(const Decoder& model, const Tokens& tokens, std::size_t period);

}  // namespace GLASS_PRECISION
}  // namespace glass
