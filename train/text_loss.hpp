#pragma once
// The loss of a model over a whole stretch of token ids: every id predicted once, in
// non-overlapping windows. `glass eval` measures a text with it, and the Trainer its validation
// split when that is no more work than the sampled estimate, so the two give the same number.

#include <cstddef>
#include <functional>

#include "autograd/tensor.hpp"
#include "data/token_ids.hpp"

namespace glass {

/// The summed next-token loss of some predictions, in nats, and their number.
struct TextLoss {
  double total = 0;       ///< sum of the per-prediction cross-entropies (nats)
  std::size_t count = 0;  ///< predictions
  /// The mean loss per prediction (nats per token); 0 when there are none.
  double mean() const { return count == 0 ? 0 : total / static_cast<double>(count); }
};

/// The loss of a batch of windows: x and y of shape (B, n) (inputs and the ids that follow
/// them), `first` the index of x's first id in the stretch. Returns the mean cross-entropy over
/// the B*n targets; it may throw to stop the pass (e.g. on a non-finite loss).
using WindowLoss = std::function<double(const Ids& x, const Ids& y, std::size_t first)>;

/// The loss over ids[begin, end): windows of T, inputs ids[i : i+T] and targets
/// ids[i+1 : i+T+1] for i = begin, begin+T, ..., so that every id after ids[begin] is predicted
/// exactly once, from at most T ids before it (from the start of its window). Full windows go
/// `batch` at a time to `loss_of`; a shorter last window goes alone. Throws std::invalid_argument
/// for T or batch 0, or end > ids.size().
TextLoss text_loss(const TokenIds& ids, std::size_t begin, std::size_t end, std::size_t T,
                   std::size_t batch, const WindowLoss& loss_of);

/// How many windows text_loss runs over `predictions` predictions: ceil(predictions / T).
inline std::size_t text_loss_windows(std::size_t predictions, std::size_t T) {
  return (predictions + T - 1) / T;
}

}  // namespace glass
