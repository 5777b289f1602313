// The interpretability record of each save (train/interp_recorder.cpp): it changes no weight, it
// is part of the save (manifest), its history runs over the saves and a resume, and its numbers
// are the library's (interp/record.hpp) on the saved model.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "checkpoint/atomic_file.hpp"
#include "checkpoint/manifest.hpp"
#include "checkpoint/run_dir.hpp"
#include "data/text.hpp"
#include "train/trainer.hpp"

#include "interp/record.hpp"

#include "fixtures.hpp"
#include "test_paths.hpp"

using namespace glass;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) {
    path = fs::temp_directory_path() /
           ("glass_trainer_interp_test_" + std::to_string(::getpid()) + "_" + name);
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string str(const std::string& child = "") const { return (path / child).string(); }
};

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
  o.iters = 30;
  o.model = glass_test::small_config(0, 32);
  return o;
}

nlohmann::json read_json_file(const std::string& path) {
  return nlohmann::json::parse(read_file(path));
}

}  // namespace

TEST(TrainerInterp, RecordingChangesNoWeightNoLossNoSample) {
  TempDir dir("same");
  const std::string data = write_corpus_slice(dir, 8000);
  TrainOptions on = tiny_options(data, dir.str("on"));
  TrainOptions off = tiny_options(data, dir.str("off"));
  off.interp_record = false;
  std::ostringstream out_on, out_off;
  Trainer a(on, out_on);
  a.run();
  Trainer b(off, out_off);
  b.run();
  const auto pa = a.model().named_parameters();
  const auto pb = b.model().named_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i)
    for (std::size_t j = 0; j < pa[i].second.size(); ++j)
      ASSERT_EQ(pa[i].second.value().data()[j], pb[i].second.value().data()[j]) << pa[i].first;
  ASSERT_EQ(a.log().size(), b.log().size());
  for (std::size_t i = 0; i < a.log().size(); ++i) {
    EXPECT_EQ(a.log()[i].train_loss, b.log()[i].train_loss);
    EXPECT_EQ(a.log()[i].val_loss, b.log()[i].val_loss);
  }
  for (std::size_t i = 0; i < a.steps().size(); ++i)
    EXPECT_EQ(a.steps()[i].loss, b.steps()[i].loss);
  // The samples printed at each evaluation come from the run's sampling generator: the same
  // text in both runs means the recording did not draw from it.
  auto samples = [](const std::string& text) {
    std::istringstream in(text);
    std::string line, kept;
    while (std::getline(in, line))
      if (line.rfind("step ", 0) != 0 && line.find(" s") == std::string::npos) kept += line + "\n";
    return kept;
  };
  EXPECT_EQ(samples(out_on.str()), samples(out_off.str()));
  // The optimizer moments too (train_state.safetensors holds them).
  EXPECT_TRUE(fs::exists(dir.str("on/current/interp.json")));
  EXPECT_FALSE(fs::exists(dir.str("off/current/interp.json")));
  EXPECT_FALSE(fs::exists(dir.str("off/current/interp_history.json")));
}

