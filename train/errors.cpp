// The errors of training. See train/errors.hpp.

#include "train/errors.hpp"

#include <fmt/format.h>

#include "train/time_budget.hpp"

namespace glass {

OptionError::OptionError(std::string field, std::string value, std::string reason,
                         std::string other_field)
    : std::invalid_argument(fmt::format("{}{}: {}{}", field, value.empty() ? "" : " = " + value,
                                        reason,
                                        other_field.empty() ? "" : " (with " + other_field + ")")),
      field_(std::move(field)),
      value_(std::move(value)),
      reason_(std::move(reason)),
      other_field_(std::move(other_field)) {}

namespace {

std::string differences_text(const std::vector<RecipeDifference>& differences) {
  std::string text;
  for (const RecipeDifference& d : differences)
    text += fmt::format("\n  {} {} (recorded: {})", d.field, d.given, d.recorded);
  return text;
}

}  // namespace

RecipeMismatchError::RecipeMismatchError(std::string out_dir,
                                         std::vector<RecipeDifference> differences)
    : RunDirError(out_dir, fmt::format("the run in {} was trained with another recipe than the "
                                       "one asked for:{}",
                                       out_dir, differences_text(differences))),
      differences_(std::move(differences)) {}

DataMismatchError::DataMismatchError(std::string out_dir, std::string recorded, std::string given,
                                     bool defaulted)
    : RunDirError(out_dir,
                  fmt::format("the run in {} was trained on a text named '{}', not on "
                              "'{}'{}",
                              out_dir, recorded, given, defaulted ? " (the bundled corpus)" : "")),
      recorded_(std::move(recorded)),
      given_(std::move(given)),
      defaulted_(defaulted) {}

OverfitBatchRunError::OverfitBatchRunError(std::string out_dir)
    : RunDirError(out_dir, fmt::format("the run in {} was trained on one batch again and again "
                                       "(overfit_batch), a check of the training loop, not a run "
                                       "to continue",
                                       out_dir)) {}

namespace {

std::string finished_run_text(const std::string& out_dir, long step, long iters, bool iters_given,
                              double time_budget_s) {
  if (iters_given)
    return fmt::format("iters = {}: the run in {} is already at step {}", iters, out_dir, step);
  return fmt::format(
      "the run in {} is already at its last step {} (the step count recorded in "
      "its save{})",
      out_dir, step,
      time_budget_s > 0
          ? fmt::format(", chosen for a time budget of {}", duration_text(time_budget_s))
          : std::string());
}

}  // namespace

FinishedRunError::FinishedRunError(std::string out_dir, long step, long iters, bool iters_given,
                                   double time_budget_s)
    : RunDirError(out_dir, finished_run_text(out_dir, step, iters, iters_given, time_budget_s)),
      step_(step),
      iters_(iters),
      iters_given_(iters_given),
      time_budget_s_(time_budget_s) {}

OptimizerMismatchError::OptimizerMismatchError(const std::string& json_path, std::string field,
                                               double recorded, double asked)
    : CheckpointError(fmt::format("{}: the checkpoint was trained with AdamW {} = {:g}, this run "
                                  "asks for {:g}; an exact resume needs the same value",
                                  json_path, field, recorded, asked)),
      field_(std::move(field)),
      recorded_(recorded),
      asked_(asked) {}

NoSaveToResumeError::NoSaveToResumeError(std::string out_dir)
    : RunDirError(out_dir, fmt::format("{} holds no checkpoint with a training state (config.json, "
                                       "model.safetensors, train_state.json, "
                                       "train_state.safetensors) to resume",
                                       out_dir)) {}

RunExistsError::RunExistsError(std::string out_dir)
    : RunDirError(out_dir, fmt::format("{} already holds a training run; a new run there would "
                                       "replace it",
                                       out_dir)) {}

}  // namespace glass
