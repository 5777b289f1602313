// A learner's first hour, through the real binary: what the loss means while training (the
// step-0 ln V line, the train/val gap, the summary), the per-step log steps.csv (live in the run
// directory, complete in every save, rewritten on --resume), --resume keeping its recipe and
// printing a command that continues the run, --overfit-batch, and the conventions of nanoGPT's
// sample.py, llama.cpp's llama-cli and llama2.c's run (help, --version, short flags, stdin
// prompts, --num-samples, --stop, --json, --threads).

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"
#include "checkpoint/checkpoint.hpp"
#include "data/text.hpp"
#include "data/text_tokenizer.hpp"
#include "data/yardstick.hpp"
#include "test_paths.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

using glass_test::CliRun;
using glass_test::count;
using glass_test::q;
using glass_test::read_file;
using glass_test::tiny;
using glass_test::write_file;

/// `text` with its first `from` replaced by `to`.
std::string with(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from << " in " << text;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

/// The rows of a steps.csv, each as its six numbers.
std::vector<std::vector<double>> csv_rows(const std::string& text) {
  std::vector<std::vector<double>> rows;
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::vector<double> row;
    std::istringstream fields(line);
    std::string f;
    while (std::getline(fields, f, ',')) row.push_back(std::stod(f));
    rows.push_back(row);
  }
  return rows;
}

class LearnerCli : public ::testing::Test {
 protected:
  static fs::path dir_, text_, run_;
  static CliRun first_run_;  // 30 steps, evaluations every 10

  static CliRun glass(const std::string& args) {
    return glass_test::run_glass(args, dir_, "timeout 300 ");
  }
  static std::string data() { return " --data " + q(text_.string()); }

  /// Runs a shell command line (for pipes), capturing stdout and stderr like run_glass.
  static CliRun shell(const std::string& line) {
    const fs::path out = dir_ / "sh-out.txt", err = dir_ / "sh-err.txt";
    const int status = std::system(
        ("bash -c " + q(line) + " >" + q(out.string()) + " 2>" + q(err.string())).c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_file(out), read_file(err)};
  }

  static void SetUpTestSuite() {
    dir_ = glass_test::temp_dir("glass-learner-cli");
    text_ = dir_ / "text.txt";
    write_file(text_, glass_test::corpus_start(6000));
    run_ = dir_ / "run";
    first_run_ = glass("train" + data() + " --out " + q(run_.string()) +
                       " --iters 30 --eval-every 10" + tiny());
  }

  static void expect_error(const CliRun& r, const std::string& phrase) {
    EXPECT_NE(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.exit_code, 124) << "timed out";
    EXPECT_NE(r.err.find(phrase), std::string::npos) << "stderr was: " << r.err;
  }

  /// The vocabulary size from the "data: ... vocabulary V)" line.
  static double vocab_of(const std::string& out) {
    const std::size_t at = out.find("vocabulary ");
    return at == std::string::npos ? 0 : std::stod(out.substr(at + 11));
  }
};

fs::path LearnerCli::dir_, LearnerCli::text_, LearnerCli::run_;
CliRun LearnerCli::first_run_;

}  // namespace

// ---- what the numbers mean ----------------------------------------------------------------------

TEST_F(LearnerCli, StepZeroIsComparedWithLnVAndTheEndSaysHowGoodItIs) {
  ASSERT_EQ(first_run_.exit_code, 0) << first_run_.out << first_run_.err;
  const std::string& out = first_run_.out;
  const double V = vocab_of(out);
  ASSERT_GT(V, 20) << out;
  const std::string ln_v = "ln " + std::to_string(static_cast<int>(V)) + " = ";
  EXPECT_NE(out.find("note: loss "), std::string::npos) << out;
  EXPECT_NE(out.find(ln_v), std::string::npos) << out;
  EXPECT_NE(out.find("guessing uniformly"), std::string::npos) << out;
  // V counts the unknown id 0: the data line and the note say so in the words the page of
  // glass serve uses (tests/serve/serve_cli_test.cpp), not "V characters".
  const int v = static_cast<int>(V);
  const std::string words = "(" + std::to_string(v - 1) + " characters + the unknown id 0)";
  EXPECT_NE(out.find("vocabulary " + std::to_string(v) + " " + words), std::string::npos) << out;
  EXPECT_NE(out.find("among the " + std::to_string(v) + " entries of its vocabulary " + words),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("(gap "), std::string::npos) << "every evaluation shows val - train\n" << out;
  EXPECT_NE(out.find("best validation loss at step "), std::string::npos) << out;
  EXPECT_NE(out.find(" bits per byte (comparable across tokenizers)\n  per character: "),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("\nnext: "), std::string::npos) << out;
  // The yardsticks, measured here on the same split of the same text (data/yardstick.hpp).
  const std::u32string text = glass::load_text(text_.string());
  const std::size_t cut = glass::split_point(text, glass::TokenizerKind::kChar);
  const glass::Yardstick y = glass::measure_yardstick(text.substr(0, cut), text.substr(cut));
  EXPECT_NE(out.find(fmt::format("yardstick on the same validation split: a character bigram "
                                 "model (counted on the training split, add-one smoothing) {:.4f} "
                                 "bits per byte, xz -9 given the training split {:.4f}; this "
                                 "model ",
                                 y.bigram_bits_per_byte, y.xz_bits_per_byte)),
            std::string::npos)
      << out;
}

// ---- steps.csv --------------------------------------------------------------------------------

