#pragma once
// Helpers shared by the files of the Trainer (train/trainer*.cpp); not part of its interface.

#include <chrono>

namespace glass::trainer_detail {

using Clock = std::chrono::steady_clock;

/// Seconds from t0 to now.
inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace glass::trainer_detail
