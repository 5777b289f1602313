// The recipe of a run (train/recipe.hpp): --resume takes the recorded values of the flags left
// out, keeps a value equal to the recorded one but for the last bits of its decimal spelling,
// refuses another value (naming the flag and both values) and another text.

#include <filesystem>
#include <stdexcept>
#include <string>
#include <unistd.h>

#include <gtest/gtest.h>

#include "checkpoint/checkpoint.hpp"
#include "fixtures.hpp"
#include "train/recipe.hpp"
#include "train/train_state.hpp"

using namespace glass;
namespace fs = std::filesystem;

namespace {

/// A checkpoint in `dir` trained on "text.txt" with context 8, whose training state records the
/// recipe lr 2e-3, min_lr 3e-3 / 10, clip 1, warmup 7, decay_iters 40, batch 4 (when
/// `with_recipe`).
void write_run(const fs::path& dir, bool with_recipe) {
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
  save_train_state(dir.string(), optimizer, state);
}

std::string refusal(TrainOptions& o, const RecipeFlagsGiven& given) {
  try {
    take_recorded_recipe(o, given);
  } catch (const std::invalid_argument& e) {
    return e.what();
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
  take_recorded_recipe(o, {});
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
  same.lr = 2e-3, same.min_lr = 3e-4, same.context = 16;
  RecipeFlagsGiven given;
  given.lr = given.min_lr = given.context = true;
  take_recorded_recipe(same, given);
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
  o.lr = 5e-3, o.batch_size = 8;
  RecipeFlagsGiven given;
  given.lr = given.batch_size = true;
  const std::string message = refusal(o, given);
  EXPECT_NE(message.find("--resume continues the run in " + dir.string() + " with its own recipe"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("\n  --lr 0.005 (the run was trained with --lr 0.002)"), std::string::npos)
      << message;
  EXPECT_NE(message.find("\n  --batch-size 8 (the run was trained with --batch-size 4)"),
            std::string::npos)
      << message;

  // A checkpoint written before the recipe was recorded: the flags as given, but the context its
  // config.json records (training.context 8), which such checkpoints have too.
  write_run(dir, false);
  TrainOptions old;
  old.out_dir = dir.string();
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
  EXPECT_NO_THROW(check_recorded_data(o, false));
  o.data_path = "other.txt";
  try {
    check_recorded_data(o, true);
    FAIL() << "another text was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("was trained on a text named 'text.txt', not on "
                                         "'other.txt' (the bundled corpus, used when --data is "
                                         "left out): pass --data with the path of 'text.txt'"),
              std::string::npos)
        << e.what();
  }
  o.out_dir = (dir / "nothing-here").string();  // no checkpoint: the Trainer says so
  EXPECT_NO_THROW(check_recorded_data(o, false));
  fs::remove_all(dir);
}
