#include "interp/logit_lens.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace glass {
inline namespace GLASS_PRECISION {

std::vector<std::size_t> top_k_indices(const Scalar* row, std::size_t n, std::size_t k) {
  std::vector<std::size_t> index(n);
  std::iota(index.begin(), index.end(), std::size_t{0});
  k = std::min(k, n);
  std::partial_sort(index.begin(), index.begin() + static_cast<std::ptrdiff_t>(k), index.end(),
                    [row](std::size_t a, std::size_t b) {
                      return row[a] > row[b] || (row[a] == row[b] && a < b);
                    });
  index.resize(k);
  return index;
}

LogitLens logit_lens(const Decoder& model, const Tokens& tokens, std::size_t top_k) {
  const std::size_t V = model.config().vocab_size, d = model.config().d_model;
  if (top_k == 0 || top_k > V) {
    throw std::invalid_argument("logit_lens: top_k must be in [1, " + std::to_string(V) +
                                "], got " + std::to_string(top_k));
  }
  const Ids batch = as_batch(tokens);
  const std::size_t T = tokens.size();
  Tracer tracer;
  run_with_hooks(model, batch, tracer);

  LogitLens lens;
  lens.points = residual_points(model);
  lens.tokens = tokens;
  const std::size_t S = lens.points.size();
  lens.logits = Array::from_shape({S, T, V});
  lens.probs = Array::from_shape({S, T, V});
  lens.top_ids = Ids::from_shape({S, T, top_k});
  lens.top_probs = Array::from_shape({S, T, top_k});
  lens.next_prob = Array::from_shape({S, T - 1});
  NoGradGuard no_grad;
  for (std::size_t s = 0; s < S; ++s) {
    // The stream at this point, (T, d_model) -> (1, T, d_model): the shape Decoder::forward
    // hands to the final norm, so the same operations run on the same shapes.
    const Array& stream = tracer.get(lens.points[s]);
    Array x = Array::from_shape({1, T, d});
    std::copy(stream.data(), stream.data() + stream.size(), x.data());
    const Array logits = model.logits_of(Tensor(x), &tracer).value();
    const Array probs = softmax(Tensor(logits)).value();
    std::copy(logits.data(), logits.data() + T * V, lens.logits.data() + s * T * V);
    std::copy(probs.data(), probs.data() + T * V, lens.probs.data() + s * T * V);
    for (std::size_t t = 0; t < T; ++t) {
      const Scalar* row = probs.data() + t * V;
      const auto top = top_k_indices(row, V, top_k);
      for (std::size_t j = 0; j < top_k; ++j) {
        lens.top_ids(s, t, j) = static_cast<std::int32_t>(top[j]);
        lens.top_probs(s, t, j) = row[top[j]];
      }
      if (t + 1 < T) lens.next_prob(s, t) = row[tokens[t + 1]];
    }
  }
  return lens;
}

}  // namespace GLASS_PRECISION
}  // namespace glass
