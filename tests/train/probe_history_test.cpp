// The probe's attention at every save (train/probe_recorder.cpp, inspect/probe_history.hpp): a
// pruned run's last save holds every evaluation's look, a resume continues it without a
// duplicate (the same file as a run never stopped), and a history that is another run's or
// damaged is refused, never read as this save's.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "checkpoint/atomic_file.hpp"
#include "checkpoint/checkpoint.hpp"
#include "checkpoint/manifest.hpp"
#include "checkpoint/run_dir.hpp"
#include "data/text.hpp"
#include "inspect/probe_history.hpp"
#include "train/trainer.hpp"

#include "fixtures.hpp"
#include "test_paths.hpp"

using namespace glass;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) {
    path = fs::temp_directory_path() /
           ("glass_probe_history_test_" + std::to_string(::getpid()) + "_" + name);
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string str(const std::string& child = "") const { return (path / child).string(); }
};

/// Blank lines, then a slice of Dom Casmurro: the probe must start at its first letter.
std::string write_corpus(const TempDir& dir) {
  const std::u32string text = load_text(glass_test::source_dir("/data/corpora/domcasmurro.txt"));
  const std::string path = dir.str("text.txt");
  std::ofstream(path, std::ios::binary) << "\n\n   \n\t\n" << u32_to_utf8(text.substr(0, 8000));
  return path;
}

TrainOptions tiny_options(const std::string& data, const std::string& out, long iters) {
  TrainOptions o;
  o.data_path = data;
  o.out_dir = out;
  o.batch_size = 8;
  o.context = 16;
  o.lr = 3e-3;
  o.warmup = 10;
  o.eval_every = 10;
  o.eval_iters = 2;
  o.sample_tokens = 10;
  o.iters = iters;
  o.decay_iters = 30;  // one schedule, whether the run stops at 20 or 30
  o.model = glass_test::small_config(0, 32);
  return o;
}

std::size_t step_dirs(const std::string& run) {
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator(run))
    if (e.path().filename().string().rfind("step-", 0) == 0) ++n;
  return n;
}

}  // namespace

TEST(ProbeHistory, APrunedRunKeepsEveryEvaluationInItsLastSave) {
  TempDir dir("pruned");
  const std::string data = write_corpus(dir);
  std::ostringstream sink;
  Trainer t(tiny_options(data, dir.str("run"), 30), sink);
  t.run();
  EXPECT_EQ(step_dirs(dir.str("run")), 1u) << "the older saves were pruned";
  const std::string save = checkpoint_files_dir(dir.str("run"));
  EXPECT_EQ(read_manifest(save).files.count(kProbeHistoryFile), 1u) << "the manifest covers it";
  const std::optional<ProbeHistory> h = read_probe_history(save, t.model().config());
  ASSERT_TRUE(h);
  ASSERT_EQ(h->records.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(h->records[i].step, static_cast<long>(10 * i));
    EXPECT_DOUBLE_EQ(h->records[i].val_loss, t.log()[i].val_loss);
    EXPECT_DOUBLE_EQ(h->records[i].train_loss, t.log()[i].train_loss);
  }
  // The probe: the text's first non-blank characters (default_probe, as glass serve picks it).
  const std::u32string text = load_text(glass_test::source_dir("/data/corpora/domcasmurro.txt"));
  EXPECT_EQ(h->probe.probe, u32_to_utf8(text.substr(0, 16)));
  EXPECT_EQ(h->probe.tokens.size(), 16u);
  // The last record is the look of the trained model, as glass serve takes it.
  const ProbeRecord again = look_at_probe(t.model(), t.tokenizer(), h->probe, 16, 30);
  EXPECT_EQ(again.attention, h->records.back().attention);
  EXPECT_EQ(again.sample, h->records.back().sample);
  // Each row of a pattern sums to one, to the thousandths' rounding.
  for (const auto& heads : h->records.back().attention)
    for (const auto& rows : heads)
      for (const auto& row : rows) {
        int sum = 0;
        for (int w : row) sum += w;
        EXPECT_NEAR(sum, 1000, 20);
      }
  // The interpretability record's probe starts at the first token that is not blank either.
  const std::vector<std::int32_t> probe = t.interp_probe_ids();
  ASSERT_FALSE(probe.empty());
  EXPECT_EQ(blank_prefix_tokens(t.tokenizer(), probe), 0u);
}

