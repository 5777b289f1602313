// The training loop on a tiny model: the loss falls, exact resume, the Ctrl-C flag, bad options.
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include <gtest/gtest.h>

#include "autograd/threads.hpp"
#include "data/text.hpp"
#include "checkpoint/atomic_file.hpp"
#include "checkpoint/checkpoint.hpp"
#include "checkpoint/safetensors.hpp"
#include "sample/sampler.hpp"
#include "train/trainer.hpp"

#include "fixtures.hpp"
#include "test_paths.hpp"

using namespace glass;
namespace fs = std::filesystem;

namespace {

/// A fresh empty directory under /tmp, removed at the end of the test.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) {
    path =
        fs::temp_directory_path() / ("glass_train_test_" + std::to_string(::getpid()) + "_" + name);
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string str(const std::string& child = "") const { return (path / child).string(); }
};

/// The tests' small model (fixtures.hpp), twice as wide, so that a few dozen steps learn.
ModelConfig tiny_config(std::size_t vocab_size) {
  ModelConfig c = glass_test::small_config(vocab_size, 32);
  c.d_model = 32;
  c.ffn_hidden = 64;
  return c;
}

/// The first `n` characters of the bundled Portuguese corpus, written to dir/text.txt.
std::string write_corpus_slice(const TempDir& dir, std::size_t n) {
  const std::u32string text = load_text(glass_test::source_dir("/data/corpora/domcasmurro.txt"));
  const std::string path = dir.str("text.txt");
  std::ofstream(path, std::ios::binary) << u32_to_utf8(text.substr(0, n));
  return path;
}

TrainOptions tiny_options(const std::string& data, const std::string& out) {
  TrainOptions o;
  o.data_path = data;
  o.out_dir = out;
  o.batch_size = 8;
  o.context = 16;
  o.lr = 3e-3;
  o.warmup = 10;
  o.eval_every = 10;
  o.eval_iters = 4;
  o.sample_tokens = 20;
  o.model = tiny_config(0);
  return o;
}

}  // namespace

// ---- training ---------------------------------------------------------------------------------

TEST(Trainer, LossFallsWellBelowLogVocab) {
  TempDir dir("learn");
  TrainOptions o = tiny_options(write_corpus_slice(dir, 20000), dir.str("run"));
  o.iters = 150;
  o.eval_every = 50;
  // The end-of-run hook: called once, by the end of run(), with the whole run's rows.
  int hook_calls = 0;
  std::size_t hook_evals = 0, hook_steps = 0;
  o.on_run_end = [&](const Trainer& t) {
    ++hook_calls;
    hook_evals = t.log().size();
    hook_steps = t.steps().size();
  };
  std::ostringstream out;
  Trainer trainer(o, out);
  const double log_v = std::log(static_cast<double>(trainer.tokenizer().vocab_size()));
  const TrainResult r = trainer.run();
  EXPECT_EQ(r.step, 150);
  ASSERT_EQ(trainer.log().size(), 4u);                      // steps 0, 50, 100, 150
  EXPECT_NEAR(trainer.log().front().val_loss, log_v, 0.3);  // untrained: about uniform
  EXPECT_LT(r.last_eval.val_loss, log_v - 1.0) << "ln V = " << log_v;
  EXPECT_LT(r.last_eval.train_loss, log_v - 1.0);
  for (const char* f : {"model.safetensors", "best.safetensors", "config.json", "log.csv",
                        "train_state.json", "train_state.safetensors"})
    EXPECT_TRUE(fs::exists(dir.path / "run" / f)) << f;
  // The trainer writes no page: loss.html is written by whoever runs it (glass train), here no one.
  EXPECT_FALSE(fs::exists(dir.path / "run" / "loss.html"));
  EXPECT_EQ(hook_calls, 1);
  EXPECT_EQ(hook_evals, 4u);
  EXPECT_EQ(hook_steps, 150u);
  const std::string csv = read_file(dir.str("run/log.csv"));
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "step,lr,train_loss,val_loss,tokens_per_s,elapsed_s");
  EXPECT_NE(out.str().find("---- sample"), std::string::npos);
  // The save's steps.csv holds every step's row, as formatted when the step was taken.
  EXPECT_EQ(read_file((fs::canonical(dir.path / "run" / "current") / "steps.csv").string()),
            steps_csv(trainer.steps()));
  // The validation split (2000 characters, 125 windows of 16) is larger than the sample of
  // 4 batches of 8 windows: its loss is estimated, and the bits-per-byte line says so.
  EXPECT_NE(out.str().find("bytes of text in the validation split; estimated on 32 sampled "
                           "windows of 16 characters)"),
            std::string::npos)
      << out.str();
}

