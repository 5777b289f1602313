#pragma once
// The feature browser of a sparse autoencoder, for `glass sae inspect` and the features page of
// `glass serve` (one library both ask): a latent's top-activating contexts from a text, its
// activation histogram and the tokens its decoder direction promotes and suppresses; for a
// prompt, the latents that fire at each position. The numbers come from interp/sae_inspect.hpp;
// this file adds the checkpoint's tokenizer (ids -> text) and the JSON both front ends print.

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint.hpp"
#include "interp/sae_inspect.hpp"

namespace glass {

/// How much a latent's page shows.
struct LatentView {
  std::size_t contexts = 10;  ///< top-activating contexts
  std::size_t before = 20;    ///< tokens shown before the activating one (within its window)
  std::size_t after = 10;     ///< tokens shown after it
  std::size_t bins = 20;      ///< histogram bins
  std::size_t logits = 10;    ///< promoted and suppressed tokens, each
};

/// An SAE over a checkpoint, with the latents of a text computed once (encode_text over
/// non-overlapping windows of the checkpoint's window). The checkpoint and the SAE must outlive
/// it.
class SaeFeatures {
 public:
  /// `text` is the text the contexts come from (the validation split's ids); `point` the SAE's
  /// residual point. std::invalid_argument for an unknown point, an SAE of another d_model or
  /// an empty text.
  SaeFeatures(const Checkpoint& loaded, const SparseAutoencoder& sae, const std::string& point,
              Tokens text);

  /// One latent's page:
  ///   {"latent": 7, "n_latents": 1024, "point": "layers.1.out", "tokens": N, "fired": n,
  ///    "density": n/N, "max_activation": a, "mean_activation": m,
  ///    "contexts": [{"before": "...", "token": "x", "after": "...", "activation": a}, ...],
  ///    "histogram": {"bins": [c0, ...], "max": a},
  ///    "promoted": [{"token": "x", "id": 5, "effect": e}, ...], "suppressed": [...]}
  /// std::invalid_argument (latent out of range) naming the range.
  nlohmann::json latent(std::size_t latent, const LatentView& view = {}) const;

  /// The latents at each position of `prompt` (UTF-8, unknown characters mapped to id 0, at
  /// most the window; PromptTooLongError else), the `top` strongest first:
  ///   {"point": ..., "positions": [{"token": "x", "latents": [{"latent": 7, "activation": a}]}]}
  nlohmann::json prompt(const std::string& prompt, std::size_t top = 5) const;

  /// Every latent's firing count over the text, and the text's size:
  ///   {"n_latents": F, "k": k, "point": ..., "tokens": N, "fired": [c0, ...]}
  nlohmann::json overview() const;

  std::size_t n_latents() const { return sae_.n_latents(); }
  const std::string& point() const { return point_; }

 private:
  std::string text_of(const Tokens& ids) const;

  const Checkpoint& loaded_;
  const SparseAutoencoder& sae_;
  std::string point_;
  std::size_t point_index_;
  Tokens text_;
  SparseCodes codes_;
};

}  // namespace glass
