#pragma once
// The errors of training, as facts: which option field, which value, which directory or file.
// Front ends add their own words (cli/train_errors.cpp maps a field to its --flag and adds the hint).

#include <stdexcept>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.hpp"

namespace glass {

/// A TrainOptions field holds a value the trainer cannot use. `field` names the member as the
/// struct spells it ("iters", "model.vocab_size", "bpe_vocab_size"); `value` is the value as text
/// ("" for a switch such as overfit_batch); `reason` says what is wrong, written as a predicate
/// of the field and its value ("must be a positive integer", "is longer than ..."); `other_field`, when not "", is a second field whose
/// value makes this one wrong (overfit_batch with resume). what() reads
/// "iters = 0: must be a positive integer".
class OptionError : public std::invalid_argument {
 public:
  OptionError(std::string field, std::string value, std::string reason,
              std::string other_field = "");
  const std::string& field() const { return field_; }
  const std::string& value() const { return value_; }
  const std::string& reason() const { return reason_; }
  const std::string& other_field() const { return other_field_; }

 private:
  std::string field_, value_, reason_, other_field_;
};

/// A recipe field asked of a resumed run that differs from the value its save records.
struct RecipeDifference {
  std::string field;     ///< "lr", "min_lr", "warmup", "decay_iters", "batch_size", "grad_clip",
                         ///< "optimizer", "muon_lr"
  std::string given;     ///< the value asked for, as the recipe line prints it
  std::string recorded;  ///< the value the run was trained with
};

/// The shape of the errors about the run in one directory (TrainOptions::out_dir): what()
/// states the fact, out_dir() names the directory, and each front end words it
/// (cli/train_errors.cpp). `Base` is the standard class a catch site sorts it by:
/// std::invalid_argument for a request that contradicts the run, std::runtime_error for a
/// directory that does not hold what is asked of it.
template <typename Base>
class RunDirError : public Base {
 public:
  RunDirError(std::string out_dir, const std::string& what)
      : Base(what), out_dir_(std::move(out_dir)) {}
  const std::string& out_dir() const { return out_dir_; }

 private:
  std::string out_dir_;
};

/// A resume that asks for another recipe than the run was trained with (Resume::take_recorded):
/// the run in `out_dir` would not be the same run. Lists every field that differs.
class RecipeMismatchError : public RunDirError<std::invalid_argument> {
 public:
  RecipeMismatchError(std::string out_dir, std::vector<RecipeDifference> differences);
  const std::vector<RecipeDifference>& differences() const { return differences_; }

 private:
  std::vector<RecipeDifference> differences_;
};

/// A resume on another text than the run was trained on: the save in `out_dir` records the file
/// name `recorded`; `given` is TrainOptions::data_path (`defaulted`: the bundled corpus, used
/// because no text was given).
class DataMismatchError : public RunDirError<std::invalid_argument> {
 public:
  DataMismatchError(std::string out_dir, std::string recorded, std::string given, bool defaulted);
  const std::string& recorded() const { return recorded_; }
  const std::string& given() const { return given_; }
  bool defaulted() const { return defaulted_; }

 private:
  std::string recorded_, given_;
  bool defaulted_;
};

/// A plain resume of a run trained with overfit_batch (its save records it): that run was a
/// check of the training loop on one batch, not a run to continue.
class OverfitBatchRunError : public RunDirError<std::invalid_argument> {
 public:
  explicit OverfitBatchRunError(std::string out_dir);
};

/// A resume of the run in `out_dir`, whose save is already at `step`, the last step asked for:
/// nothing is left to train. `iters_given`: the step count was given (TrainOptions::iters,
/// `iters`) rather than taken from the save; `time_budget_s` (0: none) is the budget the
/// recorded step count was chosen for. what() reads "the run in DIR is already at its last step
/// 120 (the step count recorded in its save, chosen for a time budget of 1s)" or "iters = 120:
/// the run in DIR is already at step 120".
class FinishedRunError : public RunDirError<std::invalid_argument> {
 public:
  FinishedRunError(std::string out_dir, long step, long iters, bool iters_given,
                   double time_budget_s);
  long step() const { return step_; }
  long iters() const { return iters_; }
  bool iters_given() const { return iters_given_; }
  double time_budget_s() const { return time_budget_s_; }

 private:
  long step_, iters_;
  bool iters_given_;
  double time_budget_s_;
};

/// A resume of `out_dir`, which holds no save with a training state (config.json,
/// model.safetensors, train_state.json, train_state.safetensors).
class NoSaveToResumeError : public RunDirError<std::runtime_error> {
 public:
  explicit NoSaveToResumeError(std::string out_dir);
};

/// A new run in `out_dir`, which already holds one that it would replace (neither resume nor
/// overwrite was asked for).
class RunExistsError : public RunDirError<std::runtime_error> {
 public:
  explicit RunExistsError(std::string out_dir);
};

/// A resume whose AdamW settings differ from those its save records (train_state.json's "adamw"
/// block): `field` ("weight_decay", "beta1", "beta2", "eps"), the value recorded and the one this
/// run asks for. A CheckpointError (the save cannot be continued as asked); what() names the
/// file and both values.
class OptimizerMismatchError : public CheckpointError {
 public:
  OptimizerMismatchError(const std::string& json_path, std::string field, double recorded,
                         double asked);
  const std::string& field() const { return field_; }
  double recorded() const { return recorded_; }
  double asked() const { return asked_; }

 private:
  std::string field_;
  double recorded_, asked_;
};

/// A model and batch whose training needs more memory than is available now (a d_model of
/// 1000000000, a batch of 100000000): what() says how much it needs, for how many parameters,
/// batch and context, and how much there is.
class OutOfMemoryError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// Raised when the loss or the gradient norm is not finite: training stops, and the last good
/// checkpoint in out_dir is left as it was.
class NonFiniteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace glass
