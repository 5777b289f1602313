// The recipe of a run: recorded by each save, taken back (or refused) by --resume. See
// train/recipe.hpp.

#include "train/recipe.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <fmt/format.h>

#include "checkpoint/checkpoint.hpp"
#include "checkpoint/run_dir.hpp"

namespace glass {

namespace {

/// The save --resume continues in out_dir: the one `current` points to, or, when that link was
/// lost, the newest complete save (the one the Trainer resumes from and links again). Its
/// recipe, context and text name are the run's.
std::string resumed_save(const std::string& out_dir) {
  namespace fs = std::filesystem;
  std::error_code no_link;
  if (!fs::is_directory(out_dir, no_link) ||
      fs::exists(fs::symlink_status(fs::path(out_dir) / kCurrentLink, no_link)))
    return out_dir;
  const std::string newest = newest_complete_save(out_dir);
  return newest.empty() ? out_dir : (fs::path(out_dir) / newest).string();
}

}  // namespace

TrainRecipe recipe_of(const TrainOptions& o) {
  return {o.lr, o.min_lr, o.grad_clip, o.warmup, o.decay_iters, o.batch_size};
}

void take_recorded_recipe(TrainOptions& o, const RecipeFlagsGiven& given) {
  namespace fs = std::filesystem;
  const std::string save = resumed_save(o.out_dir);
  // A directory with no save at all (no `current` link, no config.json): the Trainer refuses the
  // resume with its own message.
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(fs::path(save) / kCurrentLink, ec)) &&
      !fs::exists(fs::path(save) / "config.json", ec))
    return;
  // The window is recorded in config.json, read through `current` (a link to a save that is gone
  // is an error naming the file); another --context is allowed (the Trainer warns).
  const std::size_t context = training_context(save);
  if (!given.context && context > 0) o.context = context;
  // No recorded recipe: a checkpoint from before the recipe was recorded (its flags as given).
  const std::optional<TrainRecipe> recorded = load_train_recipe(save);
  if (!recorded) return;
  std::string differ;
  // Rates as the recipe line prints them ({:g}), or in full when that would print both alike.
  auto shown = [](auto v, auto other) {
    if constexpr (std::is_floating_point_v<decltype(v)>)
      if (fmt::format("{:g}", v) != fmt::format("{:g}", other)) return fmt::format("{:g}", v);
    return fmt::format("{}", v);
  };
  // A rate equal to the recorded one but for the last bits of its decimal spelling is the same
  // rate (--min-lr 3e-4 against the recorded default 3e-3 / 10 = 0.00030000000000000003): it is
  // taken as recorded, so the resumed run stays bit for bit the same run.
  auto same = [](auto a, auto b) {
    if constexpr (std::is_floating_point_v<decltype(a)>)
      return std::abs(a - b) <= 1e-12 * std::max(std::abs(a), std::abs(b));
    else
      return a == b;
  };
  auto take = [&](const char* flag, bool flag_given, auto& value, auto theirs) {
    if (!flag_given || same(value, theirs)) {
      value = theirs;
    } else {
      differ += fmt::format("\n  {} {} (the run was trained with {} {})", flag,
                            shown(value, theirs), flag, shown(theirs, value));
    }
  };
  take("--lr", given.lr, o.lr, recorded->lr);
  take("--min-lr", given.min_lr, o.min_lr, recorded->min_lr);
  take("--warmup", given.warmup, o.warmup, recorded->warmup);
  take("--decay-iters", given.decay_iters, o.decay_iters, recorded->decay_iters);
  take("--batch-size", given.batch_size, o.batch_size, recorded->batch_size);
  take("--grad-clip", given.grad_clip, o.grad_clip, recorded->grad_clip);
  if (!differ.empty())
    throw std::invalid_argument(
        "--resume continues the run in " + o.out_dir +
        " with its own recipe, but these flags ask "
        "for other values:" +
        differ +
        "\nLeave them out (the recorded values are used), or start a new run with --out DIR "
        "(or --overwrite).");
}

void check_recorded_data(const TrainOptions& o, bool data_defaulted) {
  std::string recorded_data;
  try {
    recorded_data = training_data(resumed_save(o.out_dir));
  } catch (const std::exception&) {
    // no readable checkpoint in --out: the Trainer says so
  }
  if (!recorded_data.empty() &&
      std::filesystem::path(o.data_path).filename().string() != recorded_data)
    throw std::invalid_argument(fmt::format(
        "the run in {} was trained on a text named '{}', not on '{}'{}: pass --data with the "
        "path of '{}' to continue it, or start a new run with another --out (or --overwrite)",
        o.out_dir, recorded_data, o.data_path,
        data_defaulted ? " (the bundled corpus, used when --data is left out)" : "",
        recorded_data));
}

}  // namespace glass
