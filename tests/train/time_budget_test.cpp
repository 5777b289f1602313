// A time budget (train/time_budget.hpp): durations read and written, the step count that fits
// (values computed by hand), and a run fitted to a budget that `iters` N repeats bit for bit and
// whose N a resume takes back. No assertion here depends on how fast the machine is.
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "checkpoint/checkpoint.hpp"
#include "checkpoint/safetensors.hpp"
#include "data/text.hpp"
#include "train/errors.hpp"
#include "train/resume.hpp"
#include "train/time_budget.hpp"
#include "train/train_state.hpp"
#include "train/trainer.hpp"

#include "fixtures.hpp"
#include "test_paths.hpp"

using namespace glass;
namespace fs = std::filesystem;

// ---- durations ------------------------------------------------------------------------------

TEST(TimeBudget, ReadsADurationWithItsUnit) {
  EXPECT_DOUBLE_EQ(parse_duration("90s"), 90.0);
  EXPECT_DOUBLE_EQ(parse_duration("5m"), 300.0);
  EXPECT_DOUBLE_EQ(parse_duration("1.5m"), 90.0);
  EXPECT_DOUBLE_EQ(parse_duration("1h"), 3600.0);
  EXPECT_DOUBLE_EQ(parse_duration("0.5s"), 0.5);
}

