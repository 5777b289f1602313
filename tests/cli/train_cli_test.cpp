// `glass train`, `glass sample` and `glass eval` through the real binary: a tiny end-to-end run,
// exact resume through the files, Ctrl-C, and the bad inputs of the README (each: a clear
// message on stderr, a non-zero exit code, nothing half-written, a good checkpoint left intact).

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <regex>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"
#include "data/text.hpp"
#include "test_util.hpp"
#include "checkpoint/safetensors.hpp"
#include "test_paths.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

using glass_test::CliRun;
using glass_test::q;
using glass_test::read_file;
using glass_test::write_file;

class TrainCli : public ::testing::Test {
 protected:
  static fs::path dir_;
  static fs::path text_;  // 6000 characters of Dom Casmurro
  static fs::path ckpt_;  // trained once for the whole suite
  static CliRun first_run_;

  /// The tiny model every test trains: seconds, not minutes.
  static std::string tiny() { return glass_test::tiny(); }

  /// Runs `glass <args>` with stdin closed, capturing stdout and stderr.
  static CliRun glass(const std::string& args) { return glass_test::run_glass(args, dir_); }

  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("glass-train-cli-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    text_ = dir_ / "text.txt";
    write_file(text_, glass_test::corpus_start(6000));
    ckpt_ = dir_ / "ckpt";
    first_run_ = glass("train --data " + q(text_.string()) + " --out " + q(ckpt_.string()) +
                       " --iters 30 --eval-every 15" + tiny());
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  /// Expects failure: non-zero exit, nothing on stdout that claims success, `phrase` on stderr.
  static void expect_error(const CliRun& r, const std::string& phrase) {
    EXPECT_NE(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.err.find(phrase), std::string::npos) << "stderr was: " << r.err;
    EXPECT_EQ(r.out.find("checkpoint:"), std::string::npos);
  }
};

fs::path TrainCli::dir_, TrainCli::text_, TrainCli::ckpt_;
CliRun TrainCli::first_run_;

}  // namespace

// ---- the happy path ---------------------------------------------------------------------------

TEST_F(TrainCli, TrainWritesTheCheckpointAndSaysHowToSample) {
  ASSERT_EQ(first_run_.exit_code, 0) << first_run_.out << first_run_.err;
  for (const char* f : {"model.safetensors", "best.safetensors", "config.json", "log.csv",
                        "loss.html", "train_state.json", "train_state.safetensors"})
    EXPECT_TRUE(fs::exists(ckpt_ / f)) << f;
  EXPECT_NE(first_run_.out.find("sample --checkpoint " + ckpt_.string()), std::string::npos)
      << first_run_.out;
  EXPECT_NE(first_run_.out.find("---- sample"), std::string::npos);
  // Not a terminal: plain progress lines, no carriage returns.
  EXPECT_EQ(first_run_.out.find('\r'), std::string::npos);
  EXPECT_NE(first_run_.out.find("tok/s"), std::string::npos);
  EXPECT_NE(first_run_.out.find("ETA"), std::string::npos);
  const std::string csv = read_file(ckpt_ / "log.csv");
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "step,lr,train_loss,val_loss,tokens_per_s,elapsed_s");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 4);  // header + steps 0, 15, 30
  // The loss page carries the three logged steps (its chart is checked in InspectBrowser.*).
  EXPECT_NE(read_file(ckpt_ / "loss.html").find("\"step\":[0.0,15.0,30.0]"), std::string::npos);
}

