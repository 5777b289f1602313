#pragma once
// A time budget (`glass train --time 5m`): the number of optimizer steps N that fits in the time
// given, chosen once from a measured step time and evaluation cost, then trained exactly as
// `--iters N` (the cosine decays to N unless a decay horizon was given). N is recorded in the
// run's recipe, so --resume continues the same schedule and `--iters N` reproduces the run.

#include <string>

namespace glass {

/// Seconds of a duration written as a number and a unit: "90s", "5m", "1.5m", "1h". A unit is
/// required ("300" could mean seconds or minutes). Throws std::invalid_argument saying what is
/// wrong for anything else, for a duration that is not positive, or longer than 1000 h.
double parse_duration(const std::string& text);

/// A duration as "0.5s", "45s", "5m", "1m30s", "2h", "1h05m" (from a minute on, seconds rounded
/// to the nearest).
std::string duration_text(double seconds);

/// The evaluations a run of `steps` steps makes: at step 0, at every multiple of eval_every, and
/// at the last step when that is not one (the loop of train/trainer.cpp).
long evaluations_in(long steps, long eval_every);

/// The largest step count N >= 1 whose time fits in `budget_s`:
///
///   N * step_s + evaluations_in(N, eval_every) * eval_s <= budget_s
///
/// where step_s is the time of one optimizer step and eval_s of one evaluation (with its sample
/// and save), both in seconds. Returns 1 when not even one step fits (a run takes at least one),
/// and at most max_steps. Throws std::invalid_argument for a step_s that is not positive, a
/// negative eval_s or budget_s, or eval_every < 1.
long steps_for_time_budget(double budget_s, double step_s, double eval_s, long eval_every,
                           long max_steps = 1'000'000'000);

}  // namespace glass
