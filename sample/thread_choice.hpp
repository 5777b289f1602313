#pragma once
// The thread count of generation, chosen by measuring it while the text is generated.
//
// A generated token's products have one row: whether a second thread speeds them up depends on
// the CPU (1.5x faster on two threads on one 2-core machine, slower on another) and even more on
// what else runs there (beside a busy process a second thread waits a whole time slice for its
// core at every product: 14 characters/s on two threads against 4,016 on one). No fixed default
// is right everywhere, so when the user sets no count, glass sample measures both and keeps
// the faster (bench/README.md, *Default thread counts*).

#include <cstddef>
#include <functional>
#include <vector>

namespace glass {

/// Chooses between one thread and every core for generation, from the time each token took.
///
/// It measures one thread on `probe` tokens, then every core on `probe` tokens, and generates
/// on the faster (the median time per token). After `run` tokens it measures the other count
/// again for `probe` tokens: when the other is faster by more than 5 %, it switches; else the
/// next check comes twice as late (at most `max_run` tokens), so a settled choice costs little.
/// A second measured token slower than 4x the current choice's median ends that measurement at
/// once, and the next check comes 8x as late: a count that is badly slow (a busy core) costs
/// two tokens per check, not `probe` (one slow token can be a time slice lost to anything).
/// When the median of the settled choice's last `probe` tokens becomes 4x its measured median
/// (another process took a core meanwhile), the check comes at once.
class ThreadChoice {
 public:
  /// `cores` >= 1: the larger count (every core this process may use); with 1 there is nothing
  /// to choose. `apply(n)` sets the count the next tokens are computed with (called at once
  /// with 1, and at each change). std::invalid_argument when cores is 0 or probe is below 2
  /// (a median of one token would let one slow token decide).
  ThreadChoice(std::size_t cores, std::function<void(std::size_t)> apply, std::size_t probe = 8,
               std::size_t run = 64, std::size_t max_run = 16384);

  /// Records that the last token took `seconds` (wall time) on current() threads; may change
  /// the count for the next token (through `apply`). Leave out a time that holds more than one
  /// token's work (the prompt read before the first token).
  void token_took(double seconds);
  /// The count the next token is computed with.
  std::size_t current() const { return current_; }
  /// Tokens measured on `threads` so far (1 or cores).
  std::size_t tokens_on(std::size_t threads) const;
  /// Times the choice changed after the first two measurements.
  std::size_t switches() const { return switches_; }

 private:
  enum class Phase { measure_one, measure_all, settled, check_other };
  void set(std::size_t threads);
  void settle();                    // generate on best_ for next_run_ tokens
  bool badly_slow(double seconds);  // counts slow_; true at the second badly slow token
  static double median(std::vector<double> values);

  std::size_t cores_;
  std::function<void(std::size_t)> apply_;
  std::size_t probe_, run_, max_run_;
  Phase phase_;
  std::size_t current_ = 1;
  std::size_t best_ = 1;        // the settled choice
  double best_median_ = 0;      // its median seconds per token, last measured
  std::vector<double> times_;   // the measurement under way
  std::vector<double> recent_;  // settled: the last `probe` token times
  std::size_t left_ = 0;        // settled: tokens until the next check
  std::size_t next_run_ = 0;    // the length of the next settled stretch
  std::size_t slow_ = 0;        // badly slow tokens in the measurement under way
  std::size_t on_one_ = 0, on_all_ = 0;
  std::size_t switches_ = 0;
};

}  // namespace glass
