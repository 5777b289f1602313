// `glass serve` on a run whose older saves were pruned: /api/evals holds the look at the probe of
// every save, read from the current save's probe_history.json (inspect/probe_history.hpp), then
// the server's own look at the save it loaded, which equals the recorded one. A history of
// another run (resealed into the save) is never shown: the page is told why.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "checkpoint/atomic_file.hpp"
#include "checkpoint/manifest.hpp"
#include "checkpoint/run_dir.hpp"
#include "data/text.hpp"
#include "inspect/probe_history.hpp"
#include "serve/server.hpp"
#include "train/trainer.hpp"

#include "fixtures.hpp"
#include "test_paths.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

struct Runs {
  fs::path dir = fs::temp_directory_path() / ("glass_probe_serve_" + std::to_string(::getpid()));
  Runs() {
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::u32string text =
        glass::load_text(glass_test::source_dir("/data/corpora/domcasmurro.txt"));
    std::ofstream(dir / "text.txt", std::ios::binary) << "\n\n"
                                                      << glass::u32_to_utf8(text.substr(0, 6000));
  }
  ~Runs() { fs::remove_all(dir); }
  /// A run of `iters` steps, evaluated and saved every 10.
  std::string train(const std::string& name, long iters) const {
    glass::TrainOptions o;
    o.data_path = (dir / "text.txt").string();
    o.out_dir = (dir / name).string();
    o.batch_size = 8;
    o.context = 16;
    o.eval_every = 10;
    o.eval_iters = 2;
    o.sample_tokens = 0;
    o.iters = iters;
    o.model = glass_test::small_config(0, 32);
    std::ostringstream sink;
    glass::Trainer(o, sink).run();
    return o.out_dir;
  }
};

json evals_of(const std::string& run, std::string* warning) {
  glass::ServeOptions options;
  options.checkpoint = run;
  options.port = 0;
  options.warn = [warning](const std::string& w) { *warning = w; };
  glass::Server server(options);
  const int port = server.start();
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(30, 0);
  const auto r = client.Get("/api/evals");
  EXPECT_TRUE(r);
  return r ? json::parse(r->body) : json();
}

}  // namespace

TEST(ServeProbeHistory, APrunedRunShowsTheProbeAtEverySaveThenItsOwnLook) {
  const Runs runs;
  const std::string run = runs.train("run", 30);
  std::string warning;
  const json j = evals_of(run, &warning);
  EXPECT_EQ(warning, "");
  EXPECT_FALSE(j.contains("history_error"));
  ASSERT_EQ(j["evaluations"].size(), 4u) << j.dump().substr(0, 400);
  const std::string save = glass::checkpoint_files_dir(run);
  const json recorded = json::parse(glass::read_file(save + "/" + glass::kProbeHistoryFile));
  EXPECT_EQ(j["probe"], recorded["probe"]) << "the trainer's probe, the text's first letters";
  for (std::size_t i = 0; i < 4; ++i) {
    const json& e = j["evaluations"][i];
    EXPECT_EQ(e["index"], i);
    EXPECT_EQ(e["step"], 10 * i);
    EXPECT_EQ(e["tokens"], recorded["tokens"]);
    EXPECT_EQ(e["sample"], recorded["records"][i]["sample"]) << i;
    EXPECT_EQ(e["save"].is_null(), i < 3) << "the pruned saves are known from the history";
  }
  // The server's own look at the save it serves is the trainer's record of it, weight for weight.
  const json& live = j["evaluations"][3];
  const json& rec = recorded["records"][3]["attention"];
  for (std::size_t L = 0; L < rec.size(); ++L)
    for (std::size_t h = 0; h < rec[L].size(); ++h)
      for (std::size_t i = 0; i < rec[L][h].size(); ++i)
        for (std::size_t k = 0; k <= i; ++k)
          EXPECT_EQ(live["attention"][L][h][i][k].get<double>(),
                    rec[L][h][i][k].get<int>() / 1000.0);
}

TEST(ServeProbeHistory, AnotherRunsHistoryIsNeverShownAndThePageIsToldWhy) {
  const Runs runs;
  const std::string mine = runs.train("mine", 30);
  const std::string theirs = runs.train("theirs", 20);
  const std::string save = glass::checkpoint_files_dir(mine);
  glass::write_file_atomic(
      save + "/" + glass::kProbeHistoryFile,
      glass::read_file(glass::checkpoint_files_dir(theirs) + "/" + glass::kProbeHistoryFile));
  const glass::Manifest m = glass::read_manifest(save);
  glass::write_manifest(save, m.run_id, m.step);  // resealed: only the run id gives it away
  std::string warning;
  const json j = evals_of(mine, &warning);
  ASSERT_EQ(j["evaluations"].size(), 1u) << "the served save's own look alone";
  EXPECT_EQ(j["evaluations"][0]["step"], 30);
  EXPECT_NE(j.value("history_error", std::string()).find("records the run"), std::string::npos)
      << j.value("history_error", std::string());
  EXPECT_NE(warning.find("records the run"), std::string::npos) << warning;
}
