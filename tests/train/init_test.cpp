// The zero init of the output projections (train/init.hpp): the blocks' W_O and down
// projections are zero at step 0 while every other weight keeps its draw, the run records the
// choice, and the model still learns.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "data/text.hpp"
#include "train/init.hpp"
#include "train/trainer.hpp"

#include "fixtures.hpp"
#include "test_paths.hpp"

using namespace glass;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("glass_init_" + std::to_string(::getpid()));
  TempDir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

TrainOptions tiny_options(const TempDir& dir, const std::string& out) {
  const std::u32string text = load_text(glass_test::source_dir("/data/corpora/domcasmurro.txt"));
  const std::string data = (dir.path / "text.txt").string();
  std::ofstream(data, std::ios::binary) << u32_to_utf8(text.substr(0, 8000));
  TrainOptions o;
  o.data_path = data;
  o.out_dir = (dir.path / out).string();
  o.batch_size = 4;
  o.context = 16;
  o.iters = 60;
  o.lr = 3e-3;
  o.warmup = 5;
  o.eval_every = 60;
  o.eval_iters = 4;
  o.interp_record = false;
  o.sample_tokens = 0;
  o.model = glass_test::small_config(0, 16);
  return o;
}

bool all_zero(const Tensor& t) {
  return std::all_of(t.value().begin(), t.value().end(), [](Scalar x) { return x == 0; });
}

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

}  // namespace

TEST(ZeroInit, TheOutputProjectionsStartAtZeroAndTheModelStillLearns) {
  TempDir dir;
  std::ostringstream sink;
  TrainOptions plain = tiny_options(dir, "plain");
  TrainOptions zero = tiny_options(dir, "zero");
  zero.zero_init_out = true;
  Trainer usual(plain, sink);
  Trainer t(zero, sink);
  const auto before = t.model().named_parameters();
  const auto drawn = usual.model().named_parameters();
  ASSERT_EQ(before.size(), drawn.size());
  long zeroed = 0;
  for (std::size_t i = 0; i < before.size(); ++i) {
    const std::string& name = before[i].first;
    const bool projection = name.find("attention.wo.") != std::string::npos ||
                            name.find("feed_forward.w2.") != std::string::npos;
    if (projection) {
      EXPECT_TRUE(all_zero(before[i].second)) << name;
      EXPECT_FALSE(all_zero(drawn[i].second)) << name;
      ++zeroed;
    } else {  // the other weights keep the draws of the same seed
      EXPECT_TRUE(std::equal(before[i].second.value().begin(), before[i].second.value().end(),
                             drawn[i].second.value().begin()))
          << name;
    }
  }
  EXPECT_EQ(zeroed, 2 * static_cast<long>(t.model().layers.size()));

  const TrainResult r = t.run();
  ASSERT_EQ(r.step, 60);
  ASSERT_GE(t.log().size(), 2u);
  EXPECT_LT(t.log().back().val_loss, t.log().front().val_loss - 0.5) << sink.str();
  for (const auto& [name, w] : t.model().named_parameters()) {  // the projections learnt
    const bool projection = name.find(".attention.wo.") != std::string::npos ||
                            name.find(".feed_forward.w2.") != std::string::npos;
    if (projection) {
      EXPECT_FALSE(all_zero(w)) << name;
    }
  }
  // Recorded: in config.json's training block and in the recipe of train_state.json.
  const fs::path out = zero.out_dir;
  EXPECT_EQ(read_json(out / "config.json").at("training").value("zero_init_out", false), true);
  EXPECT_EQ(read_json(out / "train_state.json").at("recipe").value("zero_init_out", false), true);
  usual.run();  // a run without it writes nothing of it
  EXPECT_FALSE(
      read_json(fs::path(plain.out_dir) / "config.json").at("training").contains("zero_init_out"));
  EXPECT_FALSE(read_json(fs::path(plain.out_dir) / "train_state.json")
                   .at("recipe")
                   .contains("zero_init_out"));
}

TEST(ZeroInit, ZeroesEveryBlocksProjectionsOnly) {
  Decoder model(glass_test::small_config(10, 16), 7);
  zero_output_projections(model);
  for (const auto& [name, tensor] : model.named_parameters()) {
    const bool projection = name.find("attention.wo.") != std::string::npos ||
                            name.find("feed_forward.w2.") != std::string::npos;
    EXPECT_EQ(all_zero(tensor), projection) << name;
  }
}
