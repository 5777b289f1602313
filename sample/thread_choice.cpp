// Choosing generation's thread count by measuring it. See thread_choice.hpp.
#include "sample/thread_choice.hpp"

#include <algorithm>
#include <cassert>
#include <stdexcept>
#include <utility>

namespace glass {

namespace {
/// A measured token slower than this many times the choice's median ends the measurement.
constexpr double kBadlySlow = 4.0;
/// The other count must be faster by more than this fraction to take over.
constexpr double kMargin = 0.05;
/// After a badly slow measurement the next check comes this many times later (after a plain
/// loss, twice as late).
constexpr std::size_t kBackOff = 8;
}  // namespace

ThreadChoice::ThreadChoice(std::size_t cores, std::function<void(std::size_t)> apply,
                           std::size_t probe, std::size_t run, std::size_t max_run)
    : cores_(cores),
      apply_(std::move(apply)),
      probe_(probe),
      run_(std::max<std::size_t>(run, 1)),
      max_run_(std::max(max_run, run_)),
      phase_(cores > 1 ? Phase::measure_one : Phase::settled),
      next_run_(run_) {
  if (cores == 0 || probe < 2)
    throw std::invalid_argument("ThreadChoice: cores must be at least 1 and probe at least 2");
  current_ = 1;
  apply_(1);
  left_ = next_run_;
}

double ThreadChoice::median(std::vector<double> values) {
  assert(!values.empty());
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

void ThreadChoice::set(std::size_t threads) {
  if (threads == current_) return;
  current_ = threads;
  apply_(threads);
}

bool ThreadChoice::badly_slow(double seconds) {
  if (seconds > kBadlySlow * best_median_) ++slow_;
  return slow_ == 2;
}

void ThreadChoice::settle() {
  phase_ = Phase::settled;
  slow_ = 0;
  left_ = next_run_;
  recent_.clear();
  times_.clear();
  set(best_);
}

std::size_t ThreadChoice::tokens_on(std::size_t threads) const {
  if (threads == 1) return on_one_;
  return threads == cores_ ? on_all_ : 0;
}

void ThreadChoice::token_took(double seconds) {
  (current_ == 1 ? on_one_ : on_all_) += 1;
  if (cores_ == 1) return;
  const std::size_t other = best_ == 1 ? cores_ : 1;
  switch (phase_) {
    case Phase::measure_one:  // the first measurement: one thread
      times_.push_back(seconds);
      if (times_.size() == probe_) {
        best_median_ = median(times_);
        times_.clear();
        slow_ = 0;
        phase_ = Phase::measure_all;
        set(cores_);
      }
      break;
    case Phase::measure_all:  // then every core; the faster median wins
      times_.push_back(seconds);
      if (badly_slow(seconds)) {
        best_ = 1;
        next_run_ = std::min(kBackOff * run_, max_run_);
        settle();
      } else if (times_.size() == probe_) {
        const double all = median(times_);
        if (all < best_median_) {
          best_ = cores_;
          best_median_ = all;
        }
        settle();
      }
      break;
    case Phase::settled: {
      // When the recent tokens became badly slow (another process took a core), the stretch
      // ends at once and the other count is checked against their time. One slow token alone
      // (a time slice lost to another process) does not end it.
      recent_.push_back(seconds);
      if (recent_.size() > probe_) recent_.erase(recent_.begin());
      const bool slowed = recent_.size() == probe_ && median(recent_) > kBadlySlow * best_median_;
      if (slowed || --left_ == 0) {
        best_median_ = median(recent_);
        times_.clear();
        slow_ = 0;
        phase_ = Phase::check_other;
        set(other);
      }
      break;
    }
    case Phase::check_other:  // the other count again: does it win now?
      times_.push_back(seconds);
      if (badly_slow(seconds)) {
        next_run_ = std::min(kBackOff * next_run_, max_run_);
        settle();
      } else if (times_.size() == probe_) {
        const double m = median(times_);
        if (m < (1 - kMargin) * best_median_) {
          best_ = other;
          best_median_ = m;
          next_run_ = run_;
          ++switches_;
        } else {
          next_run_ = std::min(2 * next_run_, max_run_);
        }
        settle();
      }
      break;
  }
}

}  // namespace glass
