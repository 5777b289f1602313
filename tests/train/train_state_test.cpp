// The training state of a checkpoint (train/train_state.cpp) read back from corrupt files: every
// way a file can be bad is a CheckpointError that names the file.

#include <filesystem>
#include <limits>
#include <string>
#include <unistd.h>

#include <gtest/gtest.h>

#include "fixtures.hpp"
#include "train/adamw.hpp"
#include "checkpoint/atomic_file.hpp"
#include "train/errors.hpp"
#include "train/train_state.hpp"

using namespace glass;
namespace fs = std::filesystem;

namespace {

void expect_refused(const std::string& dir, AdamW& optimizer, const std::string& phrase) {
  try {
    load_train_state(dir, optimizer);
    FAIL() << "train_state.json loaded; expected an error saying " << phrase;
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find(phrase), std::string::npos) << e.what();
  }
}

}  // namespace

// A number beyond the range of a double makes the JSON parser throw out_of_range, not
// parse_error (found by the train_state fuzz harness with "22e2222"); an integer field holding
// a number that is not an integer (converting 3.5e41 to long is undefined behaviour, reported by
// UBSan) is refused too.
TEST(TrainState, OutOfRangeAndNonIntegerNumbersAreCheckpointErrors) {
  const fs::path dir =
      fs::temp_directory_path() / ("glass-train-state-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const ModelConfig config = glass_test::write_small_checkpoint(dir.string(), 16, 3);
  Decoder model(config, 3);
  AdamW optimizer(model.named_parameters());
  const std::string state = (dir / "train_state.json").string();
  write_file_atomic(state, "{\"step\": 22e2222}");
  expect_refused(dir.string(), optimizer, "train_state.json");
  write_file_atomic(state, "{\"step\": 355555555555555555555555555555555555555555}");
  expect_refused(dir.string(), optimizer, "\"step\" must be an integer");
  fs::remove_all(dir);
}

// The mode of an overfit_batch run is read back; absent, the run is a normal one; a value that is
// not a boolean is refused naming the file.
TEST(TrainState, TheOverfitBatchModeIsReadBackAndAbsentMeansANormalRun) {
  const fs::path dir =
      fs::temp_directory_path() / ("glass-train-state-overfit-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const ModelConfig config = glass_test::write_small_checkpoint(dir.string(), 16, 3);
  Decoder model(config, 3);
  AdamW optimizer(model.named_parameters());
  TrainState state;
  state.context = 16;
  save_train_state(dir.string(), optimizer, state);
  EXPECT_FALSE(load_train_state(dir.string(), optimizer).overfit_batch);
  state.overfit_batch = true;
  save_train_state(dir.string(), optimizer, state);
  EXPECT_TRUE(load_train_state(dir.string(), optimizer).overfit_batch);
  const std::string path = (dir / "train_state.json").string();
  std::string text = read_file(path);
  const std::string field = "\"overfit_batch\": true";
  ASSERT_NE(text.find(field), std::string::npos) << text;
  text.replace(text.find(field), field.size(), "\"overfit_batch\": 1");
  write_file_atomic(path, text);
  expect_refused(dir.string(), optimizer, "\"overfit_batch\" must be true or false");
  fs::remove_all(dir);
}

// AdamW settings other than the save's are a typed error stating the fact (the command line adds
// the flag to pass, cli/train_errors.cpp).
TEST(TrainState, OtherAdamWSettingsAreATypedErrorNamingNoFlag) {
  const fs::path dir =
      fs::temp_directory_path() / ("glass-train-state-adamw-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const ModelConfig config = glass_test::write_small_checkpoint(dir.string(), 16, 3);
  Decoder model(config, 3);
  AdamW saved(model.named_parameters(), AdamWConfig{0.9, 0.95, 1e-8, 0.1});
  TrainState state;
  state.context = 16;
  save_train_state(dir.string(), saved, state);
  AdamW other(model.named_parameters(), AdamWConfig{0.9, 0.95, 1e-8, 0.2});
  try {
    load_train_state(dir.string(), other);
    FAIL() << "another weight decay was resumed";
  } catch (const OptimizerMismatchError& e) {
    EXPECT_EQ(e.field(), "weight_decay");
    EXPECT_EQ(e.recorded(), 0.1);
    EXPECT_EQ(e.asked(), 0.2);
    EXPECT_NE(std::string(e.what()).find("train_state.json: the checkpoint was trained with AdamW "
                                         "weight_decay = 0.1, this run asks for 0.2"),
              std::string::npos)
        << e.what();
    EXPECT_EQ(std::string(e.what()).find("--"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

// steps.csv: one line per step with the header the live page reads; read back exactly as the
// trainer wrote it (a --resume starts the live file from the save's copy), and a file that is
// not one is refused naming it.
TEST(TrainState, StepsCsvRoundTripsAndBadFilesAreNamed) {
  const fs::path dir =
      fs::temp_directory_path() / ("glass-steps-csv-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::vector<StepRow> rows = {{0, 4.4123456, 1.666667e-4, 0.8125, 1234.5, 0.125},
                                     {1, 4.3, 3.333333e-4, 2.5, 1300.0, 0.25}};
  const std::string text = steps_csv(rows);
  EXPECT_EQ(text,
            "step,loss,lr,grad_norm,tokens_per_s,elapsed_s\n"
            "0,4.412346,1.666667e-04,8.125000e-01,1234.5,0.125\n"
            "1,4.300000,3.333333e-04,2.500000e+00,1300.0,0.250\n");
  const std::string path = (dir / "steps.csv").string();
  write_file_atomic(path, text);
  const std::vector<StepRow> back = read_steps_csv(path);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[1].step, 1);
  EXPECT_DOUBLE_EQ(back[0].loss, 4.412346);
  EXPECT_DOUBLE_EQ(back[1].grad_norm, 2.5);
  EXPECT_TRUE(read_steps_csv((dir / "missing.csv").string()).empty());
  write_file_atomic(path, "step,lr,train_loss\n0,1,2\n");
  EXPECT_THROW(read_steps_csv(path), CheckpointError);
  write_file_atomic(path, std::string(kStepsCsvHeader) + "0,4.4,0.001\n");
  try {
    read_steps_csv(path);
    FAIL() << "a short line was accepted";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("line 2 is not six numbers"), std::string::npos)
        << e.what();
  }
  fs::remove_all(dir);
}

// The recipe --resume continues: written by save_train_state, read by load_train_recipe; absent
// in a state written without it.
TEST(TrainState, TheRecipeIsRecordedAndReadBack) {
  const fs::path dir = fs::temp_directory_path() / ("glass-recipe-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const ModelConfig config = glass_test::write_small_checkpoint(dir.string(), 16, 3);
  Decoder model(config, 3);
  AdamW optimizer(model.named_parameters());
  TrainState state;
  state.context = 8;
  save_train_state(dir.string(), optimizer, state);
  EXPECT_FALSE(load_train_recipe(dir.string()).has_value());
  state.has_recipe = true;
  state.recipe = {2e-3, 2e-4, 1.0, 7, 40, 4};
  save_train_state(dir.string(), optimizer, state);
  const std::optional<TrainRecipe> recipe = load_train_recipe(dir.string());
  ASSERT_TRUE(recipe.has_value());
  EXPECT_EQ(recipe->lr, 2e-3);
  EXPECT_EQ(recipe->min_lr, 2e-4);
  EXPECT_EQ(recipe->grad_clip, 1.0);
  EXPECT_EQ(recipe->warmup, 7);
  EXPECT_EQ(recipe->decay_iters, 40);
  EXPECT_EQ(recipe->batch_size, 4u);
  EXPECT_FALSE(load_train_recipe((dir / "nothing-here").string()).has_value());
  fs::remove_all(dir);
}

/// A small checkpoint in a fresh temporary directory, its model, and an AdamW over it whose
/// moments are all m = 0.25 and v = 0.5 (not saved yet), with the state of step 2.
struct Moments {
  explicit Moments(const std::string& name)
      : dir(fresh_dir(fs::temp_directory_path() /
                      ("glass-train-state-" + name + "-" + std::to_string(::getpid())))),
        model(glass_test::write_small_checkpoint(dir.string(), 16, 3), 3),
        saved(model.named_parameters()) {
    state.step = 2;
    state.context = 16;
    for (AdamWParam& p : saved.params()) {
      p.m.fill(0.25f);
      p.v.fill(0.5f);
    }
  }
  static fs::path fresh_dir(const fs::path& d) {
    fs::remove_all(d);
    return d;
  }
  fs::path dir;
  Decoder model;
  AdamW saved;
  TrainState state;
};

// AdamW's second moment v is a running mean of squared gradients: a negative entry can only come
// from a corrupt (or hand-edited) train_state.safetensors, and resuming would take its square
// root. It is refused before any moment is copied.
TEST(TrainState, ANegativeSecondMomentIsRefusedAndTheOptimizerIsLeftAsItWas) {
  Moments run("v");
  const fs::path& dir = run.dir;
  Decoder& model = run.model;
  AdamW& saved = run.saved;
  const TrainState& state = run.state;
  save_train_state(dir.string(), saved, state);
  {  // all v >= 0: resumes, moments copied
    AdamW resumed(model.named_parameters());
    EXPECT_EQ(load_train_state(dir.string(), resumed).step, 2);
    EXPECT_EQ(resumed.params().back().v(0), 0.5f);
  }
  AdamWParam& last = saved.params().back();  // the last parameter: every other one was fine
  last.v(1) = -1e-6f;
  save_train_state(dir.string(), saved, state);
  AdamW resumed(model.named_parameters());
  expect_refused(dir.string(), resumed, "tensor 'v." + last.name + "' holds a negative value");
  expect_refused(dir.string(), resumed, "at index 1");
  for (const AdamWParam& p : resumed.params()) {  // nothing was copied
    EXPECT_EQ(p.m(0), 0.0f) << p.name;
    EXPECT_EQ(p.v(0), 0.0f) << p.name;
  }
  last.v(1) = -0.0f;  // minus zero is zero: accepted
  save_train_state(dir.string(), saved, state);
  EXPECT_EQ(load_train_state(dir.string(), resumed).step, 2);
  fs::remove_all(dir);
}

// A NaN or an infinity in either moment cannot come from a finite step (the trainer stops before
// the update) and would turn the weights it touches into NaN: refused like a negative v.
TEST(TrainState, ANonFiniteMomentIsRefusedAndTheOptimizerIsLeftAsItWas) {
  Moments run("nan");
  const fs::path& dir = run.dir;
  Decoder& model = run.model;
  AdamW& saved = run.saved;
  const TrainState& state = run.state;
  AdamWParam& last = saved.params().back();
  const float bad_values[] = {std::numeric_limits<float>::quiet_NaN(),
                              std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity()};
  for (const char* moment : {"m", "v"}) {
    for (float bad : bad_values) {
      Array& target = moment[0] == 'm' ? last.m : last.v;
      const float kept = target(2);
      target(2) = bad;
      save_train_state(dir.string(), saved, state);
      AdamW resumed(model.named_parameters());
      expect_refused(dir.string(), resumed,
                     std::string("tensor '") + moment + "." + last.name + "' holds");
      expect_refused(dir.string(), resumed, "at index 2");
      for (const AdamWParam& p : resumed.params()) {  // nothing was copied
        EXPECT_EQ(p.m(0), 0.0f) << p.name;
        EXPECT_EQ(p.v(0), 0.0f) << p.name;
      }
      target(2) = kept;
    }
  }
  fs::remove_all(dir);
}
