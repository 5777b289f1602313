#include "autograd/profiler.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

namespace {
double ms_between(std::chrono::steady_clock::time_point a,
                  std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}
}  // namespace

void OpProfiler::recorded(const TapeRecord& record) {
  OpProfile& p = profile_[record.op];
  p.forward_ms += ms_between(last_event_, Clock::now());
  ++p.forward_calls;
  last_event_ = Clock::now();  // the bookkeeping above is not charged
}

void OpProfiler::backward_begins(const TapeRecord&) { backward_start_ = Clock::now(); }

void OpProfiler::backward_ends(const TapeRecord& record) {
  OpProfile& p = profile_[record.op];
  p.backward_ms += ms_between(backward_start_, Clock::now());
  ++p.backward_calls;
}

}  // namespace GLASS_PRECISION
}  // namespace glass