TEST_F(LearnerCli, EveryStepIsLoggedLiveAndInTheSave) {
  ASSERT_EQ(first_run_.exit_code, 0) << first_run_.err;
  const std::string live = read_file(run_ / "steps.csv");
  EXPECT_EQ(live.substr(0, live.find('\n') + 1), "step,loss,lr,grad_norm,tokens_per_s,elapsed_s\n");
  EXPECT_FALSE(fs::is_symlink(run_ / "steps.csv"))
      << "the live copy is the run directory's own file";
  EXPECT_EQ(read_file(run_ / "step-000030" / "steps.csv"), live) << "the save holds every step";
  const auto rows = csv_rows(live);
  ASSERT_EQ(rows.size(), 30u);
  const double V = vocab_of(first_run_.out);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    ASSERT_EQ(rows[i].size(), 6u);
    EXPECT_EQ(rows[i][0], static_cast<double>(i + 1))
        << "the steps done, as the progress line counts";
    EXPECT_GT(rows[i][3], 0) << "grad_norm";
    EXPECT_GT(rows[i][4], 0) << "tokens_per_s";
    if (i > 0) {
      EXPECT_GE(rows[i][5], rows[i - 1][5]) << "elapsed_s grows";
    }
  }
  // Step 0 of an untrained model: the batch loss is about ln V.
  EXPECT_NEAR(rows[0][1], std::log(V), 0.3);
  // The learning rate of each step, by hand from the schedule (lr 1e-3, min 1e-4, warmup 5,
  // cosine to step 30): step 0: 1e-3 * 1/6; step 10: 1e-4 + 0.5 (1 + cos(pi * 5/25)) 9e-4.
  EXPECT_NEAR(rows[0][2], 1.6666667e-4, 1e-9);
  EXPECT_NEAR(rows[10][2], 9.1405765e-4, 1e-9);
  EXPECT_LT(rows[29][1], rows[0][1]) << "the loss fell";
  // The evaluation rows of log.csv keep their columns.
  const std::string log = read_file(run_ / "log.csv");
  EXPECT_EQ(log.substr(0, log.find('\n')), "step,lr,train_loss,val_loss,tokens_per_s,elapsed_s");
  EXPECT_EQ(count(log, "\n"), 5u);  // header + steps 0, 10, 20, 30
  // The loss page carries the per-step rows and V.
  const std::string page = read_file(run_ / "loss.html");
  EXPECT_NE(page.find("\"steps\":{\"step\":[1.0,2.0,3.0"), std::string::npos);
  EXPECT_NE(page.find("\"vocab_size\":" + std::to_string(static_cast<int>(V))), std::string::npos);
}

TEST_F(LearnerCli, ResumeRewritesTheLiveLogFromTheSave) {
  const fs::path run = dir_ / "resumed";
  const std::string recipe =
      data() + " --out " + q(run.string()) + " --eval-every 10 --decay-iters 40" + tiny();
  ASSERT_EQ(glass("train --iters 20" + recipe).exit_code, 0);
  const std::string saved = read_file(run / "steps.csv");
  ASSERT_EQ(csv_rows(saved).size(), 20u);
  // A run that died after its last save left rows of steps that were never saved.
  write_file(run / "steps.csv", saved + "21,9.0,1e-3,1.0,100.0,9.0\n22,9.0,1e-3,1.0,100.0,9.5\n");
  const CliRun r = glass("train --iters 40 --resume" + recipe);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string live = read_file(run / "steps.csv");
  EXPECT_EQ(live.substr(0, saved.size()), saved) << "the saved steps are kept as they were";
  const auto rows = csv_rows(live);
  ASSERT_EQ(rows.size(), 40u);
  for (std::size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(rows[i][0], static_cast<double>(i + 1));
  EXPECT_NE(rows[20][1], 9.0) << "the unsaved row was dropped";
  // The last row is the step the run ended at, as the last evaluation ("step 40: ...").
  EXPECT_EQ(rows.back()[0], 40.0);
  EXPECT_NE(r.out.find("step 40: train loss"), std::string::npos) << r.out;
  EXPECT_EQ(read_file(run / "step-000040" / "steps.csv"), live);
}

// ---- --resume keeps the run's recipe ------------------------------------------------------------

TEST_F(LearnerCli, ResumeRefusesAnotherRecipeAndTakesTheRecordedOne) {
  const fs::path run = dir_ / "recipe";
  const std::string base = data() + " --out " + q(run.string()) + " --eval-every 10" + tiny();
  ASSERT_EQ(glass("train --iters 10 --lr 2e-3" + base).exit_code, 0);
  const std::string state = read_file(run / "train_state.json");
  for (const auto& [args, phrase] : std::vector<std::pair<std::string, std::string>>{
           {base + " --lr 1e-3", "--lr 0.001 (the run was trained with --lr 0.002)"},
           {with(base, "--batch-size 4", "--batch-size 8"),
            "--batch-size 8 (the run was trained with --batch-size 4)"},
           {with(base, "--warmup 5", "--warmup 7"),
            "--warmup 7 (the run was trained with --warmup 5)"}}) {
    const CliRun r = glass("train --iters 20 --resume" + args);
    expect_error(r, phrase);
    EXPECT_NE(r.err.find("Leave them out"), std::string::npos) << r.err;
    EXPECT_EQ(read_file(run / "train_state.json"), state) << args << ": the run was touched";
  }
  // Without --lr the recorded 2e-3 is used, and without --context the training context.
  const CliRun r = glass("train --iters 20 --resume --data " + q(text_.string()) + " --out " +
                         q(run.string()) + " --eval-every 10 --eval-iters 2 --sample-tokens 0");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("lr 0.002 -> 0.0002 (warmup 5"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("batch 4 x context 16"), std::string::npos) << r.out;
}

// A resume warns only of what it changes: the model's own sizes given again, or a warmup the
// run started with (warned of then, and kept by the resume), are not warned of again.
TEST_F(LearnerCli, ResumeWarnsOnlyOfFlagsThatWouldChangeSomething) {
  const fs::path run = dir_ / "warn-once";
  const std::string base = data() + " --out " + q(run.string()) + " --eval-every 10" + tiny(0);
  const CliRun first = glass("train --iters 4" + base);  // warmup 5 >= the schedule's 4 steps
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.out.find("warning: the warmup (5 steps) is not shorter than the schedule's 4"),
            std::string::npos)
      << first.out;
  const CliRun same = glass("train --iters 6 --resume" + base);
  ASSERT_EQ(same.exit_code, 0) << same.err;
  EXPECT_EQ(same.out.find("the warmup"), std::string::npos) << same.out;
  EXPECT_EQ(same.err.find("is ignored with --resume"), std::string::npos) << same.err;
  const CliRun other =
      glass("train --iters 8 --resume" + with(base, "--d-model 32", "--d-model 64"));
  ASSERT_EQ(other.exit_code, 0) << other.err;
  EXPECT_NE(other.err.find("warning: --d-model is ignored with --resume"), std::string::npos)
      << other.err;
  EXPECT_EQ(other.err.find("--n-layers is ignored"), std::string::npos) << other.err;
}

