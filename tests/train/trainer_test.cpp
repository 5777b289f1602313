// Checkpoints (round trip, Meta LLaMA names, corrupt files), the training loop (loss falls,
// exact resume, Ctrl-C flag) and cached vs uncached generation, on a tiny model.
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "data/text.hpp"
#include "train/atomic_file.hpp"
#include "train/checkpoint.hpp"
#include "train/safetensors.hpp"
#include "train/sampler.hpp"
#include "train/train_state.hpp"
#include "train/trainer.hpp"

using namespace glass;
namespace fs = std::filesystem;

namespace {

/// A fresh empty directory under /tmp, removed at the end of the test.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) {
    path = fs::temp_directory_path() / ("glass_train_test_" + std::to_string(::getpid()) + "_" + name);
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string str(const std::string& child = "") const { return (path / child).string(); }
};

ModelConfig tiny_config(std::size_t vocab_size) {
  ModelConfig c;
  c.vocab_size = vocab_size;
  c.d_model = 32;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.ffn_hidden = 64;
  c.context_length = 32;
  return c;
}

/// The first `n` characters of the bundled Portuguese corpus, written to dir/text.txt.
std::string write_corpus_slice(const TempDir& dir, std::size_t n) {
  const std::u32string text = load_text(GLASS_SOURCE_DIR "/data/corpora/domcasmurro.txt");
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

Ids some_tokens(std::size_t vocab, std::size_t n) {
  Ids ids = Ids::from_shape({1, n});
  for (std::size_t i = 0; i < n; ++i) ids(0, i) = static_cast<std::int32_t>((7 * i + 3) % vocab);
  return ids;
}

}  // namespace

// ---- checkpoints ------------------------------------------------------------------------------

TEST(Checkpoint, RoundTripGivesIdenticalLogits) {
  TempDir dir("roundtrip");
  const Tokenizer tokenizer = Tokenizer::from_text(U"o gato comeu o rato e a menina viu tudo");
  Decoder model(tiny_config(tokenizer.vocab_size()), 42);
  save_model(dir.str("ckpt"), model, tokenizer, "model.safetensors",
             R"({"training": {"context": 16}})");
  const LoadedModel loaded = load_checkpoint(dir.str("ckpt"));
  EXPECT_EQ(loaded.tokenizer.chars(), tokenizer.chars());
  EXPECT_EQ(loaded.config.d_model, 32u);
  EXPECT_EQ(training_context(dir.str("ckpt")), 16u);

  NoGradGuard no_grad;
  const Ids tokens = some_tokens(tokenizer.vocab_size(), 12);
  const Array a = model.forward(tokens).value();
  const Array b = loaded.model->forward(tokens).value();
  ASSERT_EQ(shape_of(a), shape_of(b));
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a.data()[i], b.data()[i]) << i;  // bit for bit
}

TEST(Checkpoint, TensorNamesAndShapesFollowMetaLlama) {
  TempDir dir("names");
  const Tokenizer tokenizer = Tokenizer::from_text(U"abcdefghij");  // vocab 11
  ModelConfig c;  // the default model: d_model 128, 2 kv heads of dim 32, ffn 344
  c.vocab_size = tokenizer.vocab_size();
  c.n_layers = 1;
  Decoder model(c, 1);
  save_model(dir.str(), model, tokenizer);
  const SafetensorsContents file = load_safetensors(dir.str("model.safetensors"));
  auto shape = [&](const std::string& name) {
    const NamedTensor* t = file.find(name);
    EXPECT_NE(t, nullptr) << name;
    return t ? t->shape : std::vector<std::size_t>{};
  };
  using S = std::vector<std::size_t>;
  EXPECT_EQ(shape("tok_embeddings.weight"), (S{11, 128}));
  EXPECT_EQ(shape("layers.0.attention_norm.weight"), (S{128}));
  EXPECT_EQ(shape("layers.0.attention.wq.weight"), (S{128, 128}));
  EXPECT_EQ(shape("layers.0.attention.wk.weight"), (S{64, 128}));
  EXPECT_EQ(shape("layers.0.attention.wv.weight"), (S{64, 128}));
  EXPECT_EQ(shape("layers.0.attention.wo.weight"), (S{128, 128}));
  EXPECT_EQ(shape("layers.0.ffn_norm.weight"), (S{128}));
  EXPECT_EQ(shape("layers.0.feed_forward.w1.weight"), (S{344, 128}));
  EXPECT_EQ(shape("layers.0.feed_forward.w2.weight"), (S{128, 344}));
  EXPECT_EQ(shape("layers.0.feed_forward.w3.weight"), (S{344, 128}));
  EXPECT_EQ(shape("norm.weight"), (S{128}));
  EXPECT_EQ(shape("output.weight"), (S{11, 128}));
  EXPECT_EQ(file.tensors.size(), 12u);
}