TEST_F(TrainCli, SampleCachedAndUncachedAgreeAtTemperatureZeroAndSeedsReproduce) {
  const std::string base =
      "sample --checkpoint " + q(ckpt_.string()) + " --prompt 'Capitu ' --tokens 40";
  // 7 + 40 characters run past the training context (16): the exact window mode recomputes the
  // window as --no-kv-cache does; the rolling one (the default) keeps its cache and is
  // reproducible; both flags at once are refused.
  const CliRun cached = glass(base + " --temperature 0 --window-mode exact");
  const CliRun uncached = glass(base + " --temperature 0 --no-kv-cache");
  ASSERT_EQ(cached.exit_code, 0) << cached.err;
  ASSERT_EQ(uncached.exit_code, 0) << uncached.err;
  EXPECT_EQ(cached.out, uncached.out);
  EXPECT_EQ(cached.out.rfind("Capitu ", 0), 0u);  // the prompt comes first
  const CliRun rolling = glass(base + " --temperature 0");
  ASSERT_EQ(rolling.exit_code, 0) << rolling.err;
  EXPECT_EQ(rolling.out, glass(base + " --temperature 0 --window-mode rolling").out);
  // Within the window (the prompt's 7 characters and the next 10, predicted from at most 16)
  // both modes compute the same thing.
  const std::u32string rolled = glass::utf8_to_u32(rolling.out),
                       exact = glass::utf8_to_u32(cached.out);
  ASSERT_GE(exact.size(), 17u);
  EXPECT_EQ(rolled.substr(0, 17), exact.substr(0, 17));
  EXPECT_NE(glass(base + " --no-kv-cache --window-mode exact").exit_code, 0);
  const CliRun a = glass(base + " --temperature 1 --top-k 5 --top-p 0.9 --seed 7");
  const CliRun b = glass(base + " --temperature 1 --top-k 5 --top-p 0.9 --seed 7");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  // A prompt longer than the training context (16) is cropped, with a note.
  const CliRun long_prompt =
      glass("sample --checkpoint " + q(ckpt_.string()) +
            " --prompt 'a a a a a a a a a a a a a a a a a a a a' --tokens 5");
  EXPECT_EQ(long_prompt.exit_code, 0) << long_prompt.err;
  EXPECT_NE(long_prompt.err.find("last 16"), std::string::npos) << long_prompt.err;
}

