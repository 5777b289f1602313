// The Trainer with Muon (TrainOptions::optimizer muon, train/muon.hpp): a resumed run continues
// bit for bit, two threads train like one, the optimizer is part of the recorded recipe (another
// one is refused on resume, an old save reads as AdamW) and an AdamW save holds nothing new.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "autograd/threads.hpp"
#include "checkpoint/checkpoint.hpp"
#include "checkpoint/run_dir.hpp"
#include "checkpoint/safetensors.hpp"
#include "data/text.hpp"
#include "train/resume.hpp"
#include "train/trainer.hpp"

#include "fixtures.hpp"
#include "test_paths.hpp"

using namespace glass;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

/// A fresh empty directory under /tmp, removed at the end of the test.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) {
    path =
        fs::temp_directory_path() / ("glass_muon_test_" + std::to_string(::getpid()) + "_" + name);
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string str(const std::string& child = "") const { return (path / child).string(); }
};

/// The first 8000 characters of the bundled Portuguese corpus, written to dir/text.txt.
std::string write_corpus_slice(const TempDir& dir) {
  const std::u32string text = load_text(glass_test::source_dir("/data/corpora/domcasmurro.txt"));
  const std::string path = dir.str("text.txt");
  std::ofstream(path, std::ios::binary) << u32_to_utf8(text.substr(0, 8000));
  return path;
}

/// A tiny Muon run of `iters` steps (cosine to step 40) into `out`.
TrainOptions muon_options(const std::string& data, const std::string& out, long iters) {
  TrainOptions o;
  o.data_path = data;
  o.out_dir = out;
  o.iters = iters;
  o.decay_iters = 40;
  o.batch_size = 8;
  o.context = 16;
  o.lr = 3e-3;
  o.warmup = 10;
  o.eval_every = 10;
  o.eval_iters = 4;
  o.sample_tokens = 20;
  o.model = glass_test::small_config(0, 32);
  o.model.d_model = 32;
  o.model.ffn_hidden = 64;
  o.optimizer = OptimizerKind::muon;
  o.muon_lr = 0.02;
  return o;
}

std::vector<float> all_weights(const Trainer& t) {
  std::vector<float> w;
  for (const auto& [name, p] : t.model().named_parameters())
    w.insert(w.end(), p.value().begin(), p.value().end());
  return w;
}

json state_json(const std::string& run_dir) {
  std::ifstream in(fs::path(checkpoint_files_dir(run_dir)) / "train_state.json");
  return json::parse(in);
}

