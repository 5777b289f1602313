#pragma once
// CLI11 validators for numeric flags with messages a learner can act on, e.g.
//   --iters: must be a positive integer (got '0')
//   --top-p: must be a number in (0, 1] (got '1.5')
// (CLI::PositiveNumber / CLI::Range print the full double range, which says little.)

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <string>

#include <CLI/CLI.hpp>

namespace glass::cli {

/// Accepts an integer (decimal digits, optional sign) >= min. `what` is the rule shown in the
/// message and the help, e.g. "positive integer".
inline CLI::Validator integer_at_least(long long min, const std::string& what) {
  return CLI::Validator(
      [min, what](std::string& text) -> std::string {
        errno = 0;
        char* end = nullptr;
        const long long v = std::strtoll(text.c_str(), &end, 10);
        if (text.empty() || *end != '\0' || v < min)
          return "must be a " + what + " (got '" + text + "')";
        if (errno == ERANGE)
          return "must be a " + what + " no larger than " + std::to_string(LLONG_MAX) + " (got '" +
                 text + "')";
        return "";
      },
      what);
}

/// Accepts an integer in [min, max]. `what` is the rule shown in the message and the help.
inline CLI::Validator integer_in(long long min, long long max, const std::string& what) {
  return CLI::Validator(
      [min, max, what](std::string& text) -> std::string {
        errno = 0;
        char* end = nullptr;
        const long long v = std::strtoll(text.c_str(), &end, 10);
        if (text.empty() || *end != '\0' || errno == ERANGE || v < min || v > max)
          return "must be " + what + " (got '" + text + "')";
        return "";
      },
      what);
}

/// Accepts a finite number in [low, high] (or (low, high] when low_open).
inline CLI::Validator number_in(double low, double high, bool low_open, const std::string& what) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        const bool low_ok = low_open ? v > low : v >= low;
        if (text.empty() || *end != '\0' || !std::isfinite(v) || !low_ok || v > high)
          return "must be " + what + " (got '" + text + "')";
        return "";
      },
      what);
}

inline const CLI::Validator kPositiveInteger = integer_at_least(1, "positive integer");
inline const CLI::Validator kNonNegativeInteger = integer_at_least(0, "non-negative integer");
inline const CLI::Validator kPositiveNumber = number_in(0.0, HUGE_VAL, true, "a positive number");
inline const CLI::Validator kNonNegativeNumber = number_in(0.0, HUGE_VAL, false, "a number >= 0");

}  // namespace glass::cli