TEST(Checkpoint, CorruptOrMissingFilesAreClearErrors) {
  TempDir dir("corrupt");
  const Tokenizer tokenizer = Tokenizer::from_text(U"hello world");
  Decoder model(tiny_config(tokenizer.vocab_size()), 3);
  EXPECT_THROW(load_checkpoint(dir.str("nope")), CheckpointError);

  save_model(dir.str("a"), model, tokenizer);
  const std::string weights = read_file(dir.str("a/model.safetensors"));
  write_file_atomic(dir.str("a/model.safetensors"), weights.substr(0, weights.size() / 2));
  try {
    load_checkpoint(dir.str("a"));
    FAIL() << "a truncated safetensors file loaded";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("model.safetensors"), std::string::npos) << e.what();
  }

  save_model(dir.str("b"), model, tokenizer);
  write_file_atomic(dir.str("b/config.json"), "{\"model\": ");
  EXPECT_THROW(load_checkpoint(dir.str("b")), CheckpointError);

  // Weights of a model with d_model 32 under a config that says 64: wrong shapes.
  save_model(dir.str("c"), model, tokenizer);
  ModelConfig wider = tiny_config(tokenizer.vocab_size());
  wider.d_model = 64;
  Decoder other(wider, 3);
  save_model(dir.str("d"), other, tokenizer);
  fs::copy_file(dir.str("d/config.json"), dir.str("c/config.json"), fs::copy_options::overwrite_existing);
  try {
    load_checkpoint(dir.str("c"));
    FAIL() << "wrong shapes loaded";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("shape"), std::string::npos) << e.what();
  }
}

// A number beyond the range of a double makes the JSON parser throw out_of_range, not
// parse_error (found by the train_state fuzz harness with "22e2222"): still a CheckpointError
// that names the file.
TEST(Checkpoint, TrainStateWithAnOutOfRangeNumberIsACheckpointError) {
  TempDir dir("range");
  const Tokenizer tokenizer = Tokenizer::from_text(U"hello world");
  Decoder model(tiny_config(tokenizer.vocab_size()), 3);
  save_model(dir.str(), model, tokenizer);
  write_file_atomic(dir.str("train_state.json"), "{\"step\": 22e2222}");
  AdamW optimizer(model.named_parameters());
  try {
    load_train_state(dir.str(), optimizer);
    FAIL() << "a train_state.json with 22e2222 loaded";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("train_state.json"), std::string::npos) << e.what();
  }
  // An integer field holding a number that is not an integer (also found by the fuzz harness:
  // converting 3.5e50 to long is undefined behaviour, reported by UBSan) is refused.
  write_file_atomic(dir.str("train_state.json"), "{\"step\": 355555555555555555555555555555555555555555}");
  try {
    load_train_state(dir.str(), optimizer);
    FAIL() << "a train_state.json with step 3.5e41 loaded";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("\"step\" must be an integer"), std::string::npos) << e.what();
  }
}

// ---- generation -------------------------------------------------------------------------------

TEST(Generate, CachedAndUncachedAgreeAtTemperatureZero) {
  const Tokenizer tokenizer = Tokenizer::from_text(U"abcdefghijklmnopqrstuvwxyz ");
  Decoder model(tiny_config(tokenizer.vocab_size()), 11);
  SamplingOptions greedy;
  greedy.temperature = 0.0;
  for (std::size_t window : {32u, 8u}) {  // 8: the window slides and the cache is rebuilt
    std::mt19937_64 rng1(1), rng2(1);
    greedy.use_kv_cache = true;
    const auto cached = generate(model, {1, 2, 3, 4, 5}, 20, window, greedy, rng1);
    greedy.use_kv_cache = false;
    const auto uncached = generate(model, {1, 2, 3, 4, 5}, 20, window, greedy, rng2);
    EXPECT_EQ(cached, uncached) << "window " << window;
    EXPECT_EQ(cached.size(), 20u);
    for (std::int32_t id : cached) EXPECT_NE(id, 0);  // the unknown id is never generated
  }
  // A prompt longer than the window is cropped (no error), and a seed reproduces a sample.
  SamplingOptions hot;
  hot.temperature = 1.0;
  hot.top_k = 5;
  hot.top_p = 0.9;
  std::mt19937_64 a(9), b(9);
  std::vector<std::int32_t> long_prompt(40, 3);
  EXPECT_EQ(generate(model, long_prompt, 15, 8, hot, a), generate(model, long_prompt, 15, 8, hot, b));
}

// ---- training ---------------------------------------------------------------------------------

TEST(Trainer, LossFallsWellBelowLogVocab) {
  TempDir dir("learn");
  TrainOptions o = tiny_options(write_corpus_slice(dir, 20000), dir.str("run"));
  o.iters = 150;
  o.eval_every = 50;
  std::ostringstream out;
  Trainer trainer(o, out);
  const double log_v = std::log(static_cast<double>(trainer.tokenizer().vocab_size()));
  const TrainResult r = trainer.run();
  EXPECT_EQ(r.step, 150);
  ASSERT_EQ(trainer.log().size(), 4u);  // steps 0, 50, 100, 150
  EXPECT_NEAR(trainer.log().front().val_loss, log_v, 0.3);  // untrained: about uniform
  EXPECT_LT(r.last_eval.val_loss, log_v - 1.0) << "ln V = " << log_v;
  EXPECT_LT(r.last_eval.train_loss, log_v - 1.0);
  for (const char* f : {"model.safetensors", "best.safetensors", "config.json", "log.csv",
                        "loss.svg", "train_state.json", "train_state.safetensors"})
    EXPECT_TRUE(fs::exists(dir.path / "run" / f)) << f;
  const std::string csv = read_file(dir.str("run/log.csv"));
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "step,lr,train_loss,val_loss,tokens_per_s,elapsed_s");
  EXPECT_NE(out.str().find("---- sample"), std::string::npos);
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
  { Trainer t(first, sink); t.run(); }
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
      for (int commas = 0; commas < 4 && cut != std::string::npos; ++commas) cut = line.find(',', cut + 1);
      out += line.substr(0, cut) + "\n";
    }
    return out;
  };
  EXPECT_EQ(loss_columns(read_file(dir.str("one/log.csv"))), loss_columns(read_file(dir.str("two/log.csv"))));
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
