#pragma once
// Steering with an SAE's latents (Templeton et al. 2024, "Scaling Monosemanticity", feature
// steering; Turner et al. 2023, activation addition): while the model runs, add
//   v = sum_j scale_j * W_dec[latent_j] / |W_dec[latent_j]|        (d)
// to the residual stream at the SAE's point, at every position. A scale is in the stream's own
// units: scale 4 moves each position 4 along the latent's unit direction (the latent's typical
// activation, `glass sae inspect`, is a natural size). The rest of the model runs unchanged on
// the steered stream, so the logits move by what the blocks after the point and the final norm
// make of v.

#include <cstddef>
#include <string>
#include <vector>

#include "interp/sae.hpp"
#include "nn/tracer.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

/// One latent to steer with and how far.
struct Steer {
  std::size_t latent = 0;
  double scale = 0;
};

/// v = sum_j scale_j * unit(W_dec[latent_j]) (d), in double. std::invalid_argument when a latent
/// is out of range, its decoder row is zero or a scale is not finite.
std::vector<double> steering_vector(const SparseAutoencoder& sae, const std::vector<Steer>& steers);

/// Adds a hook to `tracer` that adds `vector` (d) to every position of every batch element at
/// hook point `point` (a residual point, "embeddings" or "layers.L.out"), in every forward pass
/// the tracer is given to. The addition is x + v in the model's precision, so v = 0 leaves the
/// stream's bits as they were.
void add_steering_hook(Tracer& tracer, const std::string& point, std::vector<double> vector);

}  // namespace GLASS_PRECISION
}  // namespace glass
