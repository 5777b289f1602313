#pragma once
// Helpers shared by the nn tests: deterministic random inputs, and a way to give a model
// "non-trivial" weights.

#include <cmath>
#include <random>
#include <string>

#include "autograd/ops.hpp"
#include "nn/module.hpp"

namespace glass_test {

using namespace glass;

/// A tensor of N(0, std^2) values from a fixed seed.
inline Tensor random_tensor(const Shape& shape, double std, std::uint64_t seed,
                            bool requires_grad = false) {
  Rng rng(seed);
  return Tensor::randn(shape, static_cast<Scalar>(std), rng, requires_grad);
}

/// Token ids uniform in [0, vocab) from a fixed seed.
inline Ids random_ids(std::size_t batch, std::size_t length, std::size_t vocab,
                      std::uint64_t seed) {
  Rng rng(seed);
  std::uniform_int_distribution<int> pick(0, static_cast<int>(vocab) - 1);
  Ids ids = Ids::from_shape({batch, length});
  for (auto& id : ids) id = pick(rng);
  return ids;
}

/// Replaces every parameter by N(0, std^2) values and every RMSNorm gain ("...norm.weight") by
/// 1 + N(0, 0.2^2), so that gradient checks do not run at the special point of the init
/// (tiny weights, unit gains).
inline void randomize(Module& module, double std, std::uint64_t seed) {
  Rng rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (auto& [name, p] : module.named_parameters()) {
    const bool is_gain =
        name.size() >= 11 && name.compare(name.size() - 11, 11, "norm.weight") == 0;
    for (auto& x : p.value()) {
      x = static_cast<Scalar>(is_gain ? 1.0 + 0.2 * normal(rng) : std * normal(rng));
    }
  }
}

}  // namespace glass_test