TEST(ProbeHistory, AResumeContinuesItWithoutDuplicatesAsARunNeverStopped) {
  TempDir dir("resume");
  const std::string data = write_corpus(dir);
  std::ostringstream sink;
  {
    Trainer straight(tiny_options(data, dir.str("straight"), 30), sink);
    straight.run();
  }
  {
    Trainer first(tiny_options(data, dir.str("resumed"), 20), sink);
    first.run();
  }
  TrainOptions o = tiny_options(data, dir.str("resumed"), 30);
  o.resume = true;
  Trainer second(o, sink);
  second.run();
  const std::string a = checkpoint_files_dir(dir.str("straight"));
  const std::string b = checkpoint_files_dir(dir.str("resumed"));
  // Bit-exact resume: the same weights, so the same looks; the run id differs alone.
  EXPECT_EQ(read_file(a + "/model.safetensors").size(), read_file(b + "/model.safetensors").size());
  const ProbeHistory ha = *read_probe_history(a, second.model().config());
  const ProbeHistory hb = *read_probe_history(b, second.model().config());
  ASSERT_EQ(hb.records.size(), 4u) << "steps 0, 10, 20 and 30, once each";
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(hb.records[i].step, static_cast<long>(10 * i));
    EXPECT_EQ(hb.records[i].attention, ha.records[i].attention) << i;
    EXPECT_EQ(hb.records[i].sample, ha.records[i].sample) << i;
    EXPECT_DOUBLE_EQ(hb.records[i].val_loss, ha.records[i].val_loss) << i;
  }
}

TEST(ProbeHistory, AnotherRunsOrADamagedHistoryIsRefused) {
  TempDir dir("foreign");
  const std::string data = write_corpus(dir);
  std::ostringstream sink;
  Trainer mine(tiny_options(data, dir.str("mine"), 20), sink);
  mine.run();
  {
    Trainer theirs(tiny_options(data, dir.str("theirs"), 10), sink);
    theirs.run();
  }
  const std::string save = checkpoint_files_dir(dir.str("mine"));
  const std::string file = save + "/" + kProbeHistoryFile;
  const std::string original = read_file(file);
  const ModelConfig& config = mine.model().config();
  // Another run's history copied in and the save resealed: its run id gives it away.
  write_file_atomic(file,
                    read_file(checkpoint_files_dir(dir.str("theirs")) + "/" + kProbeHistoryFile));
  const Manifest m = read_manifest(save);
  write_manifest(save, m.run_id, m.step);
  try {
    read_probe_history(save, config);
    ADD_FAILURE() << "another run's history was read";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("records the run"), std::string::npos) << e.what();
  }
  // A byte changed after the save: the manifest's checksum refuses it.
  std::string damaged = original;
  damaged[damaged.find("\"step\":10") + 8] = '9';
  write_file_atomic(file, original);
  write_manifest(save, m.run_id, m.step);
  EXPECT_NO_THROW(read_probe_history(save, config));
  write_file_atomic(file, damaged);
  EXPECT_THROW(read_probe_history(save, config), CheckpointError);
  // Resealed impossible values: each refused by the reader, naming what is wrong.
  ProbeHistoryCheck check{m.run_id, m.step, config};
  auto refused = [&](const std::function<void(nlohmann::json&)>& edit, const std::string& says) {
    nlohmann::json j = nlohmann::json::parse(original);
    edit(j);
    try {
      parse_probe_history(j.dump(), check);
      ADD_FAILURE() << "accepted: " << says;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  refused([](auto& j) { j["records"][1]["attention"][0][0][1][0] = 1001; }, "not 0..1000");
  refused([](auto& j) { j["records"][1]["step"] = 1000; }, "after its save's step");
  refused([](auto& j) { j["records"][1]["step"] = 0; }, "steps must increase");
  refused([](auto& j) { j["n_heads"] = 1000; }, "n_heads");
  refused([](auto& j) { j["records"][0]["attention"][0].erase(0); }, "must hold");
  refused([](auto& j) { j["tokens"][0] = 100000; }, "vocabulary");
  refused([](auto& j) { j["records"][0]["val_loss"] = 1e308; }, "val_loss");
}

TEST(ProbeHistory, ALongRunIsThinnedKeepingItsFirstAndLastRecords) {
  ProbeHistory h;
  for (long step = 0; step <= 500; ++step) {
    ProbeRecord r;
    r.step = step;
    r.attention = {{{{1000}}}};
    append_probe_record(h, r);
  }
  EXPECT_LE(h.records.size(), kMaxProbeRecords);
  EXPECT_GE(h.records.size(), kMaxProbeRecords / 2);
  EXPECT_EQ(h.records.front().step, 0);
  EXPECT_EQ(h.records.back().step, 500);
  // A record of a step already held (a resume) replaces the later ones.
  ProbeRecord again;
  again.step = h.records[3].step;
  again.attention = {{{{1000}}}};
  append_probe_record(h, again);
  EXPECT_EQ(h.records.size(), 4u);
}
