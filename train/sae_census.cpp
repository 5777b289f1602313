// The census of an SAE's most frequent latents (see sae_census.hpp).

#include "train/sae_census.hpp"

#include <algorithm>
#include <numeric>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "autograd/tape.hpp"
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
  NoGradGuard no_grad;
  std::vector<LatentContexts> all(F);
  // per latent, a min-heap of its n_top largest (activation, position) so far
  using Entry = std::pair<double, std::size_t>;
  const auto larger = [](const Entry& a, const Entry& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  };
  std::vector<std::vector<Entry>> best(F);
  SaeCensus census;
  for (std::size_t start = begin; start < end; start += loaded.window()) {
    const std::size_t T = std::min(loaded.window(), end - start);
    Ids x = Ids::from_shape({1, T});
    for (std::size_t t = 0; t < T; ++t) x(0, t) = ids[start + t];
    const Array z = sae.encode(Tensor(activations_at(model, x, p))).value();  // (T, F)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t j = 0; j < F; ++j) {
        const double a = z(t, j);
        if (!(a > 0)) continue;
        all[j].fires += 1;
        std::vector<Entry>& heap = best[j];
        const Entry e{a, start + t};
        if (heap.size() < n_top) {
          heap.push_back(e);
          std::push_heap(heap.begin(), heap.end(), larger);
        } else if (larger(e, heap.front())) {
          std::pop_heap(heap.begin(), heap.end(), larger);
          heap.back() = e;
          std::push_heap(heap.begin(), heap.end(), larger);
        }
      }
    census.tokens += T;
  }
  std::vector<std::size_t> order(F);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return all[a].fires > all[b].fires; });
  for (std::size_t i = 0; i < std::min(n_frequent, F) && all[order[i]].fires > 0; ++i) {
    LatentContexts c = all[order[i]];
    c.latent = order[i];
    std::vector<Entry> heap = best[order[i]];
    std::sort(heap.begin(), heap.end(), larger);
    std::set<std::int32_t> current;
    for (const Entry& e : heap) {
      c.top.push_back(e.second);
      c.top_activations.push_back(e.first);
      current.insert(ids[e.second]);
    }
    c.distinct_current = current.size();
    census.multi += c.distinct_current > 1 ? 1 : 0;
    census.latents.push_back(std::move(c));
  }
  return census;
}

}  // namespace glass
