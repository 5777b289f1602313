#pragma once
// The training state of a checkpoint directory, for an exact --resume:
//   DIR/train_state.safetensors  AdamW moments, float32: "m.<param name>", "v.<param name>";
//                                with Muon also its momentum buffers, "muon.<param name>"
//   DIR/train_state.json         step, RNG states (batch sampler, sampling), best val loss,
//                                elapsed seconds, the log rows so far, the run's options
// Both written atomically (temp file + rename); the JSON is written last and names the step,
// and the safetensors metadata repeats it, so a mismatched pair is detected on load.

#include <optional>
#include <string>
#include <vector>

#include "train/adamw.hpp"
#include "train/muon.hpp"

namespace glass {

/// One row of log.csv: step,lr,train_loss,val_loss,tokens_per_s,elapsed_s.
struct LogRow {
  long step = 0;
  double lr = 0, train_loss = 0, val_loss = 0, tokens_per_s = 0, elapsed_s = 0;
};

/// One row of steps.csv, one per optimizer step: step,loss,lr,grad_norm,tokens_per_s,elapsed_s.
/// `step` counts the steps done once this one is (1 for the first), as the progress line, the
/// evaluations ("step 2000: ...", after 2000 updates) and the saves (step-002000) do, so a run of
/// 2000 steps ends at row 2000; `loss` is its batch loss (before the update),
/// `grad_norm` the global gradient norm before clipping, `tokens_per_s` that step's speed and
/// `elapsed_s` the training time when it ended.
struct StepRow {
  long step = 0;
  double loss = 0, lr = 0, grad_norm = 0, tokens_per_s = 0, elapsed_s = 0;
};

/// The recipe a run was trained with, recorded in train_state.json ("recipe") so that --resume
/// can continue it with the same values (absent in older checkpoints).
struct TrainRecipe {
  double lr = 0, min_lr = 0, grad_clip = 0;
  long warmup = 0, decay_iters = 0;
  std::size_t batch_size = 0;
  long iters = 0;                   ///< the step count the run trains to; 0 in older checkpoints
  double time_budget_s = 0;         ///< the time budget iters was chosen for (--time); 0: none
  std::string optimizer = "adamw";  ///< "adamw" or "muon" (absent from the file: adamw)
  double muon_lr = 0;               ///< Muon's peak learning rate (optimizer "muon" only)
  bool zero_init_out = false;       ///< the blocks' output projections started at zero
  /// A chat fine-tune (glass finetune): the base checkpoint it started from, as given, and the
  /// SHA-256 of the base's weights file. Both "" for a run trained on a text.
  std::string chat_base{}, chat_base_sha256{};
  bool chat_loss_on_all = false;  ///< the fine-tune's loss on every token (--loss-on all)
};

/// Everything besides the weights and the moments that an exact resume needs.
struct TrainState {
  long step = 0;           ///< optimizer steps done (= AdamW step count)
  std::string batch_rng;   ///< BatchSampler::state() of the training batches
  std::string sample_rng;  ///< std::mt19937_64 state (operator<<) of the sampler
  double best_val = 0;     ///< best validation loss so far (valid when has_best)
  bool has_best = false;
  double elapsed_s = 0;     ///< training wall time so far
  std::size_t context = 0;  ///< the training window T
  std::vector<LogRow> log;  ///< log.csv rows so far
  std::string run_id;       ///< the run's id (checkpoint/run_dir.hpp); empty in old checkpoints
  bool has_recipe = false;  ///< false in checkpoints written before the recipe was recorded
  TrainRecipe recipe;       ///< the run's lr schedule, batch size and clip
  /// Trained on one batch again and again (TrainOptions::overfit_batch): recorded as
  /// "overfit_batch": true only then, so a normal run's file is as before and a save without
  /// the field is a normal run's.
  bool overfit_batch = false;
};

/// Writes DIR/train_state.safetensors and DIR/train_state.json atomically. With `muon` (a Muon
/// run: AdamW holds the other parameters) its buffers and settings ("muon" block) are saved too;
/// without it the files are those of an AdamW run as they always were.
/// Throws CheckpointError when DIR cannot be written.
void save_train_state(const std::string& dir, const AdamW& optimizer, const TrainState& state,
                      const Muon* muon = nullptr);

/// Reads the training state; fills the optimizer's moments (by parameter name, shapes checked)
/// and its step count. Throws CheckpointError naming the file and the problem (missing file,
/// bad JSON, missing tensor, wrong shape, steps that disagree — between the two training-state
/// files, with config.json's "training.step", or with `weights_step`, the step load_checkpoint
/// read from model.safetensors' metadata; empty = not recorded, not checked), run ids that
/// differ between the files (`weights_run_id` is the one load_checkpoint read), an "adamw"
/// block that is missing, out of range or differs from `optimizer`'s settings, a best_val
/// that is not the smallest val_loss of the log, log rows out of order or non-finite; a save
/// of a Muon run read without `muon` or an AdamW run read with it (another optimizer would not
/// continue the same run), a "muon" block that differs from `muon`'s settings, a non-finite
/// Muon buffer. DIR may be a run directory (its current save is read).
TrainState load_train_state(const std::string& dir, AdamW& optimizer,
                            const std::string& weights_step = "",
                            const std::string& weights_run_id = "", Muon* muon = nullptr);

/// True when DIR holds a complete checkpoint to resume from (config, weights, training state).
bool has_train_state(const std::string& dir);

/// log.csv text: the header `step,lr,train_loss,val_loss,tokens_per_s,elapsed_s` and one line
/// per row.
std::string log_csv(const std::vector<LogRow>& rows);

/// The header line of steps.csv: "step,loss,lr,grad_norm,tokens_per_s,elapsed_s\n".
inline constexpr const char* kStepsCsvHeader = "step,loss,lr,grad_norm,tokens_per_s,elapsed_s\n";

/// One line of steps.csv (with its '\n').
std::string step_csv_line(const StepRow& row);

/// steps.csv text: the header and one line per row.
std::string steps_csv(const std::vector<StepRow>& rows);

/// The rows of a steps.csv written by the trainer. A missing file gives no rows; a file with
/// another header, or a line that is not six numbers, throws CheckpointError naming it.
std::vector<StepRow> read_steps_csv(const std::string& path);

/// True when DIR's train_state.json records an overfit_batch run (DIR may be a run directory:
/// its current save is read); false without a training state or the field. Throws
/// CheckpointError when the file cannot be parsed or the field is not true or false.
bool records_overfit_batch(const std::string& dir);

/// The recipe recorded in DIR's train_state.json (DIR may be a run directory: its current save
/// is read); std::nullopt when there is no training state or it records no recipe.
/// Throws CheckpointError when the file exists but cannot be parsed.
std::optional<TrainRecipe> load_train_recipe(const std::string& dir);

}  // namespace glass