std::vector<std::string> state_tensor_names(const std::string& run_dir) {
  std::vector<std::string> names;
  for (const NamedTensor& t :
       load_safetensors(
           (fs::path(checkpoint_files_dir(run_dir)) / "train_state.safetensors").string())
           .tensors)
    names.push_back(t.name);
  return names;
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

TEST(TrainerMuon, ResumeGivesTheSameBitsAsOneRun) {
  TempDir dir("resume");
  const std::string data = write_corpus_slice(dir);
  std::ostringstream sink;
  Trainer whole(muon_options(data, dir.str("one"), 40), sink);
  whole.run();
  EXPECT_NE(sink.str().find("optimizer: Muon (lr 0.02"), std::string::npos);
  {
    Trainer first(muon_options(data, dir.str("two"), 20), sink);
    first.run();
  }
  // The save holds Muon's buffers and says it is a Muon run.
  const std::vector<std::string> names = state_tensor_names(dir.str("two"));
  EXPECT_TRUE(contains(names, "muon.layers.0.attention.wq.weight"));
  EXPECT_TRUE(contains(names, "muon.layers.1.feed_forward.w2.weight"));
  EXPECT_FALSE(contains(names, "m.layers.0.attention.wq.weight"));  // not on AdamW
  EXPECT_TRUE(contains(names, "m.tok_embeddings.weight"));
  const json state = state_json(dir.str("two"));
  EXPECT_EQ(state["recipe"]["optimizer"], "muon");
  EXPECT_EQ(state["recipe"]["muon_lr"], 0.02);
  EXPECT_EQ(state["muon"]["ns_steps"], 5);

  TrainOptions second = muon_options(data, dir.str("two"), 40);
  second.optimizer = OptimizerKind::adamw;  // not given: the recorded optimizer is taken
  second.muon_lr = 1;
  second.resume = true;
  Trainer resumed(second, sink);
  EXPECT_EQ(resumed.options().optimizer, OptimizerKind::muon);
  EXPECT_EQ(resumed.options().muon_lr, 0.02);
  resumed.run();
  ASSERT_EQ(resumed.log().size(), whole.log().size());
  for (std::size_t i = 0; i < whole.log().size(); ++i) {
    EXPECT_EQ(resumed.log()[i].train_loss, whole.log()[i].train_loss) << "row " << i;
    EXPECT_EQ(resumed.log()[i].val_loss, whole.log()[i].val_loss) << "row " << i;
  }
  EXPECT_EQ(all_weights(resumed), all_weights(whole));  // bit for bit
}

TEST(TrainerMuon, TwoThreadsTrainLikeOneAndResumeExactly) {
  // As Trainer.TwoThreadsTrainLikeOneAndResumeExactly: the gradients of two threads are those
  // of one to rounding; Muon's step itself gives the same bits for any thread count.
  TempDir dir("threads");
  const std::string data = write_corpus_slice(dir);
  std::ostringstream sink;
  Trainer one_thread(muon_options(data, dir.str("one"), 20), sink);
  one_thread.run();
  struct TwoThreads {  // back to one thread however the test ends
    TwoThreads() { set_num_threads(2); }
    ~TwoThreads() { set_num_threads(1); }
  };
  auto two_thread_setting = std::make_unique<TwoThreads>();
  Trainer two_threads(muon_options(data, dir.str("two"), 20), sink);
  two_threads.run();
  {
    Trainer half(muon_options(data, dir.str("half"), 10), sink);
    half.run();
  }
  TrainOptions rest = muon_options(data, dir.str("half"), 20);
  rest.resume = true;
  Trainer resumed(rest, sink);
  resumed.run();
  two_thread_setting.reset();

  ASSERT_EQ(one_thread.log().size(), 3u);  // steps 0, 10, 20
  ASSERT_EQ(two_threads.log().size(), 3u);
  ASSERT_EQ(resumed.log().size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(two_threads.log()[i].train_loss, one_thread.log()[i].train_loss, 1e-3) << i;
    EXPECT_NEAR(two_threads.log()[i].val_loss, one_thread.log()[i].val_loss, 1e-3) << i;
    EXPECT_EQ(resumed.log()[i].val_loss, two_threads.log()[i].val_loss) << i;
  }
  EXPECT_LT(one_thread.log()[2].val_loss, one_thread.log()[0].val_loss - 0.5);  // it learns
  EXPECT_EQ(all_weights(resumed), all_weights(two_threads));
}

TEST(TrainerMuon, AnotherOptimizerOrMuonRateOnResumeIsRefused) {
  TempDir dir("refuse");
  const std::string data = write_corpus_slice(dir);
  std::ostringstream sink;
  ModelConfig config;
  {
    Trainer t(muon_options(data, dir.str("run"), 10), sink);
    t.run();
    config = t.model().config();
  }
  TrainOptions o = muon_options(data, dir.str("run"), 20);
  o.resume = true;
  o.optimizer = OptimizerKind::adamw;
  o.recipe_given.optimizer = true;
  o.muon_lr = 0.05;
  o.recipe_given.muon_lr = true;
  try {
    Trainer t(o, sink);
    FAIL() << "a Muon run was resumed with AdamW";
  } catch (const RecipeMismatchError& e) {
    ASSERT_EQ(e.differences().size(), 2u);
    EXPECT_EQ(e.differences()[0].field, "optimizer");
    EXPECT_EQ(e.differences()[0].given, "adamw");
    EXPECT_EQ(e.differences()[0].recorded, "muon");
    EXPECT_EQ(e.differences()[1].field, "muon_lr");
  }
  // The library refuses too, when asked without the recipe's check.
  Decoder model(config, 1);
  AdamW adamw(model.named_parameters());
  try {
    load_train_state(dir.str("run"), adamw);
    FAIL() << "a Muon save was read by AdamW alone";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("trained with Muon, this run asks for AdamW"),
              std::string::npos)
        << e.what();
  }
}

