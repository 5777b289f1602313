// The run's CSV logs (log.csv, steps.csv): writing their rows and reading steps.csv back. See
// train/train_state.hpp.

#include <cstdio>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "train/errors.hpp"
#include "train/train_state.hpp"

namespace glass {

std::string log_csv(const std::vector<LogRow>& rows) {
  std::string text = "step,lr,train_loss,val_loss,tokens_per_s,elapsed_s\n";
  for (const LogRow& r : rows)
    text += fmt::format("{},{:.6e},{:.6f},{:.6f},{:.1f},{:.2f}\n", r.step, r.lr, r.train_loss,
                        r.val_loss, r.tokens_per_s, r.elapsed_s);
  return text;
}

std::string step_csv_line(const StepRow& r) {
  return fmt::format("{},{:.6f},{:.6e},{:.6e},{:.1f},{:.3f}\n", r.step, r.loss, r.lr, r.grad_norm,
                     r.tokens_per_s, r.elapsed_s);
}

std::string steps_csv(const std::vector<StepRow>& rows) {
  std::string text = kStepsCsvHeader;
  for (const StepRow& r : rows) text += step_csv_line(r);
  return text;
}

std::vector<StepRow> read_steps_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {};
  std::string line;
  std::getline(in, line);
  if (line + "\n" != kStepsCsvHeader)
    throw CheckpointError(
        fmt::format("{}: the header is '{}', not '{}'", path, line,
                    std::string(kStepsCsvHeader, std::strlen(kStepsCsvHeader) - 1)));
  std::vector<StepRow> rows;
  for (long n = 2; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    StepRow r;
    char tail = 0;
    if (std::sscanf(line.c_str(), "%ld,%lf,%lf,%lf,%lf,%lf%c", &r.step, &r.loss, &r.lr,
                    &r.grad_norm, &r.tokens_per_s, &r.elapsed_s, &tail) != 6)
      throw CheckpointError(fmt::format("{}: line {} is not six numbers: '{}'", path, n, line));
    rows.push_back(r);
  }
  return rows;
}

}  // namespace glass
