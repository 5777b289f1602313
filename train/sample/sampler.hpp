#pragma once
// Generating text from a trained decoder: temperature, top-k, top-p (nucleus), seeded.

#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "nn/decoder.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

/// How the next character is chosen from the logits.
struct SamplingOptions {
  double temperature = 0.8;  ///< logits are divided by it; 0 = greedy (argmax), must be >= 0
  std::size_t top_k = 0;     ///< keep the k largest logits (ties at the k-th value all kept); 0 = off;
                             ///< values above the vocabulary size are clamped
  double top_p = 1.0;        ///< nucleus: keep the most probable tokens whose cumulative probability
                             ///< first reaches top_p (Holtzman et al. 2020); 1 = off; in (0, 1]
  bool use_kv_cache = true;  ///< false recomputes the whole window for every new token
};

/// Throws std::invalid_argument when temperature < 0 (or not finite) or top_p is not in (0, 1].
void validate(const SamplingOptions& options);

/// Top-k filter in place on one row of logits: every logit strictly below the k-th largest value
/// becomes -inf (so ties with the k-th value are kept). k = 0 or k >= size: no change.
void top_k_filter(std::vector<double>& logits, std::size_t k);

/// Top-p filter in place on one row of probabilities (summing to 1): sorts by probability
/// (descending, ties by smaller id first), keeps the shortest prefix whose cumulative sum reaches
/// p (at least one token), zeroes the rest and renormalises. p >= 1: no change.
void top_p_filter(std::vector<double>& probs, double p);

/// Softmax of one row (subtracting the max; -inf entries get probability 0).
std::vector<double> softmax_row(const std::vector<double>& logits);

/// The probabilities the sampler draws from for one row of logits: logits / temperature,
/// top-k, softmax, top-p. With temperature 0 all mass is on the argmax (smallest id on ties).
/// Throws std::runtime_error when a logit is NaN or +inf (corrupt weights) or all are -inf.
std::vector<double> next_token_probs(const std::vector<double>& logits,
                                     const SamplingOptions& options);

/// A uniform number in [0, 1) from 53 random bits of `rng` (the same on every platform).
double uniform01(std::mt19937_64& rng);

/// Draws an id from `probs` (need not be normalised) with one uniform01(rng); with temperature
/// 0 callers pass a one-hot vector and no randomness matters.
std::int32_t draw(const std::vector<double>& probs, std::mt19937_64& rng);

/// Autoregressive generation. `prompt` must hold at least one id. Every prediction sees the
/// last `window` tokens at most (window <= model context length; the training context is the
/// natural choice): a longer prompt is cropped to its last `window` ids.
///
/// With the KV cache, new tokens are fed one at a time while the text fits in the window; once
/// it does not, the window slides and the cache is rebuilt from the last `window` tokens for each
/// new token (with RoPE, keys cached for another window start cannot be reused exactly). Both
/// paths therefore compute the same thing, and print the same text with temperature 0.
///
/// The unknown token (id 0) is never generated: it stands for characters absent from the
/// training text, so its logit is set to -inf before sampling.
///
/// `on_token` (optional) is called with each new id as soon as it is chosen (for streaming).
/// Returns only the new ids (n_tokens of them).
std::vector<std::int32_t> generate(const Decoder& model, std::vector<std::int32_t> prompt,
                                   std::size_t n_tokens, std::size_t window,
                                   const SamplingOptions& options, std::mt19937_64& rng,
                                   const std::function<void(std::int32_t)>& on_token = {});

}  // namespace GLASS_PRECISION
}  // namespace glass
