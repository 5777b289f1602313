#pragma once
// CLI11 validators for numeric flags with messages a learner can act on, e.g.
//   --iters: must be a positive integer (got '0')
//   --top-p: must be a number in (0, 1] (got '1.5')
// (CLI::PositiveNumber / CLI::Range print the full double range, which says little), names
// taken in any case (--format GGUF), and the --ops flag of the commands that run the model.

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "nn/config.hpp"

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

/// Accepts `choices` in any case and passes the choice on as spelt here ("GGUF" -> "gguf");
/// any other value is passed on unchanged, for a command that explains its choices itself.
/// (Where CLI11 should refuse the others, use ->transform(CLI::IsMember(choices,
/// CLI::ignore_case)); under ->check, CLI11 would not pass the choice's own spelling on.)
inline CLI::Validator any_case(std::vector<std::string> choices) {
  return CLI::Validator(
      [choices](std::string& text) -> std::string {
        for (const std::string& choice : choices)
          if (CLI::detail::to_lower(text) == CLI::detail::to_lower(choice)) text = choice;
        return "";
      },
      "");
}

/// The help of --ops (add_ops_option).
inline const char* const kOpsHelp =
    "which code computes the model: fast (the fused kernels of autograd/kernels/) or reference "
    "(the primitive ops as the math is written, as the tutorials show; slower, the same numbers "
    "to rounding). --attention is its former name";

/// Adds --ops reference|fast to `cmd` (also spelt --attention, its name when it switched only
/// the attention): which code computes the model (OpsPath, nn/config.hpp). Sets `path` when
/// given; either name is taken in any case.
inline CLI::Option* add_ops_option(CLI::App* cmd, OpsPath& path) {
  return cmd
      ->add_option_function<std::string>(
          "--ops,--attention", [&path](const std::string& name) { path = parse_ops_path(name); },
          kOpsHelp)
      ->transform(CLI::IsMember({"fast", "reference"}, CLI::ignore_case))
      ->default_str(to_string(path));
}

/// add_ops_option for a command that keeps the path's name ("reference" or "fast") in `name`.
inline CLI::Option* add_ops_option(CLI::App* cmd, std::string& name) {
  return cmd->add_option("--ops,--attention", name, kOpsHelp)
      ->transform(CLI::IsMember({"fast", "reference"}, CLI::ignore_case))
      ->capture_default_str();
}

}  // namespace glass::cli