TEST(Trainer, TheBitsPerByteLineSaysTheValidationSplitWasMeasuredWhole) {
  // 3000 characters: a validation split of 300, 19 windows of 16, fewer than the sample's 32.
  TempDir dir("whole");
  TrainOptions o = tiny_options(write_corpus_slice(dir, 3000), dir.str("run"));
  o.iters = 1;
  o.sample_tokens = 0;
  o.interp_record = false;
  std::ostringstream out;
  Trainer trainer(o, out);
  ASSERT_TRUE(trainer.val_loss_exact());
  trainer.run();
  EXPECT_NE(out.str().find("bytes of text in the validation split; measured whole: every "
                           "character predicted once)"),
            std::string::npos)
      << out.str();
}

TEST(Trainer, ResumeGivesTheSameLossesAsOneRun) {
  TempDir dir("resume");
  const std::string data = write_corpus_slice(dir, 8000);
  TrainOptions one = tiny_options(data, dir.str("one"));
  one.iters = 40;
  one.decay_iters = 40;
  std::ostringstream sink;
  Trainer whole(one, sink);
  whole.run();

  TrainOptions first = tiny_options(data, dir.str("two"));
  first.iters = 20;
  first.decay_iters = 40;
  {
    Trainer t(first, sink);
    t.run();
  }
  TrainOptions second = first;
  second.iters = 40;
  second.resume = true;
  Trainer resumed(second, sink);
  EXPECT_EQ(resumed.step(), 20);
  resumed.run();

  ASSERT_EQ(whole.log().size(), 5u);  // steps 0, 10, 20, 30, 40
  ASSERT_EQ(resumed.log().size(), whole.log().size());
  for (std::size_t i = 0; i < whole.log().size(); ++i) {
    EXPECT_EQ(resumed.log()[i].step, whole.log()[i].step);
    EXPECT_EQ(resumed.log()[i].lr, whole.log()[i].lr);
    EXPECT_EQ(resumed.log()[i].train_loss, whole.log()[i].train_loss) << "row " << i;  // exact
    EXPECT_EQ(resumed.log()[i].val_loss, whole.log()[i].val_loss) << "row " << i;
  }
  const auto pa = whole.model().named_parameters();
  const auto pb = resumed.model().named_parameters();
  for (std::size_t i = 0; i < pa.size(); ++i)
    for (std::size_t j = 0; j < pa[i].second.size(); ++j)
      ASSERT_EQ(pa[i].second.value().data()[j], pb[i].second.value().data()[j]) << pa[i].first;
  // The CSV files agree on the losses too (columns 1-4; time columns differ).
  auto loss_columns = [](const std::string& csv) {
    std::istringstream in(csv);
    std::string line, out;
    while (std::getline(in, line)) {
      std::size_t cut = 0;
      for (int commas = 0; commas < 4 && cut != std::string::npos; ++commas)
        cut = line.find(',', cut + 1);
      out += line.substr(0, cut) + "\n";
    }
    return out;
  };
  EXPECT_EQ(loss_columns(read_file(dir.str("one/log.csv"))),
            loss_columns(read_file(dir.str("two/log.csv"))));
}