TEST(TrainerMuon, AnAdamWSaveIsAsBeforeAndReadsAsAdamW) {
  TempDir dir("adamw");
  const std::string data = write_corpus_slice(dir);
  std::ostringstream sink;
  TrainOptions o = muon_options(data, dir.str("run"), 10);
  o.optimizer = OptimizerKind::adamw;
  {
    Trainer t(o, sink);
    t.run();
  }
  EXPECT_EQ(sink.str().find("optimizer: Muon"), std::string::npos);
  // No new field: the files of an AdamW run are those it wrote before Muon existed.
  const json state = state_json(dir.str("run"));
  EXPECT_FALSE(state.contains("muon"));
  EXPECT_FALSE(state["recipe"].contains("optimizer"));
  EXPECT_FALSE(state["recipe"].contains("muon_lr"));
  for (const std::string& name : state_tensor_names(dir.str("run")))
    EXPECT_TRUE(name.rfind("m.", 0) == 0 || name.rfind("v.", 0) == 0) << name;
  EXPECT_EQ(load_train_recipe(dir.str("run"))->optimizer, "adamw");  // absent: AdamW

  // Asking for Muon on its resume is refused; leaving it out continues with AdamW.
  TrainOptions again = o;
  again.iters = 20;
  again.resume = true;
  again.optimizer = OptimizerKind::muon;
  again.recipe_given.optimizer = true;
  EXPECT_THROW(Trainer(again, sink), RecipeMismatchError);
  again.recipe_given.optimizer = false;
  Trainer resumed(again, sink);
  EXPECT_EQ(resumed.options().optimizer, OptimizerKind::adamw);
  // The library alone: a Muon read of an AdamW save is refused.
  Decoder model(resumed.model().config(), 1);
  MuonSplit split = split_for_muon(model.named_parameters());
  AdamW adamw(split.adamw);
  Muon muon(split.muon);
  EXPECT_THROW(load_train_state(dir.str("run"), adamw, "", "", &muon), CheckpointError);
}

TEST(TrainerMuon, ABadMuonRateIsAnOptionError) {
  TempDir dir("bad");
  const std::string data = write_corpus_slice(dir);
  std::ostringstream sink;
  TrainOptions o = muon_options(data, dir.str("run"), 10);
  o.muon_lr = 0;
  try {
    Trainer t(o, sink);
    FAIL() << "muon_lr 0 was taken";
  } catch (const OptionError& e) {
    EXPECT_EQ(e.field(), "muon_lr");
  }
  EXPECT_EQ(optimizer_from_name("adamx"), std::nullopt);
  EXPECT_EQ(optimizer_from_name("muon"), OptimizerKind::muon);
}

TEST(TrainerMuon, ANonFiniteBufferOrOtherMuonSettingsInASaveAreRefused) {
  TempDir dir("state");
  const std::string save = dir.str("save");
  Decoder model(glass_test::write_small_checkpoint(save, 16, 3), 3);
  MuonSplit split = split_for_muon(model.named_parameters());
  AdamW adamw(split.adamw);
  Muon muon(split.muon);
  TrainState state;
  state.step = 2;
  state.context = 16;
  MuonParam& last = muon.params().back();
  last.momentum(1) = std::numeric_limits<float>::quiet_NaN();
  save_train_state(save, adamw, state, &muon);
  Decoder other_model(model.config(), 3);
  MuonSplit other_split = split_for_muon(other_model.named_parameters());
  AdamW other_adamw(other_split.adamw);
  Muon other(other_split.muon);
  try {
    load_train_state(save, other_adamw, "", "", &other);
    FAIL() << "a NaN in Muon's momentum was taken";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'muon." + last.name + "' holds nan at index 1"),
              std::string::npos)
        << e.what();
  }
  last.momentum(1) = 0.5f;
  save_train_state(save, adamw, state, &muon);
  Muon five_steps_more(other_split.muon, MuonConfig{0.95, 10, 1e-7});
  EXPECT_THROW(load_train_state(save, other_adamw, "", "", &five_steps_more), CheckpointError);
  const TrainState read = load_train_state(save, other_adamw, "", "", &other);
  EXPECT_EQ(read.step, 2);
  EXPECT_EQ(other.step_count(), 2);
  EXPECT_EQ(other.params().back().momentum(1), 0.5f);
}