TEST(TimeBudget, RefusesWhatIsNoDurationSayingWhy) {
  auto reason = [](const std::string& text) -> std::string {
    try {
      parse_duration(text);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "(accepted)";
  };
  EXPECT_EQ(reason("0"), "must be longer than 0 (e.g. 90s, 5m or 1h)");
  EXPECT_EQ(reason("0s"), "must be longer than 0 (e.g. 90s, 5m or 1h)");
  EXPECT_EQ(reason("-5m"), "must be longer than 0 (e.g. 90s, 5m or 1h)");
  EXPECT_EQ(reason("3x"), "is not a duration with its unit, e.g. 90s, 5m, 1.5m or 1h");
  EXPECT_EQ(reason("5min"), "is not a duration with its unit, e.g. 90s, 5m, 1.5m or 1h");
  EXPECT_EQ(reason("m"), "is not a duration with its unit, e.g. 90s, 5m, 1.5m or 1h");
  EXPECT_EQ(reason("infm"), "is not a duration with its unit, e.g. 90s, 5m, 1.5m or 1h");
  EXPECT_EQ(reason("0x10s"), "is not a duration with its unit, e.g. 90s, 5m, 1.5m or 1h");
  EXPECT_EQ(reason("300"),
            "has no unit: write 300s for seconds or 300m for minutes (units: s, m, h)");
  EXPECT_EQ(reason(""), "is empty: give a duration with its unit, e.g. 90s, 5m, 1.5m or 1h");
  EXPECT_EQ(reason("1001h"), "must be at most 1000h");
}

TEST(TimeBudget, WritesADurationShortly) {
  EXPECT_EQ(duration_text(45), "45s");
  EXPECT_EQ(duration_text(0.5), "0.5s");
  EXPECT_EQ(duration_text(300), "5m");
  EXPECT_EQ(duration_text(90), "1m30s");
  EXPECT_EQ(duration_text(7200), "2h");
  EXPECT_EQ(duration_text(3900), "1h05m");
}

// ---- the step count that fits ---------------------------------------------------------------

TEST(TimeBudget, CountsTheEvaluationsOfTheLoop) {
  EXPECT_EQ(evaluations_in(1000, 250), 5);  // 0, 250, 500, 750, 1000
  EXPECT_EQ(evaluations_in(1001, 250), 6);  // ... and 1001, the last step
  EXPECT_EQ(evaluations_in(10, 250), 2);    // 0 and 10
}

TEST(TimeBudget, ChoosesTheMostStepsThatFitWithTheirEvaluations) {
  // 5 minutes at 0.24 s/step, evaluations of 1 s every 250 steps:
  // N = 1225: 1225 * 0.24 = 294 s + 6 evaluations (0, 250, ..., 1000, 1225) = 300 s: fits;
  // N = 1226: 294.24 + 6 > 300.
  EXPECT_EQ(steps_for_time_budget(300, 0.24, 1.0, 250), 1225);
  // Without evaluations the budget is all steps: 300 / 0.25 = 1200.
  EXPECT_EQ(steps_for_time_budget(300, 0.25, 0.0, 250), 1200);
  // At a multiple of eval_every the last evaluation is the periodic one: N = 10 costs 10 + 2
  // evaluations = 12 s; N = 11 costs 11 + 3 = 14 s.
  EXPECT_EQ(steps_for_time_budget(12, 1.0, 1.0, 10), 10);
  EXPECT_EQ(steps_for_time_budget(13.5, 1.0, 1.0, 10), 10);
  // Evaluations that cost most: 1 step + 2 evaluations of 4 s = 9 s, 2 steps = 10 s, 3 = 11 s.
  EXPECT_EQ(steps_for_time_budget(10, 1.0, 4.0, 5), 2);
  // Not even one step fits: one is taken all the same; and the ceiling.
  EXPECT_EQ(steps_for_time_budget(0.5, 1.0, 0.0, 250), 1);
  EXPECT_EQ(steps_for_time_budget(1e12, 1e-3, 0.0, 250, 5000), 5000);
  EXPECT_THROW(steps_for_time_budget(10, 0.0, 1.0, 250), std::invalid_argument);
  EXPECT_THROW(steps_for_time_budget(10, 1.0, -1.0, 250), std::invalid_argument);
  EXPECT_THROW(steps_for_time_budget(10, 1.0, 1.0, 0), std::invalid_argument);
}

// ---- the evaluations' cadence that fits ---------------------------------------------------------

TEST(TimeBudget, SpacesTheEvaluationsToATenthOfTheBudget) {
  // A small model: 1/2048 s per step, 1/16 s per evaluation with its save, 20 s. Every 250 steps
  // the evaluations would take a quarter of the budget (~5 s). A tenth is 2 s: 32 evaluations;
  // beside them (20 - 2) * 2048 = 36864 steps fit, in 31 intervals of ceil(36864 / 31) = 1190
  // steps: evaluations at 0, 1190, ..., 35700 and 36864, 32 of them, 18 + 2 = 20 s.
  const double step_s = 1.0 / 2048, eval_s = 1.0 / 16;
  const long every_250 = steps_for_time_budget(20, step_s, eval_s, 250);
  EXPECT_GT(static_cast<double>(evaluations_in(every_250, 250)) * eval_s, 4.0);
  const TimeBudgetFit fit = fit_time_budget(20, step_s, eval_s, 250, true);
  EXPECT_EQ(fit.eval_every, 1190);
  EXPECT_EQ(fit.steps, 36864);
  EXPECT_EQ(evaluations_in(fit.steps, fit.eval_every), 32);
  EXPECT_FALSE(fit.capped);
  // A cadence chosen is kept, whatever it costs.
  const TimeBudgetFit given = fit_time_budget(20, step_s, eval_s, 250, false);
  EXPECT_EQ(given.eval_every, 250);
  EXPECT_EQ(given.steps, every_250);
  // Evaluations that take less than a tenth at the usual cadence keep it: 100 s at 0.01 s per
  // step and per evaluation, 9960 steps and 41 evaluations (0.41 s).
  const TimeBudgetFit cheap = fit_time_budget(100, 0.01, 0.01, 250, true);
  EXPECT_EQ(cheap.eval_every, 250);
  EXPECT_EQ(cheap.steps, steps_for_time_budget(100, 0.01, 0.01, 250));
  // Evaluations dearer than a tenth of the budget: the first and the last step's alone. 10 s,
  // 1 s per step, 4 s per evaluation: 2 steps beside 2 evaluations.
  const TimeBudgetFit dear = fit_time_budget(10, 1.0, 4.0, 250, true);
  EXPECT_EQ(dear.steps, 2);
  EXPECT_EQ(evaluations_in(dear.steps, dear.eval_every), 2);
}

TEST(TimeBudget, SaysWhenTheBudgetHoldsMoreStepsThanARunTakes) {
  const TimeBudgetFit capped = fit_time_budget(1e12, 1e-3, 0.0, 250, true, 5000);
  EXPECT_EQ(capped.steps, 5000);
  EXPECT_TRUE(capped.capped);
  // Exactly the most steps: not capped.
  EXPECT_FALSE(fit_time_budget(5, 1.0, 0.0, 250, false, 5).capped);
  // 1000 h at 0.1 ms per step would be 3.6e10 steps: a billion are taken, and said.
  const TimeBudgetFit hours = fit_time_budget(3.6e6, 1e-4, 0.0, 250, false);
  EXPECT_EQ(hours.steps, kMaxBudgetSteps);
  ASSERT_TRUE(hours.capped);
  EXPECT_EQ(budget_cap_note(3.6e6, hours, 1e-4, 0.0),
            "note: 1000h would hold more than 1000000000 steps, the most a run takes: training "
            "1000000000 steps, about 27h46m");
}

// ---- a run fitted to a budget ---------------------------------------------------------------

namespace {

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() /
             ("glass_time_budget_" + std::to_string(::getpid()) + "_" + name)) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string str(const std::string& child) const { return (path / child).string(); }
};

