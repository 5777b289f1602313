// What a resume continues (train/resume.hpp): the save (`current`, or the newest complete save
// when that link is missing or dangling), the recorded values of the recipe fields left out (a
// value equal to the recorded one but for the last bits of its decimal spelling is the recorded
// one), and the refusals: another value (naming the field and both values), another text, no
// save, and the options that cannot be resumed.

#include <filesystem>
#include <stdexcept>
#include <string>
#include <unistd.h>

#include <gtest/gtest.h>

#include "checkpoint/atomic_file.hpp"
#include "checkpoint/checkpoint.hpp"
#include "checkpoint/manifest.hpp"
#include "checkpoint/run_dir.hpp"
#include "fixtures.hpp"
#include "train/errors.hpp"
#include "train/resume.hpp"
#include "train/train_state.hpp"

using namespace glass;
namespace fs = std::filesystem;

namespace {

/// A checkpoint in `dir` trained on "text.txt" with context 8, whose training state records the
/// recipe lr 2e-3, min_lr 3e-3 / 10, clip 1, warmup 7, decay_iters 40, batch 4 (when
/// `with_recipe`).
void write_run(const fs::path& dir, bool with_recipe, bool overfit_batch = false) {
  fs::remove_all(dir);
  const Tokenizer tokenizer = Tokenizer::from_text(glass_test::kSmallText);
  const Decoder model(glass_test::small_config(tokenizer.vocab_size(), 16), 3);
  save_model(dir.string(), model, tokenizer, "model.safetensors",
             R"({"training": {"context": 8, "data": "text.txt"}})");
  Decoder trained(model.config(), 3);
  AdamW optimizer(trained.named_parameters());
  TrainState state;
  state.context = 8;
  state.has_recipe = with_recipe;
  TrainOptions recorded;
  recorded.lr = 2e-3, recorded.min_lr = 3e-3 / 10, recorded.grad_clip = 1.0;
  recorded.warmup = 7, recorded.decay_iters = 40, recorded.batch_size = 4;
  state.recipe = recipe_of(recorded);
  state.overfit_batch = overfit_batch;
  save_train_state(dir.string(), optimizer, state);
}

/// take_recorded's refusal: the differences, as "field given recorded" lines; "" when none.
std::string refusal(TrainOptions& o, const RecipeGiven& given) {
  o.recipe_given = given;
  try {
    Resume(o.out_dir).take_recorded(o);
  } catch (const RecipeMismatchError& e) {
    std::string lines;
    for (const RecipeDifference& d : e.differences())
      lines += d.field + " " + d.given + " " + d.recorded + "\n";
    return lines;
  }
  return "";
}

}  // namespace

TEST(Recipe, ResumeTakesTheRecordedRecipeForTheFlagsLeftOut) {
  const fs::path dir =
      fs::temp_directory_path() / ("glass-recipe-take-" + std::to_string(::getpid()));
  write_run(dir, true);
  TrainOptions o;  // the defaults: lr 1e-3, batch 12, context 64, ...
  o.out_dir = dir.string();
  o.data_path = "text.txt";
  Resume(o.out_dir).take_recorded(o);
  EXPECT_EQ(o.lr, 2e-3);
  EXPECT_EQ(o.min_lr, 3e-3 / 10);
  EXPECT_EQ(o.grad_clip, 1.0);
  EXPECT_EQ(o.warmup, 7);
  EXPECT_EQ(o.decay_iters, 40);
  EXPECT_EQ(o.batch_size, 4u);
  EXPECT_EQ(o.context, 8u);  // config.json's training.context

  // Given and equal, or equal to 1e-12 relative (--min-lr 3e-4 against 3e-3 / 10 =
  // 0.00030000000000000003): the recorded value, bit for bit; a --context given is kept
  // (another window is allowed).
  ASSERT_NE(3e-4, 3e-3 / 10);
  TrainOptions same;
  same.out_dir = dir.string();
  same.data_path = "text.txt";
  same.lr = 2e-3, same.min_lr = 3e-4, same.context = 16;
  same.recipe_given.lr = same.recipe_given.min_lr = same.recipe_given.context = true;
  Resume(same.out_dir).take_recorded(same);
  EXPECT_EQ(same.min_lr, 3e-3 / 10);
  EXPECT_EQ(same.context, 16u);
  fs::remove_all(dir);
}