TEST(TrainerInterp, TheRecordIsPartOfTheSaveAndEqualsTheLibrary) {
  TempDir dir("save");
  const std::string data = write_corpus_slice(dir, 8000);
  TrainOptions o = tiny_options(data, dir.str("run"));
  std::ostringstream sink;
  Trainer t(o, sink);
  t.run();
  const std::string save = checkpoint_files_dir(dir.str("run"));
  const Manifest manifest = read_manifest(save);
  ASSERT_TRUE(manifest.present);
  EXPECT_EQ(manifest.files.count(kInterpFile), 1u);
  EXPECT_EQ(manifest.files.count(kInterpHistoryFile), 1u);
  EXPECT_NO_THROW(verify_save(save));

  const InterpRecord saved = parse_interp_record(read_file(save + "/" + kInterpFile));
  EXPECT_EQ(saved.step, 30);
  EXPECT_EQ(saved.probe.source, "validation");
  EXPECT_EQ(saved.probe.tokens, 256u);  // 16 windows of --context 16
  EXPECT_EQ(saved.probe.period, 8u);    // 32 does not fit a window of 16: 16 / 2
  EXPECT_EQ(saved.probe.seed, 1234u);
  EXPECT_GT(saved.seconds, 0);
  // The same measurement by the library on the trained model and the validation split.
  const InterpProbe probe =
      make_probe(t.interp_probe_ids(), o.context, t.model().config(), ProbeSpec{});
  const InterpRecord again = record_interp(t.model(), probe, 30);
  EXPECT_NEAR(saved.probe_loss, again.probe_loss, 1e-6);
  for (std::size_t L = 0; L < saved.n_layers; ++L)
    for (std::size_t h = 0; h < saved.n_heads; ++h) {
      EXPECT_NEAR(saved.previous_token(L, h), again.previous_token(L, h), 1e-6);
      EXPECT_NEAR(saved.induction(L, h), again.induction(L, h), 1e-6);
      EXPECT_NEAR(saved.first_position(L, h), again.first_position(L, h), 1e-6);
      EXPECT_NEAR(saved.ablation_delta_loss(L, h), again.ablation_delta_loss(L, h), 1e-6);
    }
  // Shared between processes (mpirun): each part measures its heads, the rest of its table
  // is 0, and the parts add up to the whole table, bit for bit; an impossible part is refused.
  const InterpRecord part0 = record_interp(t.model(), probe, 30, {0, 3});
  const InterpRecord part1 = record_interp(t.model(), probe, 30, {1, 3});
  const InterpRecord part2 = record_interp(t.model(), probe, 30, {2, 3});
  for (std::size_t L = 0; L < saved.n_layers; ++L)
    for (std::size_t h = 0; h < saved.n_heads; ++h) {
      const InterpRecord* parts[] = {&part0, &part1, &part2};
      const std::size_t owner = (L * saved.n_heads + h) % 3;
      for (std::size_t p = 0; p < 3; ++p)
        if (p != owner) {
          EXPECT_EQ(parts[p]->ablation_delta_loss(L, h), 0.0f);
        }
      EXPECT_EQ(part0.ablation_delta_loss(L, h) + part1.ablation_delta_loss(L, h) +
                    part2.ablation_delta_loss(L, h),
                again.ablation_delta_loss(L, h));
      EXPECT_NE(again.ablation_delta_loss(L, h), 0.0f);
      EXPECT_EQ(part1.previous_token(L, h), again.previous_token(L, h));
    }
  EXPECT_EQ(part2.probe_loss, again.probe_loss);
  EXPECT_THROW(record_interp(t.model(), probe, 30, {3, 3}), std::invalid_argument);
  EXPECT_THROW(record_interp(t.model(), probe, 30, {0, 0}), std::invalid_argument);

  // The probe loss is the model's loss on those windows (nats per token): not a constant.
  EXPECT_LT(saved.probe_loss, std::log(static_cast<double>(t.vocab_size())));

  // A changed byte is caught by the manifest like in any other file of the save.
  std::string text = read_file(save + "/" + kInterpFile);
  text[text.find("\"step\"") + 1] = 'S';
  write_file_atomic(save + "/" + kInterpFile, text);
  EXPECT_THROW(verify_save(save), CheckpointError);
}

TEST(TrainerInterp, TheHistoryRunsOverEverySaveAndAResume) {
  TempDir dir("history");
  const std::string data = write_corpus_slice(dir, 8000);
  TrainOptions first = tiny_options(data, dir.str("run"));
  first.iters = 20;
  first.decay_iters = 30;
  std::ostringstream sink;
  {
    Trainer t(first, sink);
    t.run();
  }
  TrainOptions second = first;
  second.iters = 30;
  second.resume = true;
  Trainer resumed(second, sink);
  resumed.run();
  const nlohmann::json history =
      read_json_file(checkpoint_files_dir(dir.str("run")) + "/" + kInterpHistoryFile);
  EXPECT_EQ(history["format"], kInterpHistoryFormat);
  ASSERT_EQ(history["records"].size(), 4u);  // steps 0, 10, 20, 30
  for (std::size_t i = 0; i < 4; ++i) {
    const InterpRecord r = parse_interp_record(history["records"][i].dump());
    EXPECT_EQ(r.step, static_cast<long>(10 * i));
  }
  // The last record is the save's own interp.json.
  EXPECT_EQ(history["records"][3],
            read_json_file(checkpoint_files_dir(dir.str("run")) + "/" + kInterpFile));
  // The probe is the same at every save: the untrained model at step 0 and the trained one
  // at step 30 differ in their loss on it.
  EXPECT_EQ(history["records"][0]["probe"], history["records"][3]["probe"]);
  EXPECT_GT(history["records"][0]["probe_loss"].get<double>(),
            history["records"][3]["probe_loss"].get<double>());
}

TEST(TrainerInterp, ParseRefusesABadRecord) {
  EXPECT_THROW(parse_interp_record("not json"), std::invalid_argument);
  EXPECT_THROW(parse_interp_record(R"({"format": "other"})"), std::invalid_argument);
  InterpRecord r;
  r.step = 5;
  r.n_layers = 1;
  r.n_heads = 2;
  r.previous_token = r.induction = r.first_position = r.ablation_delta_loss =
      Array(xt::zeros<Scalar>({1, 2}));
  r.previous_token(0, 1) = Scalar(0.75);
  const std::string good = interp_record_json(r);
  const InterpRecord back = parse_interp_record(good);
  EXPECT_EQ(back.step, 5);
  EXPECT_EQ(back.previous_token(0, 1), Scalar(0.75));
  nlohmann::json doc = nlohmann::json::parse(good);
  doc["induction"] = {{0.1}};  // one head where the model has two
  EXPECT_THROW(parse_interp_record(doc.dump()), std::invalid_argument);
}