TrainOptions tiny_options(const TempDir& dir, const std::string& out) {
  const std::u32string text = load_text(glass_test::source_dir("/data/corpora/domcasmurro.txt"));
  const std::string data = dir.str("text.txt");
  std::ofstream(data, std::ios::binary) << u32_to_utf8(text.substr(0, 8000));
  TrainOptions o;
  o.data_path = data;
  o.out_dir = dir.str(out);
  o.batch_size = 4;
  o.context = 16;
  o.warmup = 5;
  o.eval_every = 1000;  // few saves: the test's time is the steps'
  o.eval_every_given = true;
  o.eval_iters = 2;
  o.interp_record = false;
  o.sample_tokens = 10;
  o.model = glass_test::small_config(0, 16);
  return o;
}

/// The columns step,lr,train_loss,val_loss of a run's log.csv (the rest are times).
std::string losses(const std::string& csv_path) {
  std::ifstream in(csv_path);
  std::string line, out;
  while (std::getline(in, line)) {
    std::size_t cut = 0;
    for (int i = 0; i < 4; ++i) cut = line.find(',', cut + 1);
    out += line.substr(0, cut) + "\n";
  }
  return out;
}

/// The tensors of two safetensors files are the same, bit for bit, and so is their metadata
/// (but the run id, new in every run).
void expect_same_tensors(const std::string& a, const std::string& b) {
  SafetensorsContents x = load_safetensors(a);
  SafetensorsContents y = load_safetensors(b);
  x.metadata.erase("run_id");
  y.metadata.erase("run_id");
  EXPECT_EQ(x.metadata, y.metadata) << a;
  ASSERT_EQ(x.tensors.size(), y.tensors.size()) << a;
  for (std::size_t i = 0; i < x.tensors.size(); ++i) {
    EXPECT_EQ(x.tensors[i].name, y.tensors[i].name);
    EXPECT_EQ(x.tensors[i].data, y.tensors[i].data) << x.tensors[i].name;
  }
}

/// Trains `fixed` (the options of the run in `timed_dir` with --iters n) into `fixed_dir` and
/// checks that both runs are the same: losses, weights and optimizer state, bit for bit.
void expect_repeated_by_iters(TrainOptions fixed, const TempDir& dir, const std::string& timed_out,
                              const std::string& fixed_out, long n) {
  fixed.iters = n;
  std::ostringstream sink;
  Trainer(fixed, sink).run();
  EXPECT_EQ(losses(dir.str(timed_out + "/log.csv")), losses(dir.str(fixed_out + "/log.csv")));
  for (const char* file : {"/model.safetensors", "/train_state.safetensors"})
    expect_same_tensors(dir.str(timed_out + file), dir.str(fixed_out + file));
}

}  // namespace

TEST(TimeBudget, TheSpeedrunRecipeFillsOnlyWhatTheCommandLeftOpen) {
  TrainOptions open;  // nothing named: Muon at its default rate, projections at zero
  EXPECT_TRUE(use_speedrun_recipe(open, /*zero_init_given=*/false));
  EXPECT_EQ(open.optimizer, OptimizerKind::muon);
  EXPECT_EQ(open.muon_lr, 0.01);
  EXPECT_TRUE(open.zero_init_out);
  TrainOptions random_init;  // --zero-init-out=false: Muon, the projections left random
  EXPECT_TRUE(use_speedrun_recipe(random_init, /*zero_init_given=*/true));
  EXPECT_EQ(random_init.optimizer, OptimizerKind::muon);
  EXPECT_FALSE(random_init.zero_init_out);
  TrainOptions named;  // --optimizer adamw: the command's recipe, untouched
  named.recipe_given.optimizer = true;
  EXPECT_FALSE(use_speedrun_recipe(named, /*zero_init_given=*/false));
  EXPECT_EQ(named.optimizer, OptimizerKind::adamw);
  EXPECT_FALSE(named.zero_init_out);
}