TEST_F(TrainCli, EvalPrintsTheMeanLossOverTheFile) {
  const CliRun r = glass("eval --checkpoint " + q(ckpt_.string()) + " --data " + q(text_.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("loss ", 0), 0u) << r.out;
  const double loss = std::stod(r.out.substr(5));
  EXPECT_GT(loss, 0.5);
  EXPECT_LT(loss, 4.5);  // below ln V of an untrained model of ~60 characters would be ~4.1
}

TEST_F(TrainCli, ResumeThroughTheBinaryMatchesOneRun) {
  const std::string data = " --data " + q(text_.string()) + tiny() + " --eval-every 10";
  const fs::path one = dir_ / "one", two = dir_ / "two";
  // Two threads each (the data-parallel step; the bits depend on the thread count, not on the
  // machine's cores).
  const std::string threads = " --threads 2";
  ASSERT_EQ(
      glass("train --out " + q(one.string()) + " --iters 40 --decay-iters 40" + threads + data)
          .exit_code,
      0);
  ASSERT_EQ(
      glass("train --out " + q(two.string()) + " --iters 20 --decay-iters 40" + threads + data)
          .exit_code,
      0);
  const CliRun resumed = glass("train --out " + q(two.string()) +
                               " --iters 40 --decay-iters 40 --resume" + threads + data);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  auto losses = [](const std::string& csv) {  // columns step,lr,train_loss,val_loss
    std::istringstream in(csv);
    std::string line, out;
    while (std::getline(in, line)) {
      std::size_t cut = 0;
      for (int i = 0; i < 4; ++i) cut = line.find(',', cut + 1);
      out += line.substr(0, cut) + "\n";
    }
    return out;
  };
  EXPECT_EQ(losses(read_file(one / "log.csv")), losses(read_file(two / "log.csv")));
  // Bit for bit: the same tensors and metadata, except the run id (each run has its own).
  glass::SafetensorsContents a = glass::load_safetensors((one / "model.safetensors").string());
  glass::SafetensorsContents b = glass::load_safetensors((two / "model.safetensors").string());
  EXPECT_NE(a.metadata.at("run_id"), b.metadata.at("run_id"));
  a.metadata.erase("run_id");
  b.metadata.erase("run_id");
  EXPECT_EQ(a.metadata, b.metadata);
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (std::size_t i = 0; i < a.tensors.size(); ++i) {
    EXPECT_EQ(a.tensors[i].name, b.tensors[i].name);
    EXPECT_EQ(a.tensors[i].data, b.tensors[i].data) << a.tensors[i].name;
  }
}

TEST_F(TrainCli, CtrlCSavesACheckpointAndExitsWith130) {
  const fs::path out = dir_ / "interrupted";
  // Start a long run, wait until its first evaluation wrote log.csv (the handler is installed
  // by then), send SIGINT, and report the exit code.
  const std::string script =
      std::string(glass_test::binary_dir("/glass train --data ")) + q(text_.string()) + " --out " +
      q(out.string()) + " --iters 100000 --eval-every 100000" + tiny() +
      " >/dev/null 2>&1 & pid=$!; " + "for i in $(seq 1 600); do [ -f " +
      q((out / "log.csv").string()) + " ] && break; sleep 0.05; done; " +
      "sleep 0.2; kill -INT $pid; wait $pid; echo $? > " + q((dir_ / "code.txt").string());
  ASSERT_EQ(std::system(("bash -c " + q(script)).c_str()), 0);
  EXPECT_EQ(read_file(dir_ / "code.txt"), "130\n");
  EXPECT_TRUE(fs::exists(out / "train_state.json"));
  const CliRun sample = glass("sample --checkpoint " + q(out.string()) + " --tokens 5");
  EXPECT_EQ(sample.exit_code, 0) << sample.err;
}

TEST_F(TrainCli, WithoutDataItUsesGlassDataAndWritesToRunsCorpusName) {
  // GLASS_DATA may name the corpus file (or a directory holding domcasmurro.txt); --out defaults
  // to runs/<corpus name> under the current directory.
  const fs::path cwd = dir_ / "cwd";
  fs::create_directories(cwd);
  const std::string cmd = "cd " + q(cwd.string()) + " && GLASS_DATA=" + q(text_.string()) + " " +
                          glass_test::binary_dir("/glass train --iters 2 --eval-every 1") + tiny() +
                          " >" + q((dir_ / "default_out.txt").string()) + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << read_file(dir_ / "default_out.txt");
  EXPECT_TRUE(fs::exists(cwd / "runs" / "text" / "model.safetensors"));
  const std::string out = read_file(dir_ / "default_out.txt");
  EXPECT_NE(out.find("sample --checkpoint runs/text --tokens 300"), std::string::npos) << out;
}

TEST_F(TrainCli, AGlassDataThatNamesNoFileIsAnError) {
  // Falling back to the bundled corpus would train on a text the user did not ask for.
  const fs::path out = dir_ / "glass-data-missing.txt";
  const std::string cmd = "GLASS_DATA=" + q((dir_ / "no-such-corpus.txt").string()) + " " +
                          glass_test::binary_dir("/glass train --iters 2 --out ") +
                          q((dir_ / "never-glass-data").string()) + tiny() + " >" +
                          q(out.string()) + " 2>&1";
  EXPECT_NE(std::system(cmd.c_str()), 0);
  EXPECT_NE(read_file(out).find("GLASS_DATA is set to"), std::string::npos) << read_file(out);
  EXPECT_FALSE(fs::exists(dir_ / "never-glass-data"));
}

// ---- bad input: train -------------------------------------------------------------------------

TEST_F(TrainCli, BadTrainInputsFailClearlyAndWriteNothing) {
  const fs::path out = dir_ / "never";
  const std::string to = " --out " + q(out.string()) + tiny() + " --iters 5";
  write_file(dir_ / "empty.txt", "");
  write_file(dir_ / "binary.txt", std::string("abc\0def", 7));
  write_file(dir_ / "invalid.txt", "ol\xe1 mundo");
  write_file(dir_ / "short.txt", "curto demais");
  write_file(dir_ / "a_file", "x");

  expect_error(glass("train --data " + q((dir_ / "missing.txt").string()) + to), "does not exist");
  expect_error(glass("train --data " + q((dir_ / "empty.txt").string()) + to), "empty");
  expect_error(glass("train --data " + q((dir_ / "binary.txt").string()) + to), "binary");
  expect_error(glass("train --data " + q((dir_ / "invalid.txt").string()) + to), "byte offset 2");
  expect_error(glass("train --data " + q((dir_ / "short.txt").string()) + to),
               "must hold at least");
  const std::string data = " --data " + q(text_.string());
  expect_error(glass("train" + data + to + " --iters 0"),
               "--iters: must be an integer from 1 to 1000000000 (got '0')");
  expect_error(glass("train" + data + to + " --batch-size -2"),
               "--batch-size: must be an integer from 1 to 1000000 (got '-2')");
  expect_error(glass("train" + data + to + " --context 0"),
               "--context: must be a positive integer");
  expect_error(glass("train" + data + to + " --lr abc"),
               "--lr: must be a positive number (got 'abc')");
  expect_error(glass("train" + data + to + " --lr 0"), "--lr: must be a positive number");
  expect_error(glass("train" + data + to + " --iters 1.5"),
               "--iters: must be an integer from 1 to 1000000000 (got '1.5')");
  expect_error(glass("train" + data + to + " --bogus 3"), "--bogus");
  const std::string plain = " --out " + q(out.string()) + " --iters 5";  // default model
  expect_error(glass("train" + data + plain + " --context 300"),
               "longer than the model's context length");
  expect_error(glass("train" + data + plain + " --n-heads 3"),
               "--d-model 128 is not divisible by --n-heads 3");
  expect_error(glass("train" + data + tiny() + " --out " + q((dir_ / "a_file" / "sub").string())),
               "a_file");
  expect_error(glass("train" + data + to + " --resume"), "run without --resume first");
  EXPECT_FALSE(fs::exists(out)) << "a failed run created its output directory";
}

TEST_F(TrainCli, ModelSizesThatDoNotFitAreNamedByTheirFlags) {
  // The rules between two sizes (nn/config.hpp, ModelConfigError) in the command's words: the
  // flags and their values, not the library's struct.
  const fs::path out = dir_ / "never-sizes";
  const std::string run = "train --data " + q(text_.string()) + " --out " + q(out.string()) +
                          " --iters 5 --n-layers 1 --ffn-hidden 32";
  const CliRun heads = glass(run + " --d-model 32 --n-heads 3 --n-kv-heads 1");
  expect_error(heads, "error: --d-model 32 is not divisible by --n-heads 3");
  const CliRun kv = glass(run + " --d-model 32 --n-heads 4 --n-kv-heads 3");
  expect_error(kv, "error: --n-heads 4 is not a multiple of --n-kv-heads 3");
  const CliRun odd = glass(run + " --d-model 12 --n-heads 4 --n-kv-heads 2");
  expect_error(odd, "error: --d-model 12 / --n-heads 4 = 3 coordinates per head (head_dim)");
  for (const CliRun* r : {&heads, &kv, &odd}) {
    EXPECT_EQ(r->exit_code, 1) << r->err;
    EXPECT_EQ(r->err.find("ModelConfig"), std::string::npos) << r->err;
  }
  EXPECT_FALSE(fs::exists(out)) << "a failed run created its output directory";
}

TEST_F(TrainCli, TimeBudgetChoosesTheStepsSaysSoAndRefusesBadDurations) {
  const fs::path out = dir_ / "timed";
  const std::string to = " --data " + q(text_.string()) + " --out " + q(out.string()) + tiny();
  expect_error(glass("train" + to + " --time 0"), "--time: must be longer than 0");
  expect_error(glass("train" + to + " --time=-5m"), "--time: must be longer than 0");
  expect_error(glass("train" + to + " --time 3x"),
               "--time: is not a duration with its unit, e.g. 90s, 5m, 1.5m or 1h (got '3x')");
  expect_error(glass("train" + to + " --time 300"), "--time: has no unit: write 300s");
  expect_error(glass("train" + to + " --time 5s --iters 10"), "use one of them");
  EXPECT_FALSE(fs::exists(out));
  // A run fitted to one second: the line says N, the save records it, and a resume without
  // --iters continues to that N (here already reached: refused, naming it).
  const CliRun r = glass("train" + to + " --time 1s --eval-every 100000 --no-interp-record");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(time budget 1s: ([0-9]+) steps at ~)")))
      << r.out;
  const std::string n = m[1];
  // How to repeat it, in flags: the command's words, not the library's.
  // (--eval-every was given: it stays as it is in the command, not given twice.)
  EXPECT_NE(r.out.find("repeat this run: the same command with --iters " + n +
                       " --optimizer muon --zero-init-out instead of --time"),
            std::string::npos)
      << r.out;
  const json state = json::parse(read_file(out / "train_state.json"));
  EXPECT_EQ(std::to_string(state.at("step").get<long>()), n);
  EXPECT_EQ(std::to_string(state.at("recipe").at("iters").get<long>()), n);
  EXPECT_EQ(state.at("recipe").at("time_budget_s").get<double>(), 1.0);
  // The step count came from the save, not the command line: the message says so, and how to
  // train further. An --iters given that the run has reached is refused as such.
  const CliRun again = glass("train" + to + " --resume");
  expect_error(again, "error: --iters was left out, and the run in " + out.string() +
                          " is already at its last step " + n +
                          " (chosen by --time 1s); pass "
                          "--iters M with M > " +
                          n + " (e.g. --iters " + std::to_string(2 * std::stol(n)) +
                          ") to train further");
  EXPECT_EQ(again.err.find("must be larger"), std::string::npos) << again.err;
  expect_error(glass("train" + to + " --resume --iters " + n),
               "error: --iters " + n + " must be larger than the step of the checkpoint in " +
                   out.string() + ", which is already at step " + n);
  expect_error(glass("train" + to + " --resume --time 1s"),
               "--time chooses the step count of a new run");
}

TEST_F(TrainCli, TimeBudgetTrainsWithTheSpeedrunRecipeUnlessTheOptimizerIsNamed) {
  const std::string data =
      " --data " + q(text_.string()) + tiny() + " --time 1s --eval-every 100000 --no-interp-record";
  // --time alone: Muon, the output projections started at zero, both said and recorded.
  const fs::path fast = dir_ / "speedrun";
  const CliRun r = glass("train --out " + q(fast.string()) + data);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("(--time's speedrun recipe; --optimizer adamw trains with AdamW)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("init: the blocks' output projections (attention W_O, feed-forward w2) "
                       "start at zero"),
            std::string::npos)
      << r.out;
  // The flags said at the end repeat it without --time: the same losses at every evaluation.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      r.out, m,
      std::regex(R"(the same command with (--iters [0-9]+ --optimizer muon --zero-init-out) )"
                 R"(instead of --time)")))
      << r.out;
  const fs::path again = dir_ / "speedrun-again";
  const CliRun repeat = glass("train --out " + q(again.string()) + " --data " + q(text_.string()) +
                              tiny() + " --eval-every 100000 --no-interp-record " + m[1].str());
  ASSERT_EQ(repeat.exit_code, 0) << repeat.err;
  const auto losses = [](const fs::path& log) {  // step, lr, train_loss, val_loss of each row
    std::vector<std::string> rows;
    std::istringstream lines(read_file(log));
    std::string line;
    while (std::getline(lines, line)) {
      std::size_t end = 0;
      for (int field = 0; field < 4 && end != std::string::npos; ++field)
        end = line.find(',', end == 0 ? 0 : end + 1);
      rows.push_back(line.substr(0, end));
    }
    return rows;
  };
  EXPECT_EQ(losses(again / "log.csv"), losses(fast / "log.csv"));
  const json recipe = json::parse(read_file(fast / "train_state.json")).at("recipe");
  EXPECT_EQ(recipe.at("optimizer"), "muon");
  EXPECT_EQ(recipe.at("muon_lr").get<double>(), 0.01);
  EXPECT_EQ(recipe.at("zero_init_out"), true);
  // The command names the optimizer: its own recipe, initialisation included.
  const fs::path named = dir_ / "named";
  const CliRun adamw = glass("train --out " + q(named.string()) + data + " --optimizer adamw");
  ASSERT_EQ(adamw.exit_code, 0) << adamw.err;
  EXPECT_EQ(adamw.out.find("Muon"), std::string::npos) << adamw.out;
  EXPECT_EQ(adamw.out.find("start at zero"), std::string::npos) << adamw.out;
  const json plain = json::parse(read_file(named / "train_state.json")).at("recipe");
  EXPECT_FALSE(plain.contains("optimizer")) << plain.dump();  // AdamW saves record none
  EXPECT_FALSE(plain.contains("zero_init_out")) << plain.dump();
  // --zero-init-out=false keeps Muon and starts the projections at random.
  const fs::path random_init = dir_ / "random-init";
  const CliRun off =
      glass("train --out " + q(random_init.string()) + data + " --zero-init-out=false");
  ASSERT_EQ(off.exit_code, 0) << off.err;
  const json muon_only = json::parse(read_file(random_init / "train_state.json")).at("recipe");
  EXPECT_EQ(muon_only.at("optimizer"), "muon");
  EXPECT_FALSE(muon_only.contains("zero_init_out")) << muon_only.dump();
  // A flag turned off stays off in the command the program suggests (here after a divergence).
  const CliRun diverged = glass(
      "train --out " + q((dir_ / "diverged").string()) + " --data " + q(text_.string()) + tiny() +
      " --iters 200 --eval-every 1000 --no-interp-record --lr 1e9 --zero-init-out=false");
  expect_error(diverged, "NaN");
  EXPECT_NE(diverged.err.find(" --zero-init-out=false "), std::string::npos) << diverged.err;
  // ... and a flag given bare stays bare (a value after it would be an unexpected argument).
  EXPECT_NE(diverged.err.find(" --no-interp-record --d-model 32"), std::string::npos)
      << diverged.err;
}

