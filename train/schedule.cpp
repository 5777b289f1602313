#include "train/schedule.hpp"

#include <cmath>

namespace glass {

double LrSchedule::at(long it) const {
  if (it < warmup) return lr_max * static_cast<double>(it + 1) / static_cast<double>(warmup + 1);
  if (it >= decay_iters) return min_lr;
  const double ratio = static_cast<double>(it - warmup) / static_cast<double>(decay_iters - warmup);
  const double pi = std::acos(-1.0);
  return min_lr + 0.5 * (1.0 + std::cos(pi * ratio)) * (lr_max - min_lr);
}

}  // namespace glass
