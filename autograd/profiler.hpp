#pragma once
// Where does a training step spend its time? OpProfiler is an observer of the tape
// (TapeObserver, tape.hpp) that sums, per op name, the forward and backward time.

#include <chrono>
#include <map>
#include <string>

#include "autograd/tape.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

/// Time spent by one kind of op (one op name) while an OpProfiler watched the tape.
struct OpProfile {
  double forward_ms = 0;           ///< forward time charged to this op (see OpProfiler)
  std::size_t forward_calls = 0;   ///< how many times it was recorded
  double backward_ms = 0;          ///< time inside its backward closures
  std::size_t backward_calls = 0;  ///< how many backward closures ran
};

/// While set as the tape's observer (tape().set_observer(&profiler)), every record charges the
/// wall time since the previous record (or since the last clear or restart_clock()) to the op
/// being recorded: its forward computation, plus any unrecorded work that ran in between (an
/// op that needs no gradient, the caller's own code). Each backward closure is timed exactly.
/// The cost is two clock reads per op.
class OpProfiler : public TapeObserver {
 public:
  /// Starts the forward clock now (call it when setting the observer).
  void restart_clock() { last_event_ = Clock::now(); }
  /// Accumulated times per op name since construction or the last reset().
  const std::map<std::string, OpProfile>& profile() const { return profile_; }
  void reset() { profile_.clear(); }

  void recorded(const TapeRecord& record) override;
  void backward_begins(const TapeRecord& record) override;
  void backward_ends(const TapeRecord& record) override;
  void cleared() override { restart_clock(); }

 private:
  using Clock = std::chrono::steady_clock;
  std::map<std::string, OpProfile> profile_;
  Clock::time_point last_event_ = Clock::now();
  Clock::time_point backward_start_;
};

}  // namespace GLASS_PRECISION
}  // namespace glass