TEST(TimeBudget, ARunFittedToABudgetIsTheRunOfItsStepCount) {
  TempDir dir("repeat");
  TrainOptions timed = tiny_options(dir, "timed");
  timed.time_budget_s = 0.5;  // the tiny model: a few thousand steps, whatever the machine
  std::ostringstream said;
  long n = 0;
  {
    Trainer t(timed, said);
    n = t.run().step;
    EXPECT_EQ(t.options().iters, n);
    EXPECT_EQ(t.options().decay_iters, n);  // the cosine follows the chosen step count
  }
  ASSERT_GE(n, 1);
  EXPECT_NE(said.str().find("time budget 0.5s: "), std::string::npos) << said.str();
  // The library states the facts; the command line adds how to repeat the run with its flags.
  const std::size_t at = said.str().find("time budget 0.5s: ");
  const std::string line = said.str().substr(at, said.str().find('\n', at) - at);
  EXPECT_EQ(line.find("--"), std::string::npos) << line;
  const std::optional<TrainRecipe> recorded = load_train_recipe(dir.str("timed"));
  ASSERT_TRUE(recorded.has_value());
  EXPECT_EQ(recorded->iters, n);
  EXPECT_EQ(recorded->decay_iters, n);
  EXPECT_EQ(recorded->time_budget_s, 0.5);

  // The same seed and --iters N: the same losses and the same tensors, bit for bit (the trial
  // steps of the budget were undone).
  expect_repeated_by_iters(tiny_options(dir, "fixed"), dir, "timed", "fixed", n);

  // A resume continues to the recorded N unless a step count is given; a budget is a new run's.
  TrainOptions again = tiny_options(dir, "timed");
  again.resume = true;
  again.iters_from_save = true;
  Resume(again.out_dir).take_recorded(again);
  EXPECT_EQ(again.iters, n);
  EXPECT_EQ(again.time_budget_s, 0.5);  // the next save records the budget N was chosen for
  TrainOptions further = tiny_options(dir, "timed");
  further.resume = true;
  further.iters = n + 10;  // given: kept
  Resume(further.out_dir).take_recorded(further);
  EXPECT_EQ(further.iters, n + 10);
  EXPECT_EQ(further.time_budget_s, 0);  // a step count given is no longer the budget's
  // The run is at its last step: a resume to it is refused, as a fact the front end words.
  for (bool given : {false, true}) {
    TrainOptions finished = tiny_options(dir, "timed");
    finished.resume = true;
    finished.iters_from_save = !given;
    finished.iters = given ? n : 2000;
    try {
      Trainer t(finished, said);
      ADD_FAILURE() << "a finished run was resumed";
    } catch (const FinishedRunError& e) {
      EXPECT_EQ(e.out_dir(), finished.out_dir);
      EXPECT_EQ(e.step(), n);
      EXPECT_EQ(e.iters(), n);
      EXPECT_EQ(e.iters_given(), given);
      EXPECT_EQ(e.time_budget_s(), given ? 0 : 0.5);
      EXPECT_EQ(std::string(e.what()).find("--"), std::string::npos) << e.what();
    }
  }
  again.time_budget_s = 60;
  try {
    Resume::check_resumable(again);
    ADD_FAILURE() << "a time budget was resumed";
  } catch (const OptionError& e) {
    EXPECT_EQ(e.field(), "time");
    EXPECT_EQ(e.other_field(), "resume");
    EXPECT_EQ(e.reason().find("--"), std::string::npos) << e.reason();
  }
}

