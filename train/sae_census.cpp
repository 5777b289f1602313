// The census of an SAE's most frequent latents (see sae_census.hpp).

#include "train/sae_census.hpp"

#include <algorithm>
#include <numeric>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "interp/sae_inspect.hpp"
#include "train/sae_trainer.hpp"

namespace glass {

SaeCensus sae_census(const Checkpoint& loaded, const SparseAutoencoder& sae,
                     const std::string& point, const TokenIds& ids, std::size_t begin,
                     std::size_t end, std::size_t n_frequent, std::size_t n_top) {
  const Decoder& model = loaded.model();
  const std::size_t p = sae_point_index(model, point), F = sae.n_latents();
  if (sae.d_model() != model.config().d_model)
    throw std::invalid_argument(fmt::format("the SAE reads d_model {}, the model has {}",
                                            sae.d_model(), model.config().d_model));
  if (n_top == 0 || begin >= end || end > ids.size())
    throw std::invalid_argument("sae_census: needs n_top >= 1 and begin < end <= the text");
  // The feature browser's reading of a text (interp/sae_inspect.hpp), one window per forward
  // pass, then its firing counts and each frequent latent's strongest tokens.
  const SparseCodes codes =
      encode_text(model, sae, p, ids.to_vector(begin, end), loaded.window(), /*batch=*/1);
  const std::vector<std::size_t> fires = firing_counts(codes);
  std::vector<std::size_t> order(F);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return fires[a] > fires[b]; });
  SaeCensus census;
  census.tokens = codes.tokens;
  for (std::size_t i = 0; i < std::min(n_frequent, F) && fires[order[i]] > 0; ++i) {
    const LatentSummary s = summarize_latent(codes, order[i], n_top);
    LatentContexts c;
    c.latent = order[i];
    c.fires = s.fired;
    std::set<std::int32_t> current;
    for (const LatentHit& hit : s.top) {
      c.top.push_back(begin + hit.position);
      c.top_activations.push_back(hit.activation);
      current.insert(ids[begin + hit.position]);
    }
    c.distinct_current = current.size();
    census.multi += c.distinct_current > 1 ? 1 : 0;
    census.latents.push_back(std::move(c));
  }
  return census;
}

}  // namespace glass