TEST_F(TrainCli, FailedRunsLeaveAGoodCheckpointIntact) {
  const fs::path copy = dir_ / "intact";
  fs::copy(ckpt_, copy);
  const std::string before = read_file(copy / "model.safetensors");
  const std::string state_before = read_file(copy / "train_state.json");
  const std::string data = " --data " + q(text_.string()) + " --out " + q(copy.string()) + tiny();
  // --resume continues the recorded recipe: another --lr is refused, naming both values.
  const CliRun other_lr =
      glass("train" + data + " --resume --iters 200 --lr 1e9 --eval-every 1000");
  expect_error(other_lr, "--lr 1e+09 (the run was trained with --lr 0.001)");
  // Diverging: a huge learning rate makes the loss NaN within a few steps; training stops. (A
  // checkpoint without a recorded recipe, as written by older versions, takes the flags.)
  json state = json::parse(state_before);
  state.erase("recipe");
  write_file(copy / "train_state.json", state.dump(1) + "\n");  // fs::copy made a flat checkpoint
  const std::string old_state = read_file(copy / "train_state.json");
  const CliRun diverged =
      glass("train" + data + " --resume --iters 200 --lr 1e9 --eval-every 1000");
  expect_error(diverged, "NaN");
  EXPECT_NE(diverged.err.find("last good checkpoint"), std::string::npos);
  EXPECT_EQ(read_file(copy / "train_state.json"), old_state);
  write_file(copy / "train_state.json", state_before);
  // Already past --iters.
  expect_error(glass("train" + data + " --resume --iters 10"), "already at step 30");
  // Another text: refused by its name (config.json records the training text's file name), and
  // leaving out --data does not silently continue on the bundled corpus.
  write_file(dir_ / "other.txt", std::string(2000, 'Z') + "\xe2\x98\x83");
  expect_error(glass("train --data " + q((dir_ / "other.txt").string()) + " --out " +
                     q(copy.string()) + tiny() + " --resume --iters 40"),
               "was trained on a text named '" + text_.filename().string() + "', not on");
  expect_error(glass("train --out " + q(copy.string()) + tiny() + " --resume --iters 40"),
               "(the bundled corpus, used when --data is left out)");
  // A text of the same name whose characters the checkpoint's vocabulary lacks.
  fs::create_directories(dir_ / "elsewhere");
  write_file(dir_ / "elsewhere" / text_.filename(), std::string(2000, 'Z') + "\xe2\x98\x83");
  expect_error(glass("train --data " + q((dir_ / "elsewhere" / text_.filename()).string()) +
                     " --out " + q(copy.string()) + tiny() + " --resume --iters 40"),
               "vocabulary");
  EXPECT_EQ(read_file(copy / "model.safetensors"), before);
  EXPECT_EQ(read_file(copy / "train_state.json"), state_before);
  for (const auto& entry : fs::directory_iterator(copy))  // no temporary files left behind
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << entry.path();
}