// The default --min-lr is --lr / 10, which for --lr 3e-3 is 0.00030000000000000003 in double
// (Python: 3e-3 / 10); the recipe line prints it as 0.0003, so a learner types --min-lr 3e-4.
TEST_F(LearnerCli, ResumeTakesARateThatDiffersOnlyInItsLastDecimalBits) {
  const fs::path run = dir_ / "min-lr";
  const std::string base =
      data() + " --out " + q(run.string()) + " --eval-every 10 --lr 3e-3" + tiny();
  ASSERT_EQ(glass("train --iters 10" + base).exit_code, 0);
  const CliRun r = glass("train --iters 20 --resume --min-lr 3e-4" + base);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("lr 0.003 -> 0.0003"), std::string::npos) << r.out;
  // A rate that really differs is still refused.
  expect_error(glass("train --iters 30 --resume --min-lr 3.001e-4" + base),
               "--min-lr 0.0003001 (the run was trained with --min-lr 0.0003)");
}

TEST_F(LearnerCli, TheResumeCommandCarriesTheRunsFlags) {
  const fs::path run = dir_ / "stopped";
  const std::string args = "train" + data() + " --out " + q(run.string()) + " --overwrite" +
                           " --iters 100000 --eval-every 100000 --lr 2e-3 -t 1" + tiny();
  // Start a long run, wait for its first save, then SIGTERM: it saves and prints how to resume.
  const CliRun r =
      shell(glass_test::binary_dir("/glass ") + args +
            " & pid=$!; for i in $(seq 1 600); do [ -e " + q((run / "log.csv").string()) +
            " ] && break; sleep 0.05; done; sleep 0.3; kill -TERM $pid; wait $pid");
  EXPECT_EQ(r.exit_code, 143) << r.out << r.err;
  const std::size_t at = r.out.find("resume with: ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string line = r.out.substr(at, r.out.find('\n', at) - at);
  for (const char* part : {" train --data ", " --out ", " --iters 100000", " --lr 2e-3",
                           " --threads 1", " --eval-iters 2", " --resume"})
    EXPECT_NE(line.find(part), std::string::npos) << part << "\n" << line;
  // Not --overwrite, nor the model's shape (the checkpoint's is used: it would only warn).
  for (const char* absent : {"--overwrite", "--d-model", "--n-layers"})
    EXPECT_EQ(line.find(absent), std::string::npos) << absent << "\n" << line;
  // The command continues the run (here with --iters lowered, to end soon).
  const std::string again =
      with(with(line.substr(std::string("resume with: ").size()), " --iters 100000", " --iters 3"),
           " --eval-every 100000", " --eval-every 3");
  const CliRun resumed = shell(again);
  if (r.out.find("interrupted at step ") != std::string::npos &&
      std::stol(r.out.substr(r.out.find("interrupted at step ") + 20)) < 3) {
    EXPECT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
    EXPECT_NE(resumed.out.find("resuming from step"), std::string::npos) << resumed.out;
  } else {
    expect_error(resumed, "already at step");  // the run had passed step 3: still understood
  }
}

// ---- --overfit-batch ----------------------------------------------------------------------------

TEST_F(LearnerCli, OverfitBatchDrivesTheLossOfOneBatchTowardsZero) {
  const fs::path run = dir_ / "overfit";
  const CliRun r = glass("train" + data() + " --out " + q(run.string()) +
                         " --overfit-batch --iters 150 --eval-every 150 --lr 1e-2" + tiny(0));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("--overfit-batch: every step trains on the same batch"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("overfit check passed"), std::string::npos) << r.out;
  const auto rows = csv_rows(read_file(run / "steps.csv"));
  ASSERT_EQ(rows.size(), 150u);
  EXPECT_LT(rows.back()[1], 0.3) << "the memorised batch";
  // The evaluations' train loss is that of the batch being memorised (labelled so), not of
  // other windows: at step 0 it is the loss the first step computed on it (same weights, same
  // batch; log.csv and steps.csv keep 6 decimals), at the end it is near 0 too, while the
  // validation loss is not.
  const auto evals = csv_rows(read_file(run / "log.csv"));  // step,lr,train_loss,val_loss,...
  ASSERT_EQ(evals.size(), 2u);
  EXPECT_NEAR(evals[0][2], rows[0][1], 2e-6) << "step 0";
  EXPECT_LT(evals[1][2], 0.3) << "step 150";
  EXPECT_GT(evals[1][3], 1.0) << "the validation windows are not memorised";
  EXPECT_NE(r.out.find("step 150: loss of the one batch "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("overfitting"), std::string::npos) << "memorising is the point here\n"
                                                          << r.out;
  EXPECT_NE(glass("train --help").out.find("the evaluations' train loss is that batch's"),
            std::string::npos);
  expect_error(glass("train" + data() + " --out " + q(run.string()) +
                     " --overfit-batch --resume --iters 200" + tiny()),
               "--overfit-batch is a check of the training loop");
  // Its save records the mode, so a plain --resume does not continue it as a normal run.
  EXPECT_NE(read_file(run / "train_state.json").find("\"overfit_batch\": true"), std::string::npos);
  expect_error(
      glass("train" + data() + " --out " + q(run.string()) + " --resume --iters 200" + tiny()),
      "was an --overfit-batch run (one batch learnt by heart, a check of the training "
      "loop), not a run to continue with --resume");
}

// ---- stops: a NaN, a second Ctrl-C --------------------------------------------------------------

TEST_F(LearnerCli, ANonFiniteLossSaysWhichCheckpointWasKeptAndHowToGoOn) {
  // lr 1e9: the loss is NaN within a few steps, after the save of step 0.
  const fs::path run = dir_ / "nan";
  const CliRun r = glass("train" + data() + " --out " + q(run.string()) +
                         " --iters 50 --eval-every 1000 --lr 1e9" + tiny(0));
  expect_error(r, "NaN");
  EXPECT_NE(r.err.find("Training stopped: the last good checkpoint, of step 0, is kept in " +
                       run.string()),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("--resume would repeat the same steps"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("if any"), std::string::npos) << r.err;
  // The command to train again: the same flags, half the learning rate, replacing this run.
  EXPECT_NE(
      r.err.find(" train --data " + text_.string() + " --out " + run.string() + " --iters 50"),
      std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(" --lr 5e+08 --overwrite\n"), std::string::npos) << r.err;
  EXPECT_EQ(glass::load_checkpoint(run.string()).weights_step(), "0") << "the checkpoint said kept";
  // Without clipping (--grad-clip 0) the advice adds clipping, and so does the command.
  const fs::path unclipped = dir_ / "nan-unclipped";
  const CliRun u = glass("train" + data() + " --out " + q(unclipped.string()) +
                         " --iters 50 --eval-every 1000 --lr 1e9 --grad-clip 0" + tiny(0));
  expect_error(u, "NaN");
  EXPECT_NE(u.err.find("and with --grad-clip 1 (this run: 0, no clipping)"), std::string::npos)
      << u.err;
  EXPECT_NE(u.err.find(" --lr 5e+08 --grad-clip 1 --overwrite\n"), std::string::npos) << u.err;
  EXPECT_EQ(u.err.find("--grad-clip 0"), std::string::npos) << u.err;
}

TEST_F(LearnerCli, ASecondCtrlCStopsAtOnceAndSaysWhatIsKept) {
  // An evaluation of 4000 batches of 16 x 16 on the training split takes seconds: both signals
  // arrive during one. (The validation split, smaller than such a sample, is measured whole and
  // fast.) `after` is what must exist before the first signal.
  auto interrupted_twice = [&](const std::string& name, const std::string& after) {
    const fs::path run = dir_ / name, out = dir_ / (name + "-out.txt"),
                   err = dir_ / (name + "-err.txt");
    const std::string line =
        std::string(glass_test::binary_dir("/glass train")) + data() + " --out " + q(run.string()) +
        " --context 16 --d-model 32 --n-layers 1 --n-heads 2 --n-kv-heads 1 --ffn-hidden 32 --warmup 5"
        " --sample-tokens 0 --iters 10 --eval-every 5 --eval-iters 4000 --batch-size 16 --threads 1 >" +
        q(out.string()) + " 2>" + q(err.string()) + " & pid=$!; for i in $(seq 1 1200); do " +
        after +
        " && break; sleep 0.05; done; sleep 0.3; kill -INT $pid; for i in $(seq 1 600); do grep -q "
        "'Ctrl-C: stopping' " +
        q(err.string()) +
        " && break; sleep 0.05; done; kill -INT $pid; wait $pid; "
        "echo $?";
    const CliRun sh = shell(line);
    return CliRun{std::atoi(sh.out.c_str()), read_file(out), read_file(err)};
  };
  // During the evaluation at step 0 of a new run: no save yet.
  const fs::path first = dir_ / "ctrl-c-0";
  const CliRun a = interrupted_twice(
      "ctrl-c-0", "grep -q '^recipe:' " + q((dir_ / "ctrl-c-0-out.txt").string()));
  EXPECT_EQ(a.exit_code, 130) << a.out << a.err;
  EXPECT_NE(a.err.find("Ctrl-C: stopping after the current step or evaluation, with a save first "
                       "(Ctrl-C again stops at once, without it)"),
            std::string::npos)
      << a.err;
  EXPECT_NE(a.err.find("Ctrl-C again: stopped at once, without the save the first one asked for. "
                       "No checkpoint of this run had been saved yet"),
            std::string::npos)
      << a.err;
  EXPECT_EQ(a.out.find("step 0: train loss"), std::string::npos) << "the evaluation was cut short\n"
                                                                 << a.out;
  EXPECT_FALSE(fs::exists(first / "model.safetensors"));
  // "run the same command again": the directory holds no run that would refuse it.
  const CliRun again = glass("train" + data() + " --out " + q(first.string()) + tiny(0) +
                             " --iters 2 --eval-every 2");
  EXPECT_EQ(again.exit_code, 0) << again.err;

  // During the evaluation at step 5, after the save of step 0: that save stays, and the command
  // that continues it is printed.
  const fs::path second = dir_ / "ctrl-c-5";
  const CliRun b = interrupted_twice("ctrl-c-5", "[ -f " + q((second / "log.csv").string()) + " ]");
  EXPECT_EQ(b.exit_code, 130) << b.out << b.err;
  EXPECT_NE(
      b.err.find("Ctrl-C again: stopped at once, without the save the first one asked for. "
                 "Nothing else is lost: the last complete save, of step 0, stays current in " +
                 second.string() + "; continue it with:\n  "),
      std::string::npos)
      << b.err;
  EXPECT_NE(b.err.find(" --resume\n"), std::string::npos) << b.err;
  EXPECT_EQ(glass::load_checkpoint(second.string()).weights_step(), "0");
}

TEST_F(LearnerCli, TwoCtrlCsAtRandomMomentsNameTheSaveThatIsCurrent) {
  // Runs saving every step, each stopped by two Ctrl-Cs at random moments: the step
  // the second one names is always the save `current` points to when the process has ended. Half
  // the runs replace an older run of 3 steps (--overwrite), whose `current` was step-000003: the
  // new run's save of step 3 takes that name again, so a handler that compared link targets with
  // the one it first saw could not tell the switch to it from no switch.
  // Evaluations of 300 batches (a step, its evaluation and its save take some 30 ms): the
  // second Ctrl-C, 2 to 31 ms after the first, often comes before the first one's save has
  // ended the run.
  std::string slow_evaluations = tiny(0);
  const std::string two = " --eval-iters 2";
  slow_evaluations.replace(slow_evaluations.find(two), two.size(), " --eval-iters 300");
  std::random_device random;
  std::string seen;
  int named_runs = 0;
#ifdef GLASS_SANITIZE
  const int runs = 4;  // each run is several times slower under the sanitizers
#else
  const int runs = 8;
#endif
  for (int i = 0; i < runs; ++i) {
    const bool overwrite = i % 2 == 1;
    const int delay_ms = static_cast<int>(random() % 600);
    const int gap_ms = 2 + static_cast<int>(random() % 30);
    const fs::path run = dir_ / ("ctrl-c-twice-" + std::to_string(i));
    const fs::path err = dir_ / ("ctrl-c-twice-" + std::to_string(i) + "-err.txt");
    const std::string flags = std::string(glass_test::binary_dir("/glass train")) + data() +
                              " --out " + q(run.string()) + slow_evaluations +
                              " --eval-every 1 --threads 2";
    if (overwrite) {
      const CliRun older = glass("train" + data() + " --out " + q(run.string()) + tiny(0) +
                                 " --eval-every 1 --iters 3");
      ASSERT_EQ(older.exit_code, 0) << older.err;
    }
    const std::string old_target =
        overwrite ? fs::read_symlink(run / "current").string() : std::string("none");
    const std::string line =
        flags + " --iters 100000" + (overwrite ? " --overwrite" : "") + " >/dev/null 2>" +
        q(err.string()) + " & pid=$!; for k in $(seq 1 1500); do t=$(readlink " +
        q((run / "current").string()) +
        " 2>/dev/null); [ -n \"$t\" ] && [ \"$t\" != " + q(old_target) +
        " ] && break; sleep 0.02; done; sleep " +
        fmt::format("{}.{:03d}", delay_ms / 1000, delay_ms % 1000) + "; kill -INT $pid; sleep " +
        fmt::format("0.{:03d}", gap_ms) + "; kill -INT $pid; wait $pid; echo $?";
    const CliRun sh = shell(line);
    const std::string message = read_file(err);
    std::error_code no_link;
    const std::string current = fs::read_symlink(run / "current", no_link).string();
    ASSERT_FALSE(current.empty()) << message;
    seen += fmt::format("\nrun {} ({}, {} ms, then {} ms): exit {}, current {}", i,
                        overwrite ? "--overwrite" : "new", delay_ms, gap_ms, sh.out, current);
    const int exit_code = std::atoi(sh.out.c_str());
    EXPECT_TRUE(exit_code == 130 || exit_code == 0) << seen << "\n" << message;
    const std::string said = "the last complete save, of step ";
    const std::size_t at = message.find(said);
    if (at == std::string::npos) continue;  // the first Ctrl-C's save ended the run
    ++named_runs;
    const long step = std::atol(message.c_str() + at + said.size());
    EXPECT_EQ(current.substr(0, 11), fmt::format("step-{:06d}", step)) << seen << "\n" << message;
  }
  EXPECT_GT(named_runs, 0) << seen;
}

TEST_F(LearnerCli, ASecondCtrlCRightAfterTheSwitchOfCurrentNamesTheNewSave) {
  // strace holds each rename(2) of the trainer 0.7 s after it is done. The first Ctrl-C comes
  // when the new run's save of step 3 has its manifest (written last, by a rename), the second
  // one a second later: between that save's switch of `current` and the moment the trainer
  // records the save. The run
  // replaces one of 3 steps (--overwrite), so its save of step 3 takes the old `current` target's
  // name: the message once said "of step 2" while `current` pointed to step-000003.
#ifdef GLASS_SANITIZE
  GTEST_SKIP() << "some 25 s of waiting for strace's pauses; the normal build runs it";
#endif
  if (std::system("strace -f -qq -o /dev/null true >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "needs strace (and ptrace permitted)";
  const fs::path run = dir_ / "ctrl-c-switch", err = dir_ / "ctrl-c-switch-err.txt";
  const std::string flags = data() + " --out " + q(run.string()) + tiny(0) + " --eval-every 1";
  ASSERT_EQ(glass("train" + flags + " --iters 3").exit_code, 0);
  const std::string line =
      "strace -f -qq -o /dev/null -e trace=rename -e inject=rename:delay_exit=700000 " +
      glass_test::binary_dir("/glass train") + flags + " --iters 100 --overwrite >/dev/null 2>" +
      q(err.string()) + " & pid=$!; for i in $(seq 1 6000); do [ \"$(readlink " +
      q((run / "current").string()) + ")\" = step-000002 ] && [ -e " +
      q((run / "step-000003" / "manifest.json").string()) +
      " ] && break; sleep 0.005; done; glass=$(pgrep -P $pid); kill -INT $glass; sleep 1; "
      "kill -INT $glass; wait $pid; echo $?";
  const CliRun sh = shell(line);
  const std::string message = read_file(err);
  std::error_code no_link;
  const std::string current = fs::read_symlink(run / "current", no_link).string();
  EXPECT_EQ(std::atoi(sh.out.c_str()), 130) << message;
  const std::string said = "the last complete save, of step ";
  const std::size_t at = message.find(said);
  ASSERT_NE(at, std::string::npos) << message;
  const long step = std::atol(message.c_str() + at + said.size());
  EXPECT_EQ(current, fmt::format("step-{:06d}", step)) << message;
}

// ---- conventions: help, version, short flags ----------------------------------------------------

TEST_F(LearnerCli, NoArgumentsPrintsTheHelpAndVersionPrintsTheVersion) {
  const CliRun none = glass("");
  EXPECT_EQ(none.exit_code, 0) << none.err;
  for (const char* word : {"train", "sample", "eval", "inspect", "export", "Examples:"})
    EXPECT_NE(none.out.find(word), std::string::npos) << word << "\n" << none.out;
  const CliRun version = glass("--version");
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_EQ(version.out.rfind("glass ", 0), 0u) << version.out;
  EXPECT_NE(version.out.find('.'), std::string::npos) << version.out;
  for (const char* command :
       {"", "train ", "sample ", "eval ", "inspect ", "export ", "gradcheck "}) {
    const CliRun help = glass(std::string(command) + "--help");
    EXPECT_EQ(help.exit_code, 0) << command;
    EXPECT_NE(help.out.find("Examples:"), std::string::npos) << command << "\n" << help.out;
    EXPECT_EQ(help.out.find("--help-all"), std::string::npos) << command << "\n" << help.out;
  }
  const CliRun sample_help = glass("sample --help");
  for (const char* flag :
       {"-m,--checkpoint", "-p,--prompt", "-n,--tokens", "-s,--seed", "-t,--threads",
        "--temperature,--temp", "--prompt-file", "--num-samples", "--stop", "--json"})
    EXPECT_NE(sample_help.out.find(flag), std::string::npos) << flag << "\n" << sample_help.out;
}

TEST_F(LearnerCli, ShortFlagsAndTempAreTheLongOnes) {
  ASSERT_EQ(first_run_.exit_code, 0) << first_run_.err;
  const std::string m = q(run_.string());
  const CliRun longs =
      glass("sample --checkpoint " + m + " --prompt Capitu --tokens 20 --temperature 0.7 --seed 5");
  const CliRun shorts = glass("sample -m " + m + " -p Capitu -n 20 --temp 0.7 -s 5 -t 1");
  ASSERT_EQ(longs.exit_code, 0) << longs.err;
  ASSERT_EQ(shorts.exit_code, 0) << shorts.err;
  EXPECT_EQ(longs.out, shorts.out);
  EXPECT_EQ(longs.out.rfind("Capitu", 0), 0u) << longs.out;
  EXPECT_NE(shorts.err.find("characters/s"), std::string::npos) << "the speed on stderr\n"
                                                                << shorts.err;
  EXPECT_EQ(shorts.err.find("characters/s"), shorts.err.rfind("characters/s"));
  for (const char* command : {"eval -m ", "inspect -p Capitu -m "}) {
    std::string args = command + m + " -t 1";
    if (std::string(command).rfind("eval", 0) == 0) args += data();
    const CliRun r = glass(args);
    EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
  }
  for (const char* command : {"sample -m ", "eval -m ", "inspect -m ", "train --out "})
    expect_error(glass(std::string(command) + m + " -t 0"),
                 "--threads: must be an integer from 1 to");
}

// ---- sample: stdin, files, several samples, stop, JSON ------------------------------------------

TEST_F(LearnerCli, PromptsComeFromStdinOrAFile) {
  ASSERT_EQ(first_run_.exit_code, 0) << first_run_.err;
  const std::string m = q(run_.string());
  const CliRun direct = glass("sample -m " + m + " -p 'Capitu e' -n 15 --temp 0");
  ASSERT_EQ(direct.exit_code, 0) << direct.err;
  const CliRun piped = shell("printf 'Capitu e' | " + glass_test::binary_dir("/glass sample -m ") +
                             m + " -p - -n 15 --temp 0");
  EXPECT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(piped.out, direct.out);
  write_file(dir_ / "prompt.txt", "Capitu e");
  const CliRun file = glass("sample -m " + m + " --prompt-file " +
                            q((dir_ / "prompt.txt").string()) + " -n 15 --temp 0");
  EXPECT_EQ(file.exit_code, 0) << file.err;
  EXPECT_EQ(file.out, direct.out);
  expect_error(glass("sample -m " + m + " -p x --prompt-file " + q((dir_ / "prompt.txt").string())),
               "give the prompt once: --prompt, --prompt-file or --start");
  expect_error(glass("sample -m " + m + " --prompt-file " + q((dir_ / "no-such.txt").string())),
               "--prompt-file");
}

TEST_F(LearnerCli, NumSamplesStopAndJson) {
  ASSERT_EQ(first_run_.exit_code, 0) << first_run_.err;
  const std::string m = q(run_.string());
  const CliRun three = glass("sample -m " + m + " -p Capitu -n 10 --num-samples 3 -s 1");
  ASSERT_EQ(three.exit_code, 0) << three.err;
  EXPECT_EQ(count(three.out, "Capitu"), 3u) << three.out;
  EXPECT_EQ(count(three.out, "---------------\n"), 2u) << three.out;
  // Each sample goes on from where the random stream stopped: they differ.
  std::vector<std::string> samples;
  std::istringstream in(three.out);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("Capitu", 0) == 0) samples.push_back(line);
  ASSERT_EQ(samples.size(), 3u) << three.out;
  EXPECT_FALSE(samples[0] == samples[1] && samples[1] == samples[2]) << three.out;

  // --stop: the greedy text is cut right after the stop string's first occurrence.
  const CliRun greedy = glass("sample -m " + m + " -p Capitu -n 60 --temp 0");
  ASSERT_EQ(greedy.exit_code, 0) << greedy.err;
  const std::string generated =
      greedy.out.substr(6, greedy.out.size() - 7);  // no prompt, no final '\n'
  std::size_t ascii = 0;
  while (ascii < generated.size() &&
         (static_cast<unsigned char>(generated[ascii]) >= 0x80 || generated[ascii] == '\n'))
    ++ascii;
  ASSERT_LT(ascii, generated.size()) << generated;
  const std::string stop(1, generated[ascii]);
  const CliRun stopped = glass("sample -m " + m + " -p Capitu -n 60 --temp 0 --stop " + q(stop));
  ASSERT_EQ(stopped.exit_code, 0) << stopped.err;
  EXPECT_EQ(stopped.out, "Capitu" + generated.substr(0, generated.find(stop) + 1) + "\n");

  // --json: the text and each token with its probability; at temperature 0 the draw is certain.
  const CliRun js = glass("sample -m " + m + " -p Capitu -n 12 --temp 0 --json --num-samples 2");
  ASSERT_EQ(js.exit_code, 0) << js.err;
  const json j = json::parse(js.out);
  EXPECT_EQ(j["prompt"], "Capitu");
  // The prompt as the model read it: one token per character.
  ASSERT_EQ(j["prompt_tokens"].size(), 6u) << js.out;
  std::string prompt_joined;
  for (const json& t : j["prompt_tokens"]) {
    EXPECT_GT(t["id"].get<int>(), 0) << t;  // no unknown character
    prompt_joined += t["text"].get<std::string>();
  }
  EXPECT_EQ(prompt_joined, "Capitu");
  ASSERT_EQ(j["samples"].size(), 2u);
  EXPECT_EQ(greedy.out.rfind("Capitu" + j["samples"][0]["text"].get<std::string>(), 0), 0u)
      << "the same greedy text\n"
      << js.out;
  ASSERT_EQ(j["samples"][0]["tokens"].size(), 12u);
  std::string joined;
  for (const json& t : j["samples"][0]["tokens"]) {
    EXPECT_EQ(t["prob"], 1.0) << t;  // greedy: all mass on the argmax
    EXPECT_GT(t["model_prob"].get<double>(), 0.0) << t;
    EXPECT_LE(t["model_prob"].get<double>(), 1.0) << t;
    joined += t["text"].get<std::string>();
  }
  EXPECT_EQ(joined, j["samples"][0]["text"]);
  EXPECT_NE(js.err.find("characters/s"), std::string::npos) << js.err;
}

// ---- eval and inspect ---------------------------------------------------------------------------

TEST_F(LearnerCli, EvalWarnsWhenItIsGivenTheTrainingText) {
  ASSERT_EQ(first_run_.exit_code, 0) << first_run_.err;
  const CliRun same = glass("eval -m " + q(run_.string()) + data());
  ASSERT_EQ(same.exit_code, 0) << same.err;
  EXPECT_NE(same.err.find("looks like the text this checkpoint was trained on"), std::string::npos)
      << same.err;
  const fs::path held_out = dir_ / "held-out.txt";
  write_file(held_out,
             glass_test::corpus_start(9000).substr(glass_test::corpus_start(6000).size()));
  const CliRun other =
      glass("eval -m " + q(run_.string()) + " --data " + q(held_out.string()) + " --allow-unknown");
  ASSERT_EQ(other.exit_code, 0) << other.err;
  EXPECT_EQ(other.err.find("trained on"), std::string::npos) << other.err;
}

TEST_F(LearnerCli, EvalPrintsTheYardsticksOfTheTextGivenTheTrainingText) {
  ASSERT_EQ(first_run_.exit_code, 0) << first_run_.err;
  const fs::path held_out = dir_ / "held-out-yardstick.txt";
  write_file(held_out,
             glass_test::corpus_start(9000).substr(glass_test::corpus_start(6000).size()));
  const std::u32string text = glass::load_text(held_out.string());
  // From a directory without the training text (config.json names text.txt): xz alone.
  const CliRun alone =
      glass("eval -m " + q(run_.string()) + " --data " + q(held_out.string()) + " --allow-unknown");
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  EXPECT_NE(alone.out.find(fmt::format("yardstick: xz -9 on this text alone {:.4f} bits per byte",
                                       glass::xz_bits_per_byte("", glass::u32_to_utf8(text)))),
            std::string::npos)
      << alone.out;
  EXPECT_NE(alone.out.find("(no bigram model or xz given the training text: the training text "
                           "'text.txt' is not found from this directory)"),
            std::string::npos)
      << alone.out;
  // From the directory that holds it: the bigram counted on it and xz given it.
  const CliRun given = shell("cd " + q(dir_.string()) + " && " + glass_test::binary_dir("/glass") +
                             " eval -m run --data " + q(held_out.string()) + " --allow-unknown");
  ASSERT_EQ(given.exit_code, 0) << given.err;
  const glass::Yardstick y = glass::measure_yardstick(glass::load_text(text_.string()), text);
  EXPECT_NE(given.out.find(fmt::format("yardstick given the training text text.txt: a character "
                                       "bigram model (add-one smoothing) {:.4f} bits per byte, "
                                       "xz -9 {:.4f}; this model ",
                                       y.bigram_bits_per_byte, y.xz_bits_per_byte)),
            std::string::npos)
      << given.out;
}

TEST_F(LearnerCli, InspectRefusesPromptsPastTheContextAndFailsBeforePrintingAnything) {
  ASSERT_EQ(first_run_.exit_code, 0) << first_run_.err;
  const std::string m = q(run_.string());
  // 28 characters; the tiny model trained on windows of 16 (its context_length is larger).
  expect_error(
      glass("inspect -m " + m + " -p 'Capitu Capitu Capitu Capitu '"),
      "the prompt has 28 characters; the model's context is 16 characters (the windows it "
      "trained on); past them, generation rolls its window on: each new character sees the "
      "16 before it. inspect shows one window");
  const CliRun short_prompt = glass("inspect -m " + m + " -p Capitu");
  EXPECT_EQ(short_prompt.exit_code, 0) << short_prompt.err;

  const fs::path json_out = dir_ / "inspect.json";
  for (const std::string& html : {(dir_ / "no-such-dir" / "page.html").string(), dir_.string()}) {
    const CliRun r = glass("inspect -m " + m + " -p Capitu --json " + q(json_out.string()) +
                           " --html " + q(html));
    expect_error(r, "--html");
    EXPECT_EQ(r.out, "") << "nothing printed before the failure";
    EXPECT_FALSE(fs::exists(json_out)) << "nothing written either";
  }
}

// ---- texts with many characters -------------------------------------------------------------------

TEST_F(LearnerCli, VocabCapSaysHowMuchOfTheTextBecameUnknown) {
  // 200 distinct characters (CJK ideographs), the first 20 far more frequent than the rest.
  std::string text;
  auto utf8 = [](char32_t c) {
    return std::string{static_cast<char>(0xE0 | (c >> 12)),
                       static_cast<char>(0x80 | ((c >> 6) & 0x3F)),
                       static_cast<char>(0x80 | (c & 0x3F))};
  };
  for (int round = 0; round < 30; ++round)
    for (char32_t c = 0x4E00; c < 0x4E00 + 200; ++c)
      for (int k = 0; k < (c < 0x4E00 + 20 ? 5 : 1); ++k) text += utf8(c);
  write_file(dir_ / "cjk.txt", text);
  const CliRun r =
      glass("train --data " + q((dir_ / "cjk.txt").string()) + " --out " +
            q((dir_ / "cjk").string()) + " --vocab-cap 50 --iters 1 --eval-every 1" + tiny(0));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // 30 rounds x (20 x 5 + 180) = 8400 characters; 49 kept (id 0 is the unknown token): the 20
  // frequent ones and 29 of the rare ones, so 151 x 30 = 4530 occurrences are unknown: 53.93%.
  EXPECT_NE(r.out.find("4530 occurrences of the rarest ones (53.93% of the text)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("hint: more than 1% of the text"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("vocabulary 50"), std::string::npos) << r.out;
  expect_error(glass("train --data " + q((dir_ / "cjk.txt").string()) + " --vocab-cap 1"),
               "--vocab-cap");
}
