#pragma once
// Which tokens a trained SAE's latents fire on: for the most frequent latents of a text, their
// top-activating positions and how many distinct current tokens those hold. A latent whose top
// contexts all sit on one character is a letter detector; one whose top contexts hold several
// characters means something more (a position in a word, a kind of character, a context).

#include <cstddef>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.hpp"
#include "data/token_ids.hpp"
#include "interp/sae.hpp"

namespace glass {

/// One latent on a text: how often it fires and where it fires the most.
struct LatentContexts {
  std::size_t latent = 0;        ///< index in [0, n_latents)
  std::size_t fires = 0;         ///< positions where its activation is > 0
  std::vector<std::size_t> top;  ///< positions in ids of its largest activations, largest first
  std::vector<double> top_activations;  ///< their activations
  std::size_t distinct_current = 0;     ///< distinct ids[p] over p in top
};

/// The census of sae_census.
struct SaeCensus {
  std::vector<LatentContexts> latents;  ///< the n_frequent most frequent latents, most first
  std::size_t multi = 0;                ///< how many of them have distinct_current > 1
  std::size_t tokens = 0;               ///< positions read
};

/// Runs the model over ids[begin, end) in non-overlapping windows of the model's window (the last
/// partial window included), encodes the activations at `point` with `sae`, and keeps for every
/// latent its count of firing positions and its n_top largest activations (ties: the earlier
/// position). Returns the n_frequent latents that fire most often (ties: the lower index; only
/// latents that fire at least once). std::invalid_argument for a bad point, an SAE of another
/// d_model, n_top = 0 or begin >= end.
SaeCensus sae_census(const Checkpoint& loaded, const SparseAutoencoder& sae,
                     const std::string& point, const TokenIds& ids, std::size_t begin,
                     std::size_t end, std::size_t n_frequent = 100, std::size_t n_top = 10);

}  // namespace glass