TEST(Recipe, ResumeRefusesAFlagThatAsksForAnotherValue) {
  const fs::path dir =
      fs::temp_directory_path() / ("glass-recipe-refuse-" + std::to_string(::getpid()));
  write_run(dir, true);
  TrainOptions o;
  o.out_dir = dir.string();
  o.data_path = "text.txt";
  o.lr = 5e-3, o.batch_size = 8;
  RecipeGiven given;
  given.lr = given.batch_size = true;
  EXPECT_EQ(refusal(o, given), "lr 0.005 0.002\nbatch_size 8 4\n");

  // A checkpoint written before the recipe was recorded: the flags as given, but the context its
  // config.json records (training.context 8), which such checkpoints have too.
  write_run(dir, false);
  TrainOptions old;
  old.out_dir = dir.string();
  old.data_path = "text.txt";
  old.lr = 5e-3;
  EXPECT_EQ(refusal(old, given), "");
  EXPECT_EQ(old.lr, 5e-3);
  EXPECT_EQ(old.context, 8u);
  fs::remove_all(dir);
}

TEST(Recipe, ResumeRefusesAnotherText) {
  const fs::path dir =
      fs::temp_directory_path() / ("glass-recipe-text-" + std::to_string(::getpid()));
  write_run(dir, true);
  TrainOptions o;
  o.out_dir = dir.string();
  o.data_path = "/elsewhere/text.txt";  // the same file name: the same text
  EXPECT_NO_THROW(Resume(o.out_dir).take_recorded(o));
  o.data_path = "other.txt";
  o.data_defaulted = true;
  try {
    Resume(o.out_dir).take_recorded(o);
    FAIL() << "another text was accepted";
  } catch (const DataMismatchError& e) {
    EXPECT_EQ(e.recorded(), "text.txt");
    EXPECT_EQ(e.given(), "other.txt");
    EXPECT_TRUE(e.defaulted());
    EXPECT_EQ(e.out_dir(), dir.string());
  }
  o.out_dir = (dir / "nothing-here").string();  // no checkpoint: require_save says so
  EXPECT_NO_THROW(Resume(o.out_dir).take_recorded(o));
  EXPECT_THROW(Resume(o.out_dir).require_save(), NoSaveToResumeError);
  fs::remove_all(dir);
}

// ---- the save a resume continues ----------------------------------------------------------------

namespace {

/// A run directory `run` with two complete saves, step-000010 and step-000020 (the checkpoint of
/// write_run, each with its manifest), and `current` pointing to step-000020.
void write_run_dir(const fs::path& run) {
  fs::remove_all(run);
  fs::create_directories(run);
  for (const char* step : {"step-000010", "step-000020"}) {
    write_run(run / step, true);
    write_file_atomic((run / step / "log.csv").string(), log_csv({}));
    write_manifest((run / step).string(), "", std::stol(std::string(step).substr(5)));
  }
  fs::create_directory_symlink("step-000020", run / kCurrentLink);
}

}  // namespace

TEST(Resume, ContinuesTheSaveCurrentPointsTo) {
  const fs::path run =
      fs::temp_directory_path() / ("glass-resume-current-" + std::to_string(::getpid()));
  write_run_dir(run);
  const Resume resume(run.string());
  EXPECT_EQ(resume.save_dir(), run.string());  // read through `current`
  EXPECT_EQ(resume.relink(), "");
  EXPECT_EQ(resume.note(), "");
  EXPECT_TRUE(resume.has_save());
  fs::remove_all(run);
}

TEST(Resume, AMissingOrDanglingCurrentFallsBackToTheNewestCompleteSave) {
  const fs::path run =
      fs::temp_directory_path() / ("glass-resume-lost-" + std::to_string(::getpid()));
  write_run_dir(run);
  fs::remove(run / kCurrentLink);
  const Resume missing(run.string());
  EXPECT_EQ(missing.relink(), "step-000020");
  EXPECT_EQ(missing.save_dir(), (run / "step-000020").string());
  EXPECT_NE(missing.note().find("is missing; resuming from the newest complete save, step-000020"),
            std::string::npos)
      << missing.note();

  // `current` names a save that is gone (removed by hand, or by a tool that does not know the
  // layout): the same fallback, and the note says where the link pointed.
  fs::create_directory_symlink("step-000030", run / kCurrentLink);
  const Resume dangling(run.string());
  EXPECT_EQ(dangling.relink(), "step-000020");
  EXPECT_EQ(dangling.save_dir(), (run / "step-000020").string());
  EXPECT_TRUE(dangling.has_save());
  EXPECT_NE(dangling.note().find("points to step-000030, which is gone; resuming from the newest "
                                 "complete save, step-000020"),
            std::string::npos)
      << dangling.note();
  TrainOptions o;
  o.out_dir = run.string();
  o.data_path = "text.txt";
  EXPECT_NO_THROW(dangling.take_recorded(o));  // read from step-000020
  EXPECT_EQ(o.lr, 2e-3);
  fs::remove_all(run);
}

