#pragma once
// A time budget (`glass train --time 5m`): the number of optimizer steps N that fits in the time
// given, chosen once from a measured step time and evaluation cost, then trained exactly as
// `--iters N` (the cosine decays to N unless a decay horizon was given). N is recorded in the
// run's recipe, so --resume continues the same schedule and `--iters N` reproduces the run.
// Unless a cadence was chosen, the evaluations (each with its sample and save) are spaced so
// that together they take about a tenth of the budget.

#include <string>

namespace glass {

/// The most steps a time budget gives a run (the bound of --iters): a billion.
inline constexpr long kMaxBudgetSteps = 1'000'000'000;

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
                           long max_steps = kMaxBudgetSteps);

/// The share of a time budget that fit_time_budget lets the evaluations (with their samples and
/// saves) take when it chooses their cadence: a tenth.
inline constexpr double kEvaluationShare = 0.1;

/// What fits in a time budget: the step count and the evaluation cadence.
struct TimeBudgetFit {
  long steps = 1;       ///< N, the optimizer steps of the run
  long eval_every = 1;  ///< evaluate (and save) every this many steps
  bool capped = false;  ///< more than max_steps would fit: steps is max_steps
};

/// The step count and evaluation cadence for `budget_s` seconds at step_s per step and eval_s
/// per evaluation (with its sample and save). With fit_cadence false the cadence is eval_every
/// as given. With fit_cadence true, eval_every is kept when its evaluations take at most
/// kEvaluationShare of the budget; otherwise it is lengthened so that about
/// kEvaluationShare * budget_s / eval_s evaluations are made (at least 2: the first step's and
/// the last's). The steps are then steps_for_time_budget's for that cadence. Throws as
/// steps_for_time_budget does.
TimeBudgetFit fit_time_budget(double budget_s, double step_s, double eval_s, long eval_every,
                              bool fit_cadence, long max_steps = kMaxBudgetSteps);

/// The line said when a budget holds more steps than a run takes (`fit.capped`): the budget,
/// the cap and about how long the capped run lasts.
std::string budget_cap_note(double budget_s, const TimeBudgetFit& fit, double step_s,
                            double eval_s);

}  // namespace glass