TEST(Trainer, TwoThreadsTrainLikeOneAndResumeExactly) {
  // --threads 2: each step's batch is split between two threads (train/data_parallel.hpp). The
  // losses are those of one thread to rounding (which grows a little over the steps), and a
  // run resumed with the same thread count continues exactly.
  TempDir dir("threads");
  const std::string data = write_corpus_slice(dir, 8000);
  TrainOptions o = tiny_options(data, dir.str("one"));
  o.iters = 20;
  o.decay_iters = 20;
  std::ostringstream sink;
  Trainer one_thread(o, sink);
  one_thread.run();

  struct TwoThreads {  // back to one thread however the test ends
    TwoThreads() { set_num_threads(2); }
    ~TwoThreads() { set_num_threads(1); }
  };
  auto two_thread_setting = std::make_unique<TwoThreads>();
  TrainOptions two = tiny_options(data, dir.str("two"));
  two.iters = 20;
  two.decay_iters = 20;
  Trainer two_threads(two, sink);
  two_threads.run();
  TrainOptions half = tiny_options(data, dir.str("half"));
  half.iters = 10;
  half.decay_iters = 20;
  {
    Trainer t(half, sink);
    t.run();
  }
  half.iters = 20;
  half.resume = true;
  Trainer resumed(half, sink);
  resumed.run();
  two_thread_setting.reset();

  ASSERT_EQ(two_threads.log().size(), 3u);  // steps 0, 10, 20
  ASSERT_EQ(one_thread.log().size(), 3u);
  ASSERT_EQ(resumed.log().size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(two_threads.log()[i].train_loss, one_thread.log()[i].train_loss, 1e-3)
        << "row " << i;
    EXPECT_NEAR(two_threads.log()[i].val_loss, one_thread.log()[i].val_loss, 1e-3) << "row " << i;
    EXPECT_EQ(resumed.log()[i].train_loss, two_threads.log()[i].train_loss) << "row " << i;
    EXPECT_EQ(resumed.log()[i].val_loss, two_threads.log()[i].val_loss) << "row " << i;
  }
}

TEST(Trainer, StopFlagSavesACheckpointAndReturns) {
  TempDir dir("stop");
  TrainOptions o = tiny_options(write_corpus_slice(dir, 5000), dir.str("run"));
  o.iters = 1000;
  volatile std::sig_atomic_t flag = 1;  // as if Ctrl-C came before the first step
  o.stop_flag = &flag;
  std::ostringstream out;
  Trainer t(o, out);
  const TrainResult r = t.run();
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(r.step, 0);
  EXPECT_TRUE(has_train_state(dir.str("run")));
  EXPECT_NE(out.str().find("interrupted"), std::string::npos);
}

// A resumed run keeps its checkpoint's model: the sizes given with another value are reported as
// ignored (by field), those given with the same value or not given at all are not.
TEST(Trainer, AResumeReportsTheModelSizesItIgnores) {
  TempDir dir("ignored");
  TrainOptions o = tiny_options(write_corpus_slice(dir, 5000), dir.str("run"));
  o.iters = 1000;
  volatile std::sig_atomic_t flag = 1;  // saves at step 0 and returns
  o.stop_flag = &flag;
  o.model_given.d_model = o.model_given.n_heads = true;
  std::ostringstream out;
  {
    Trainer first(o, out);
    EXPECT_TRUE(first.ignored_model_fields().empty());  // a new run uses the sizes given
    first.run();
  }
  TrainOptions same = o;
  same.resume = true;
  same.model_given = {true, true, true, true, true, true};
  EXPECT_TRUE(Trainer(same, out).ignored_model_fields().empty());

  TrainOptions other = same;
  other.model.d_model = 64;                         // given: reported
  other.model.n_layers = o.model.n_layers + 1;      // given: reported
  other.model.vocab_cap = o.model.vocab_cap + 1;    // given: reported
  other.model.ffn_hidden = o.model.ffn_hidden * 2;  // not given: the default would differ too
  other.model_given.ffn_hidden = false;
  Trainer resumed(other, out);
  EXPECT_EQ(resumed.ignored_model_fields(),
            (std::vector<std::string>{"model.d_model", "model.n_layers", "model.vocab_cap"}));
  EXPECT_EQ(resumed.model().config().d_model, o.model.d_model);  // the checkpoint's model
  EXPECT_EQ(resumed.options().model.ffn_hidden, o.model.ffn_hidden);
}

