// What a resumed run continues. See train/resume.hpp.

#include "train/resume.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "checkpoint/atomic_file.hpp"
#include "checkpoint/checkpoint.hpp"
#include "checkpoint/checkpoint_files.hpp"
#include "checkpoint/config_json.hpp"
#include "checkpoint/run_dir.hpp"
#include "train/errors.hpp"

namespace glass {

namespace fs = std::filesystem;

namespace {

/// A recorded rate as the recipe line prints it ({:g}), or in full when that would print both
/// alike; a count as it is.
template <typename T>
std::string shown(T v, T other) {
  if constexpr (std::is_floating_point_v<T>)
    if (fmt::format("{:g}", v) != fmt::format("{:g}", other)) return fmt::format("{:g}", v);
  return fmt::format("{}", v);
}

/// A rate equal to the recorded one but for the last bits of its decimal spelling is the same
/// rate (3e-4 against the recorded default 3e-3 / 10 = 0.00030000000000000003): taken as
/// recorded, so the resumed run stays bit for bit the same run.
template <typename T>
bool same(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    return std::abs(a - b) <= 1e-12 * std::max(std::abs(a), std::abs(b));
  else
    return a == b;
}

/// Takes the recorded recipe into `o`; the fields given with another value are returned.
std::vector<RecipeDifference> take_recipe(TrainOptions& o, const TrainRecipe& recorded) {
  std::vector<RecipeDifference> differ;
  auto take = [&](const char* field, bool given, auto& value, auto theirs) {
    if (!given || same(value, theirs))
      value = theirs;
    else
      differ.push_back({field, shown(value, theirs), shown(theirs, value)});
  };
  const RecipeGiven& g = o.recipe_given;
  take("lr", g.lr, o.lr, recorded.lr);
  take("min_lr", g.min_lr, o.min_lr, recorded.min_lr);
  take("warmup", g.warmup, o.warmup, recorded.warmup);
  take("decay_iters", g.decay_iters, o.decay_iters, recorded.decay_iters);
  take("batch_size", g.batch_size, o.batch_size, recorded.batch_size);
  take("grad_clip", g.grad_clip, o.grad_clip, recorded.grad_clip);
  // The optimizer is part of the recipe (a save without it is AdamW's); Muon's rate with it.
  std::string optimizer = optimizer_name(o.optimizer);
  take("optimizer", g.optimizer, optimizer, recorded.optimizer);
  o.optimizer = optimizer_from_name(optimizer).value_or(o.optimizer);
  if (recorded.optimizer == "muon") take("muon_lr", g.muon_lr, o.muon_lr, recorded.muon_lr);
  o.zero_init_out = recorded.zero_init_out;  // how the resumed weights started
  return differ;
}

}  // namespace

void Resume::take_chat_base(TrainOptions& o, const TrainRecipe& recorded) const {
  const bool chat_run = !recorded.chat_base.empty();
  if (chat_run && !o.chat.enabled)
    throw OptionError("data", o.data_path,
                      fmt::format("cannot continue the run in {}: it is a chat fine-tune of {} "
                                  "(continue it with glass finetune --resume)",
                                  out_dir_, recorded.chat_base));
  if (!chat_run && o.chat.enabled)
    throw OptionError("chat", o.data_path,
                      fmt::format("cannot continue the run in {} as a chat fine-tune: it was "
                                  "trained on a text (continue it with glass train --resume)",
                                  out_dir_));
  if (!chat_run) return;
  o.chat.base_dir = recorded.chat_base;  // the weights come from the save; the base is recorded
  o.chat.base_sha256 = recorded.chat_base_sha256;
  // Which targets the loss takes is the run's: another one would be another run.
  if (o.chat.loss_on_given && o.chat.loss_on_all != recorded.chat_loss_on_all)
    throw OptionError("loss_on", o.chat.loss_on_all ? "all" : "answers",
                      fmt::format("differs from the run in {}, fine-tuned with the loss on {}: "
                                  "a resume continues the same loss",
                                  out_dir_, recorded.chat_loss_on_all ? "all" : "answers"));
  o.chat.loss_on_all = recorded.chat_loss_on_all;
}

TrainRecipe recipe_of(const TrainOptions& o) {
  TrainRecipe r{o.lr,          o.min_lr,     o.grad_clip, o.warmup,
                o.decay_iters, o.batch_size, o.iters,     o.time_budget_s};
  r.optimizer = optimizer_name(o.optimizer);
  r.zero_init_out = o.zero_init_out;
  if (o.optimizer == OptimizerKind::muon) r.muon_lr = o.muon_lr;
  if (o.chat.enabled) {
    r.chat_base = o.chat.base_dir;
    r.chat_base_sha256 = o.chat.base_sha256;
    r.chat_loss_on_all = o.chat.loss_on_all;
  }
  return r;
}

Resume::Resume(const std::string& out_dir) : out_dir_(out_dir), save_dir_(out_dir) {
  const SaveToRead read = save_to_read(out_dir);
  if (read.fallback.empty()) return;
  save_dir_ = read.dir;
  relink_ = read.fallback;
  note_ = fmt::format("{}; resuming from the newest complete save, {}, and restoring the link",
                      read.reason, relink_);
}

void Resume::check_resumable(const TrainOptions& o) {
  if (!o.resume) return;
  if (o.overfit_batch)
    throw OptionError("overfit_batch", "", "is a check of the training loop, not a run to continue",
                      "resume");
  if (o.time_budget_s > 0)
    throw OptionError("time", "",
                      "chooses the step count of a new run; a resumed run trains to the step "
                      "count its save records, or to the iters given",
                      "resume");
  if (o.overwrite)
    throw OptionError("overwrite", "",
                      "starts a new run over the one a resume would continue: the two "
                      "contradict each other",
                      "resume");
}

bool Resume::has_save() const { return has_train_state(save_dir_); }

void Resume::require_save() const {
  if (!has_save()) throw NoSaveToResumeError(out_dir_);
}

void Resume::take_recorded(TrainOptions& o) const {
  std::error_code ec;
  // No save at all (no `current` link, no config.json): require_save refuses the resume.
  if (!fs::exists(fs::symlink_status(fs::path(save_dir_) / kCurrentLink, ec)) &&
      !fs::exists(fs::path(save_dir_) / "config.json", ec))
    return;
  // The window and the text's name are recorded in config.json.
  const std::size_t context = training_context(save_dir_);
  if (!o.recipe_given.context && context > 0) o.context = context;
  const std::string data = training_data(save_dir_);
  if (!data.empty() && fs::path(o.data_path).filename().string() != data)
    throw DataMismatchError(out_dir_, data, o.data_path, o.data_defaulted);
  // A check of the training loop on one batch is not a run to continue (with overfit_batch
  // itself, check_resumable has refused the resume already).
  if (!o.overfit_batch && records_overfit_batch(save_dir_)) throw OverfitBatchRunError(out_dir_);
  // No recorded recipe: a checkpoint from before the recipe was recorded (its values as given).
  const std::optional<TrainRecipe> recorded = load_train_recipe(save_dir_);
  if (!recorded) return;
  take_chat_base(o, *recorded);
  std::vector<RecipeDifference> differ = take_recipe(o, *recorded);
  // The step count taken from the save keeps the budget it was chosen for, so that the next
  // save records it too (run() fits no budget on resume: the trial is a new run's).
  if (o.iters_from_save && recorded->iters > 0) {
    o.iters = recorded->iters;
    o.time_budget_s = recorded->time_budget_s;
  }
  if (!differ.empty()) throw RecipeMismatchError(out_dir_, std::move(differ));
}

}  // namespace glass