TEST(Resume, ACurrentLeadingToAnIncompleteSaveOrToAFileFallsBackTheSameWay) {
  const fs::path run =
      fs::temp_directory_path() / ("glass-resume-incomplete-" + std::to_string(::getpid()));
  write_run_dir(run);
  // step-000030: a save cut short before its last files, yet `current` leads to it.
  fs::copy(run / "step-000020", run / "step-000030");
  fs::remove(run / "step-000030" / "train_state.safetensors");
  fs::remove(run / kCurrentLink);
  fs::create_directory_symlink("step-000030", run / kCurrentLink);
  const Resume incomplete(run.string());
  EXPECT_EQ(incomplete.relink(), "step-000020");
  EXPECT_EQ(incomplete.save_dir(), (run / "step-000020").string());
  EXPECT_NE(incomplete.note().find("current (the link to the last complete save) points to "
                                   "step-000030, a save that did not complete; resuming from "
                                   "the newest complete save, step-000020, and restoring the link"),
            std::string::npos)
      << incomplete.note();
  // Complete again: read through `current`.
  fs::copy_file(run / "step-000020" / "train_state.safetensors",
                run / "step-000030" / "train_state.safetensors");
  EXPECT_EQ(Resume(run.string()).relink(), "");

  // `current` is a link to a regular file, or a regular file itself.
  fs::remove(run / kCurrentLink);
  fs::create_symlink("step-000020/log.csv", run / kCurrentLink);
  const Resume to_file(run.string());
  EXPECT_EQ(to_file.relink(), "step-000020");
  EXPECT_NE(to_file.note().find("points to step-000020/log.csv, which is a file, not a save; "
                                "resuming from the newest complete save, step-000020"),
            std::string::npos)
      << to_file.note();
  fs::remove(run / kCurrentLink);
  write_file_atomic((run / kCurrentLink).string(), "step-000020\n");
  const Resume file(run.string());
  EXPECT_EQ(file.relink(), "step-000020");
  EXPECT_TRUE(file.has_save());
  EXPECT_NE(file.note().find("current (the link to the last complete save) is a file, not a link "
                             "to a save; resuming from the newest complete save, step-000020"),
            std::string::npos)
      << file.note();
  fs::remove_all(run);
}

TEST(Resume, APlainResumeOfAnOverfitBatchRunIsRefused) {
  const fs::path dir =
      fs::temp_directory_path() / ("glass-resume-overfit-" + std::to_string(::getpid()));
  TrainOptions o;
  o.out_dir = dir.string();
  o.data_path = "text.txt";
  // A normal run's training state does not mention the mode (its file is as before the mode
  // was recorded); a save without the field is a normal run's.
  write_run(dir, true);
  EXPECT_EQ(read_file(dir / "train_state.json").find("overfit_batch"), std::string::npos);
  EXPECT_FALSE(records_overfit_batch(dir.string()));
  EXPECT_NO_THROW(Resume(o.out_dir).take_recorded(o));
  write_run(dir, true, true);
  EXPECT_TRUE(records_overfit_batch(dir.string()));
  try {
    Resume(o.out_dir).take_recorded(o);
    FAIL() << "an overfit_batch run was continued by a plain resume";
  } catch (const OverfitBatchRunError& e) {
    EXPECT_EQ(e.out_dir(), dir.string());
    EXPECT_NE(std::string(e.what()).find("overfit_batch"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

TEST(Resume, RefusesWhatCannotBeResumed) {
  TrainOptions o;
  o.resume = true;
  EXPECT_NO_THROW(Resume::check_resumable(o));
  o.overfit_batch = true;
  try {
    Resume::check_resumable(o);
    FAIL() << "overfit_batch was resumed";
  } catch (const OptionError& e) {
    EXPECT_EQ(e.field(), "overfit_batch");
    EXPECT_EQ(e.other_field(), "resume");
    EXPECT_NE(e.reason().find("a check of the training loop"), std::string::npos) << e.reason();
  }
  o.overfit_batch = false;
  o.overwrite = true;
  try {
    Resume::check_resumable(o);
    FAIL() << "overwrite was resumed";
  } catch (const OptionError& e) {
    EXPECT_EQ(e.field(), "overwrite");
    EXPECT_EQ(e.other_field(), "resume");
  }
  o.resume = false;  // a new run may overwrite
  EXPECT_NO_THROW(Resume::check_resumable(o));
}