TEST_F(TrainCli, ResumeRefusesACheckpointWhoseFilesDisagreeOnTheStepOrTheRun) {
  // Files of another run copied over a checkpoint (by hand: glass train switches all files of a
  // save at once) must be refused instead of resuming from a mix. A flat copy of the
  // checkpoint (the layout of earlier versions) is read the same way.
  const fs::path later = dir_ / "twenty";
  const std::string tiny_data = " --data " + q(text_.string()) + tiny();
  ASSERT_EQ(glass("train --out " + q(later.string()) + " --iters 20 --eval-every 10" + tiny_data)
                .exit_code,
            0);
  for (const char* file : {"model.safetensors", "config.json"}) {
    SCOPED_TRACE(file);
    const fs::path mixed = dir_ / (std::string("mixed-") + file);
    fs::copy(ckpt_, mixed);
    fs::remove(mixed / file);
    fs::copy_file(later / file, mixed / file);
    const std::string state_before = read_file(mixed / "train_state.json");
    const CliRun r = glass("train --out " + q(mixed.string()) + " --iters 40 --resume" + tiny_data);
    expect_error(r, "mixes files of two runs");
    EXPECT_NE(r.err.find(file), std::string::npos) << r.err;
    EXPECT_EQ(read_file(mixed / "train_state.json"), state_before);  // nothing was overwritten
  }
  // Files of two steps of one run: the step recorded in model.safetensors differs from the
  // training state's.
  const fs::path steps = dir_ / "mixed-steps";
  fs::copy(ckpt_, steps);
  glass::SafetensorsContents weights =
      glass::load_safetensors((steps / "model.safetensors").string());
  weights.metadata["step"] = "15";
  fs::remove(steps / "model.safetensors");
  glass::save_safetensors((steps / "model.safetensors").string(), weights.tensors,
                          weights.metadata);
  const CliRun r = glass("train --out " + q(steps.string()) + " --iters 40 --resume" + tiny_data);
  // config.json is checked against the weights before the training state is read.
  expect_error(r, "files of two saves mixed");
  EXPECT_NE(r.err.find("the weights record step 15"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("training.step is 30"), std::string::npos) << r.err;
}

// ---- bad input: sample and eval ---------------------------------------------------------------

TEST_F(TrainCli, BadSampleAndEvalInputsFailClearly) {
  const std::string ck = " --checkpoint " + q(ckpt_.string());
  expect_error(glass("sample --checkpoint " + q((dir_ / "nope").string())), "does not exist");
  expect_error(glass("sample"), "--checkpoint is required");
  expect_error(glass("sample" + ck + " --prompt 'Capitu \xc5\xbe'"), "U+017E");
  expect_error(glass("sample" + ck + " --top-k -1"), "--top-k: must be a non-negative integer");
  expect_error(glass("sample" + ck + " --top-p 0"), "--top-p: must be a number in (0, 1]");
  expect_error(glass("sample" + ck + " --top-p 1.5"), "--top-p");
  expect_error(glass("sample" + ck + " --temperature -0.5"), "--temperature");
  expect_error(glass("sample" + ck + " --tokens 0"),
               "--tokens: must be an integer from 1 to 1000000 (got '0')");
  expect_error(glass("sample" + ck + " --tokens many"), "--tokens");
  const CliRun unknown_ok =
      glass("sample" + ck + " --prompt 'Capitu \xc5\xbe' --allow-unknown --tokens 5");
  EXPECT_EQ(unknown_ok.exit_code, 0) << unknown_ok.err;
  EXPECT_NE(unknown_ok.err.find("warning"), std::string::npos);

  // Corrupt checkpoints: truncated weights, bad JSON, wrong shapes.
  const fs::path bad = dir_ / "bad";
  fs::copy(ckpt_, bad);
  const std::string weights = read_file(ckpt_ / "model.safetensors");
  write_file(bad / "model.safetensors", weights.substr(0, weights.size() - 100));
  expect_error(glass("sample --checkpoint " + q(bad.string())), "model.safetensors");
  expect_error(glass("eval --checkpoint " + q(bad.string()) + " --data " + q(text_.string())),
               "model.safetensors");
  write_file(bad / "model.safetensors", weights);
  write_file(bad / "config.json", "{ not json");
  expect_error(glass("sample --checkpoint " + q(bad.string())), "config.json");
  std::string config = read_file(ckpt_ / "config.json");
  const std::size_t at = config.find("\"d_model\": 32");
  ASSERT_NE(at, std::string::npos) << config;
  config.replace(at, 13, "\"d_model\": 64");
  write_file(bad / "config.json", config);
  expect_error(glass("sample --checkpoint " + q(bad.string())), "shape");

  expect_error(glass("eval" + ck), "--data is required");
  expect_error(glass("eval" + ck + " --data " + q((dir_ / "missing.txt").string())),
               "does not exist");
}
