#pragma once
// Browsing a sparse autoencoder's latents (interp/sae.hpp), as Neuronpedia's feature pages and
// SAELens's dashboards show them: for one latent, the contexts where it fires hardest, the
// histogram of its activations and the tokens its decoder direction promotes and suppresses; for
// a prompt, which latents fire at each position.
//
// The activations are the SAE's latents z = ReLU(TopK(W_enc (x - b_pre) + b_enc)) of the
// residual stream x at the SAE's point (a residual hook point, interp/run.hpp residual_points),
// read on a text cut into non-overlapping windows of `window` tokens, each window run as its own
// prompt (positions 0 .. window-1), as the model saw windows in training. Only the k latents kept
// by TopK are stored per token, so a whole validation split fits in memory (N k numbers).
//
// Shapes: N text tokens, d = d_model, F = n_latents, V = vocab_size.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "interp/run.hpp"
#include "interp/sae.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

/// The SAE's latents on every token of a text, sparse: token t's k (latent, activation) pairs
/// are latents[t k .. (t+1) k) and values[t k .. (t+1) k); pairs with activation 0 (TopK kept
/// fewer than k positive values) mean nothing fired.
struct SparseCodes {
  std::size_t tokens = 0;              ///< N
  std::size_t k = 0;                   ///< pairs per token (the SAE's k)
  std::size_t n_latents = 0;           ///< F
  std::vector<std::uint32_t> latents;  ///< (N k)
  std::vector<float> values;           ///< (N k), >= 0
};

/// Index of `point` among residual_points(model); std::invalid_argument listing them else.
std::size_t residual_point_index(const Decoder& model, const std::string& point);

/// The residual stream at residual_points(model)[point] for `tokens` (B, T) -> (B T, d), read
/// by a hook (no snapshot is stored), under NoGradGuard.
Array residual_at(const Decoder& model, const Ids& tokens, std::size_t point);

/// The SAE's latents on `text` (its ids), in non-overlapping windows of `window` tokens (the last
/// one shorter), `batch` windows per forward pass. std::invalid_argument when the text is empty,
/// window is 0 or above the model's context length, or the SAE's d_model is not the model's.
SparseCodes encode_text(const Decoder& model, const SparseAutoencoder& sae, std::size_t point,
                        const Tokens& text, std::size_t window, std::size_t batch = 16);

/// Where a latent fired: the token's index in the text and its activation.
struct LatentHit {
  std::size_t position = 0;
  double activation = 0;
};

/// One latent over a text: how often it fires, its strongest tokens and its histogram.
struct LatentSummary {
  std::size_t latent = 0;
  std::size_t tokens = 0;              ///< N, tokens read
  std::size_t fired = 0;               ///< tokens where its activation is > 0
  double max_activation = 0;           ///< 0 when it never fired
  double mean_when_fired = 0;          ///< mean activation over those tokens
  std::vector<LatentHit> top;          ///< the n_top strongest, by activation (ties: earlier first)
  std::vector<std::size_t> histogram;  ///< counts of the fired activations in `bins` equal bins
                                       ///< of (0, max_activation]; bin b holds
                                       ///< (b max/bins, (b+1) max/bins]
  /// fired / tokens: the share of tokens where it fires (its density, SAELens's
  /// "feature density"; 0 for an empty text).
  double density() const;
};

/// Latent `latent` of `codes`: its n_top strongest tokens and its histogram in `bins` bins.
/// std::invalid_argument when latent >= codes.n_latents or bins is 0.
LatentSummary summarize_latent(const SparseCodes& codes, std::size_t latent, std::size_t n_top = 10,
                               std::size_t bins = 20);

/// How often each latent fires over `codes` (F): the count of tokens where it is > 0.
std::vector<std::size_t> firing_counts(const SparseCodes& codes);

/// A token and a number (a logit effect, an activation).
struct TokenScore {
  std::int32_t token = 0;
  double score = 0;
};

/// What a latent's decoder direction does to the logits when added to the final residual stream:
/// effect[v] = sum_i W_dec[latent, i] g_i W_U[v, i], with g the final RMSNorm's gain and W_U the
/// output matrix (V, d). This is TransformerLens's and Neuronpedia's "logit weights" W_dec W_U
/// with the final norm's gain folded into W_U (TransformerLens's fold_ln) and its 1/rms scale
/// left out: that scale is positive and the same for every token, so it changes no ranking.
/// The direct path only: blocks after the SAE's point may change the effect.
struct LogitEffects {
  std::vector<TokenScore> promoted;    ///< the n largest effects, largest first
  std::vector<TokenScore> suppressed;  ///< the n smallest, smallest first
  std::vector<double> effect;          ///< (V) every token's effect
};

/// The logit effects of latent `latent` (above); n is capped at V. std::invalid_argument when
/// latent >= F or the SAE's d_model is not the model's.
LogitEffects latent_logit_effects(const Decoder& model, const SparseAutoencoder& sae,
                                  std::size_t latent, std::size_t n = 10);

/// A latent and its activation.
struct LatentActivation {
  std::size_t latent = 0;
  double activation = 0;
};

/// The latents that fire at each position of a prompt (T entries), the `top` strongest first.
/// One forward pass on the prompt (at most the context length). std::invalid_argument for an
/// empty or too long prompt.
std::vector<std::vector<LatentActivation>> prompt_latents(const Decoder& model,
                                                          const SparseAutoencoder& sae,
                                                          std::size_t point, const Tokens& prompt,
                                                          std::size_t top = 5);

/// A context of a latent's hit in a text, for printing: the text before the token, the token,
/// the text after, each decoded by `decode`.
struct HitContext {
  std::string before, token, after;
  double activation = 0;
};

/// The context of `hit` in `text`: up to `before` tokens before it and `after` tokens after it,
/// within the hit's window of `window` tokens (what the model saw when it fired), decoded by
/// `decode` (ids -> text).
HitContext hit_context(const Tokens& text, const LatentHit& hit, std::size_t window,
                       std::size_t before, std::size_t after,
                       const std::function<std::string(const Tokens&)>& decode);

/// A latent's unit decoder direction W_dec[latent] / |W_dec[latent]| (d), in double.
/// std::invalid_argument when latent >= F or the row is zero.
std::vector<double> latent_direction(const SparseAutoencoder& sae, std::size_t latent);

}  // namespace GLASS_PRECISION
}  // namespace glass