TEST(TimeBudget, AResumedRunKeepsTheBudgetItsStepCountWasChosenFor) {
  // A timed run interrupted before its first step, resumed once more interrupted, then to its
  // end: every save records the budget its N was chosen for.
  TempDir dir("resume_budget");
  volatile std::sig_atomic_t stop = SIGINT;
  TrainOptions timed = tiny_options(dir, "timed");
  timed.time_budget_s = 0.2;
  timed.stop_flag = &stop;
  std::ostringstream said;
  const long n =
      Trainer(timed, said).run().step == 0 ? load_train_recipe(dir.str("timed"))->iters : -1;
  ASSERT_GE(n, 1) << said.str();
  for (bool interrupted : {true, false}) {
    TrainOptions again = tiny_options(dir, "timed");
    again.resume = true;
    again.iters_from_save = true;
    if (interrupted) again.stop_flag = &stop;
    Trainer(again, said).run();
    const std::optional<TrainRecipe> recorded = load_train_recipe(dir.str("timed"));
    ASSERT_TRUE(recorded.has_value());
    EXPECT_EQ(recorded->iters, n);
    EXPECT_EQ(recorded->time_budget_s, 0.2) << (interrupted ? "first resume" : "second resume");
  }
}

TEST(TimeBudget, TheTrialSaveIsRemovedWhenItFails) {
  // The trial's save goes to $TMPDIR/glass-time-trial-PID; a directory where its model file
  // goes makes the save throw, and the folder is removed all the same.
  TempDir dir("trial_save");
  const fs::path tmp = dir.str("tmp");
  const fs::path trial = tmp / ("glass-time-trial-" + std::to_string(::getpid()));
  fs::create_directories(trial / "model.safetensors");
  std::ofstream(trial / "model.safetensors" / "in-the-way") << "x";
  const char* before = std::getenv("TMPDIR");
  const std::string kept = before != nullptr ? before : "";
  ::setenv("TMPDIR", tmp.c_str(), 1);
  TrainOptions timed = tiny_options(dir, "timed");
  timed.time_budget_s = 0.2;
  std::ostringstream said;
  bool threw = false;
  try {
    Trainer(timed, said).run();
  } catch (const std::exception&) {
    threw = true;
  }
  if (before != nullptr)
    ::setenv("TMPDIR", kept.c_str(), 1);
  else
    ::unsetenv("TMPDIR");
  EXPECT_TRUE(threw) << "the trial save did not fail: " << said.str();
  EXPECT_FALSE(fs::exists(trial)) << "the trial's save was left in " << tmp;
}

TEST(TimeBudget, AMuonRunFittedToABudgetIsTheRunOfItsStepCount) {
  // The trial steps move Muon's momentum buffers too: they are made afresh with the rest, so
  // the run's momentum (saved in train_state.safetensors) is that of `--iters N` as well.
  TempDir dir("repeat_muon");
  TrainOptions timed = tiny_options(dir, "timed");
  timed.optimizer = OptimizerKind::muon;
  timed.time_budget_s = 0.5;
  std::ostringstream said;
  long n = 0;
  {
    Trainer t(timed, said);
    n = t.run().step;
  }
  ASSERT_GE(n, 1);
  TrainOptions fixed = tiny_options(dir, "fixed");
  fixed.optimizer = OptimizerKind::muon;
  expect_repeated_by_iters(fixed, dir, "timed", "fixed", n);
  const SafetensorsContents state = load_safetensors(dir.str("fixed/train_state.safetensors"));
  bool has_momentum = false;
  for (const auto& t : state.tensors) has_momentum |= t.name.rfind("muon.", 0) == 0;
  EXPECT_TRUE(has_momentum) << "the run is not a Muon run";
}

TEST(TimeBudget, ARunSpacesItsEvaluationsUnlessACadenceIsGiven) {
  // A cadence of 1 left as the default: the budget spaces the evaluations (a tenth of it at
  // most, a few of them for this tiny model); given, it is kept.
  TempDir dir("cadence");
  for (const bool given : {false, true}) {
    TrainOptions timed = tiny_options(dir, given ? "given" : "fitted");
    timed.eval_every = given ? 1000 : 1;
    timed.eval_every_given = given;
    timed.time_budget_s = 0.5;
    std::ostringstream said;
    Trainer t(timed, said);
    const TrainResult r = t.run();
    EXPECT_EQ(r.iters, t.options().iters);
    EXPECT_EQ(r.eval_every, t.options().eval_every);
    if (given)
      EXPECT_EQ(r.eval_every, 1000);
    else
      EXPECT_GT(r.eval_every, 1) << said.str();
    EXPECT_EQ(static_cast<long>(t.log().size()), evaluations_in(r.iters, r.eval_every));
    EXPECT_NE(said.str().find(fmt::format("evaluations (every {} steps)", r.eval_every)),
              std::string::npos)
        << said.str();
  }
}