TEST(Trainer, BadOptionsAndShortTextAreRejected) {
  TempDir dir("bad");
  const std::string data = write_corpus_slice(dir, 100);
  TrainOptions o = tiny_options(data, dir.str("run"));
  std::ostringstream out;
  try {
    Trainer t(o, out);  // 100 characters: the validation tenth cannot hold 17
    // smallest n with n - floor(0.9 n) >= 17 is n = 161 (161 - 144 = 17; 160 - 144 = 16)
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("at least 161"), std::string::npos) << e.what();
  }
  TrainOptions big = tiny_options(write_corpus_slice(dir, 5000), dir.str("run"));
  big.context = 64;  // longer than the tiny model's context_length 32
  EXPECT_THROW(Trainer(big, out), std::invalid_argument);
  EXPECT_FALSE(fs::exists(dir.path / "run" / "model.safetensors"));  // nothing written
}

TEST(Trainer, ABadOptionIsAnOptionErrorNamingTheFieldAndTheValue) {
  TempDir dir("option");
  const std::string data = write_corpus_slice(dir, 5000);
  std::ostringstream out;
  auto refusal = [&](TrainOptions o) -> OptionError {
    try {
      Trainer t(o, out);
    } catch (const OptionError& e) {
      return e;
    }
    ADD_FAILURE() << "accepted";
    return OptionError("", "", "");
  };
  TrainOptions iters = tiny_options(data, dir.str("run"));
  iters.iters = 0;
  const OptionError a = refusal(iters);
  EXPECT_EQ(a.field(), "iters");
  EXPECT_EQ(a.value(), "0");
  EXPECT_EQ(a.reason(), "must be a positive integer");
  EXPECT_EQ(std::string(a.what()), "iters = 0: must be a positive integer");
  TrainOptions context = tiny_options(data, dir.str("run"));
  context.context = 64;  // longer than the tiny model's context_length 32
  const OptionError b = refusal(context);
  EXPECT_EQ(b.field(), "context");
  EXPECT_EQ(b.value(), "64");
  EXPECT_NE(b.reason().find("context length 32"), std::string::npos) << b.reason();
  TrainOptions lr = tiny_options(data, dir.str("run"));
  lr.lr = 1e-3, lr.min_lr = 1e-2;
  EXPECT_EQ(refusal(lr).field(), "min_lr");
  // No message of the library names a flag of the command line.
  for (const OptionError& e : {a, b})
    EXPECT_EQ(std::string(e.what()).find("--"), std::string::npos) << e.what();
}

namespace {

/// Counts what the loop tells its observers, and checks each save's directory as it is written.
struct FakeObserver : TrainObserver {
  std::vector<long> steps, evals, before, saves;
  std::vector<bool> model_written;  // model.safetensors was in the step directory at on_save
  void on_step(const StepRow& row) override { steps.push_back(row.step); }
  void on_eval(const LogRow& row) override { evals.push_back(row.step); }
  void before_save(long step) override { before.push_back(step); }
  void on_save(const SaveSite& site) override {
    saves.push_back(site.step);
    model_written.push_back(fs::exists(fs::path(site.step_dir) / "model.safetensors") &&
                            !fs::exists(fs::path(site.step_dir) / "manifest.json"));
  }
};

}  // namespace

TEST(Trainer, ObserversHearEveryStepEvaluationAndSave) {
  TempDir dir("observer");
  TrainOptions o = tiny_options(write_corpus_slice(dir, 5000), dir.str("run"));
  o.iters = 25;
  o.interp_record = false;
  std::ostringstream out;
  Trainer t(o, out);
  FakeObserver fake;
  t.add_observer(fake);
  t.run();
  std::vector<long> all(25);
  for (long i = 0; i < 25; ++i) all[static_cast<std::size_t>(i)] = i + 1;
  EXPECT_EQ(fake.steps, all);  // the rows of steps.csv: 1 .. 25
  EXPECT_EQ(fake.evals, (std::vector<long>{0, 10, 20, 25}));
  EXPECT_EQ(fake.before, (std::vector<long>{0, 10, 20, 25}));
  EXPECT_EQ(fake.saves, (std::vector<long>{0, 10, 20, 25}));
  EXPECT_EQ(fake.model_written, (std::vector<bool>{true, true, true, true}));
  // The run's own records are observers too: their rows are the ones the fake one heard.
  ASSERT_EQ(t.steps().size(), 25u);
  EXPECT_EQ(t.log().size(), 4u);
}
