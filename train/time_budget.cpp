// A time budget for a training run. See train/time_budget.hpp.

#include "train/time_budget.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include <fmt/format.h>

namespace glass {

namespace {

/// The longest budget taken: 1000 hours (six weeks); more is a typo.
constexpr double kMaxBudgetSeconds = 1000.0 * 3600.0;

}  // namespace

double parse_duration(const std::string& text) {
  const std::string usage = "a duration with its unit, e.g. 90s, 5m, 1.5m or 1h";
  if (text.empty()) throw std::invalid_argument("is empty: give " + usage);
  const char unit = text.back();
  const double per_unit = unit == 's' ? 1.0 : unit == 'm' ? 60.0 : unit == 'h' ? 3600.0 : 0.0;
  const std::string number = per_unit > 0 ? text.substr(0, text.size() - 1) : text;
  char* end = nullptr;
  const double value = number.empty() ? NAN : std::strtod(number.c_str(), &end);
  const bool is_number = !number.empty() && end == number.c_str() + number.size() &&
                         std::isfinite(value) && number.find_first_of("xXpP") == std::string::npos;
  if (is_number && !(value > 0))
    throw std::invalid_argument("must be longer than 0 (e.g. 90s, 5m or 1h)");
  if (is_number && per_unit == 0)
    throw std::invalid_argument(fmt::format(
        "has no unit: write {}s for seconds or {}m for minutes (units: s, m, h)", text, text));
  if (!is_number || per_unit == 0) throw std::invalid_argument("is not " + usage);
  const double seconds = value * per_unit;
  if (seconds > kMaxBudgetSeconds) throw std::invalid_argument("must be at most 1000h");
  return seconds;
}

std::string duration_text(double seconds) {
  if (seconds < 59.5) return fmt::format("{:.3g}s", seconds);
  const long s = std::lround(seconds);
  if (s >= 3600)
    return s % 3600 == 0 ? fmt::format("{}h", s / 3600)
                         : fmt::format("{}h{:02d}m", s / 3600, (s % 3600) / 60);
  if (s >= 60)
    return s % 60 == 0 ? fmt::format("{}m", s / 60) : fmt::format("{}m{:02d}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

long evaluations_in(long steps, long eval_every) {
  return steps / eval_every + 1 + (steps % eval_every != 0 ? 1 : 0);
}

long steps_for_time_budget(double budget_s, double step_s, double eval_s, long eval_every,
                           long max_steps) {
  if (!(step_s > 0) || !(eval_s >= 0) || !(budget_s >= 0) || eval_every < 1 || max_steps < 1)
    throw std::invalid_argument(
        fmt::format("steps_for_time_budget: budget {} s, step {} s, evaluation {} s, eval_every {}",
                    budget_s, step_s, eval_s, eval_every));
  auto fits = [&](long n) {
    return static_cast<double>(n) * step_s +
               static_cast<double>(evaluations_in(n, eval_every)) * eval_s <=
           budget_s;
  };
  // The time of N steps grows with N (each step, and every evaluation it brings, costs): the
  // largest N that fits is found by bisection, fits(lo) true and fits(hi) false.
  if (!fits(1)) return 1;
  if (fits(max_steps)) return max_steps;
  long lo = 1, hi = max_steps;
  while (hi - lo > 1) {
    const long mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

TimeBudgetFit fit_time_budget(double budget_s, double step_s, double eval_s, long eval_every,
                              bool fit_cadence, long max_steps) {
  TimeBudgetFit fit;
  fit.eval_every = eval_every;
  fit.steps = steps_for_time_budget(budget_s, step_s, eval_s, eval_every, max_steps);
  const double most = std::floor(kEvaluationShare * budget_s / std::max(eval_s, 1e-300));
  const long most_evaluations = static_cast<long>(std::max(2.0, std::min(most, 1e9)));
  if (fit_cadence && evaluations_in(fit.steps, eval_every) > most_evaluations) {
    // The steps that fit beside most_evaluations evaluations, split into as many intervals but
    // one (the first evaluation is at step 0).
    const long steps = steps_for_time_budget(
        std::max(0.0, budget_s - static_cast<double>(most_evaluations) * eval_s), step_s, 0.0, 1,
        max_steps);
    fit.eval_every = std::max(1L, (steps + most_evaluations - 2) / (most_evaluations - 1));
    fit.steps = steps_for_time_budget(budget_s, step_s, eval_s, fit.eval_every, max_steps);
  }
  // Capped: one step more (with its evaluations) would still fit.
  const long more = max_steps + 1;
  fit.capped = fit.steps == max_steps &&
               static_cast<double>(more) * step_s +
                       static_cast<double>(evaluations_in(more, fit.eval_every)) * eval_s <=
                   budget_s;
  return fit;
}

std::string budget_cap_note(double budget_s, const TimeBudgetFit& fit, double step_s,
                            double eval_s) {
  const double run_s = static_cast<double>(fit.steps) * step_s +
                       static_cast<double>(evaluations_in(fit.steps, fit.eval_every)) * eval_s;
  return fmt::format(
      "note: {} would hold more than {} steps, the most a run takes: training {} steps, about {}",
      duration_text(budget_s), fit.steps, fit.steps, duration_text(run_s));
}

}  // namespace glass
