// The loss over a whole stretch of ids. See train/text_loss.hpp.

#include "train/text_loss.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace glass {

TextLoss text_loss(const TokenIds& ids, std::size_t begin, std::size_t end, std::size_t T,
                   std::size_t batch, const WindowLoss& loss_of) {
  if (T == 0 || batch == 0 || end > ids.size())
    throw std::invalid_argument(fmt::format("text_loss: ids [{}, {}) of {}, window {}, batch {}",
                                            begin, end, ids.size(), T, batch));
  TextLoss loss;
  if (end <= begin + 1) return loss;  // nothing to predict
  // `n_windows` windows of n inputs each, the first starting at ids[from].
  auto run = [&](std::size_t from, std::size_t n_windows, std::size_t n) {
    Ids x = Ids::from_shape({n_windows, n}), y = Ids::from_shape({n_windows, n});  // (B, n)
    for (std::size_t b = 0; b < n_windows; ++b)
      for (std::size_t t = 0; t < n; ++t) {
        x.data()[b * n + t] = ids[from + b * T + t];
        y.data()[b * n + t] = ids[from + b * T + t + 1];
      }
    loss.total += loss_of(x, y, from) * static_cast<double>(n_windows * n);
    loss.count += n_windows * n;
  };
  const std::size_t predictions = end - begin - 1;
  const std::size_t full = predictions / T;
  for (std::size_t w = 0; w < full; w += batch) run(begin + w * T, std::min(batch, full - w), T);
  if (predictions % T != 0) run(begin + full * T, 1, predictions % T);
  return loss;
}

}  // namespace glass
