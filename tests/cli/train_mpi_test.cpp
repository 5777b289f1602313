// `mpirun -np 2 glass train` through the real binary: the same losses and weights as one
// process with the same global batch, rank 0 alone speaks and writes, a batch that does not
// split evenly is refused, --resume crosses process counts, and a rank killed with SIGKILL ends
// the whole job while the last checkpoint stays usable. Skipped when glass was built without MPI.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test_util.hpp"
#include "train/distributed.hpp"
#include "checkpoint/safetensors.hpp"
#include "test_paths.hpp"

namespace fs = std::filesystem;

namespace {

using glass_test::GlassRun;
using glass_test::read_file;
using json = nlohmann::json;
using glass_test::write_file;

std::string q(const std::string& s) { return glass_test::quote(s); }

/// `mpirun -np n ` with what CI needs: more processes than cores (--oversubscribe) and, as
/// root, --allow-run-as-root.
std::string mpirun(int n) {
  return "mpirun -np " + std::to_string(n) + " --oversubscribe" +
         (::geteuid() == 0 ? " --allow-run-as-root" : "") + " ";
}

/// The (step, train_loss, val_loss) rows of a log.csv (columns step,lr,train_loss,val_loss,...).
std::vector<std::vector<double>> loss_rows(const std::string& csv) {
  std::vector<std::vector<double>> rows;
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::vector<double> cells;
    std::istringstream cell_in(line);
    std::string cell;
    while (std::getline(cell_in, cell, ',')) cells.push_back(std::stod(cell));
    rows.push_back({cells.at(0), cells.at(2), cells.at(3)});
  }
  return rows;
}

class TrainMpi : public ::testing::Test {
 protected:
  static fs::path dir_, text_;

  /// A tiny model with a global batch of 4 windows, evaluated every 40 steps, its cosine
  /// ending at step 80.
  static std::string tiny(int batch_size = 4, int eval_every = 40) {
    return " --data " + q(text_.string()) + " --batch-size " + std::to_string(batch_size) +
           " --context 16 --d-model 32 --n-layers 1 --n-heads 2 --n-kv-heads 1 --ffn-hidden 32"
           " --eval-iters 2 --sample-tokens 10 --warmup 5 --decay-iters 80 --threads 1"
           " --eval-every " +
           std::to_string(eval_every);
  }
  static GlassRun glass(const std::string& args, int processes = 1) {
    return glass_test::run_glass(args, dir_, processes > 1 ? mpirun(processes) : "");
  }

  static void SetUpTestSuite() {
    dir_ = glass_test::temp_dir("glass-train-mpi");
    const std::string corpus = read_file(glass_test::source_dir("/data/corpora/domcasmurro.txt"));
    std::size_t cut = 6000;
    while (cut < corpus.size() && (static_cast<unsigned char>(corpus[cut]) & 0xC0) == 0x80) ++cut;
    text_ = dir_ / "text.txt";
    write_file(text_, corpus.substr(0, cut));  // cut on a UTF-8 character boundary
  }
  void SetUp() override {
    if (!glass::Communicator::built_with_mpi()) GTEST_SKIP() << "glass was built without MPI";
  }

  /// Trains `out` to step 80 with `processes` processes (once per suite and directory name).
  static const GlassRun& trained(const std::string& name, int processes) {
    static std::map<std::string, GlassRun> runs;
    auto it = runs.find(name);
    if (it == runs.end())
      it = runs.emplace(name,
                        glass("train --out " + q((dir_ / name).string()) + " --iters 80" + tiny(),
                              processes))
               .first;
    return it->second;
  }

  /// Losses of the two runs' log.csv equal within `tol`; weights within `weight_tol`.
  static void expect_same_run(const fs::path& a, const fs::path& b, double tol, double weight_tol) {
    const auto rows_a = loss_rows(read_file(a / "log.csv")),
               rows_b = loss_rows(read_file(b / "log.csv"));
    ASSERT_EQ(rows_a.size(), 3u);  // steps 0, 40, 80
    ASSERT_EQ(rows_a.size(), rows_b.size());
    for (std::size_t i = 0; i < rows_a.size(); ++i) {
      EXPECT_EQ(rows_a[i][0], rows_b[i][0]);
      EXPECT_NEAR(rows_a[i][1], rows_b[i][1], tol) << "train loss at step " << rows_a[i][0];
      EXPECT_NEAR(rows_a[i][2], rows_b[i][2], tol) << "val loss at step " << rows_a[i][0];
    }
    const auto wa = glass::load_safetensors((a / "model.safetensors").string());
    const auto wb = glass::load_safetensors((b / "model.safetensors").string());
    ASSERT_EQ(wa.tensors.size(), wb.tensors.size());
    for (std::size_t i = 0; i < wa.tensors.size(); ++i) {
      ASSERT_EQ(wa.tensors[i].name, wb.tensors[i].name);
      ASSERT_EQ(wa.tensors[i].data.size(), wb.tensors[i].data.size());
      double max_diff = 0;
      for (std::size_t j = 0; j < wa.tensors[i].data.size(); ++j)
        max_diff = std::max(
            max_diff, static_cast<double>(std::abs(wa.tensors[i].data[j] - wb.tensors[i].data[j])));
      EXPECT_LE(max_diff, weight_tol) << wa.tensors[i].name;
    }
  }
};

fs::path TrainMpi::dir_, TrainMpi::text_;

}  // namespace

TEST_F(TrainMpi, TwoProcessesLearnWhatOneLearnsWithTheSameGlobalBatch) {
  const GlassRun& one = trained("one", 1);
  const GlassRun& two = trained("two", 2);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  ASSERT_EQ(two.exit_code, 0) << two.out << two.err;
  // Float sums in another order: the losses agree within the 2e-3 the design allows (measured:
  // equal to the 6 decimals of log.csv), the weights within 1e-4 (measured: 1.2e-7).
  expect_same_run(dir_ / "one", dir_ / "two", 2e-3, 1e-4);
  // The interpretability record: each process measured the ablations of half of the heads,
  // and the halves were summed into one table, the one process's (up to the weights' 1e-7).
  const json record_one = json::parse(read_file(dir_ / "one" / "current" / "interp.json"));
  const json record_two = json::parse(read_file(dir_ / "two" / "current" / "interp.json"));
  for (const char* kind : {"ablation_delta_loss", "previous_token", "induction"})
    for (std::size_t L = 0; L < record_one[kind].size(); ++L)
      for (std::size_t h = 0; h < record_one[kind][L].size(); ++h) {
        const double a = record_one[kind][L][h], b = record_two[kind][L][h];
        EXPECT_NEAR(a, b, 1e-4) << kind << " " << L << "." << h;
        if (std::string(kind) == "ablation_delta_loss") {
          EXPECT_NE(b, 0.0) << L << "." << h;
        }
      }
  // Rank 0 alone printed: one header, one data-parallel line, one sample per evaluation, one report.
  auto count = [](const std::string& s, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count(two.out, "model: d_model 32"), 1u) << two.out;
  EXPECT_EQ(count(two.out, "data parallel: 2 processes, 2 windows of each batch per process"), 1u)
      << two.out;
  EXPECT_EQ(count(two.out, "---- sample"), 3u) << two.out;
  EXPECT_EQ(count(two.out, "checkpoint: "), 1u) << two.out;
  EXPECT_EQ(one.out.find("data parallel"), std::string::npos);
  // OpenMPI gives each process a pseudo-terminal even though mpirun's output is a file here:
  // the progress line must still come as plain lines, without CR or escape codes.
  EXPECT_EQ(two.out.find('\r'), std::string::npos) << two.out;
  EXPECT_EQ(two.out.find('\x1b'), std::string::npos) << two.out;
  EXPECT_NE(two.out.find("step 40/80 | loss "), std::string::npos) << two.out;
}

TEST_F(TrainMpi, TwoProcessesFineTuneOnAnswersAsOneDoes) {
  // A chat fine-tune's rows count different numbers of answer tokens, so the two processes'
  // halves of a batch do too: weighted by their counted targets they give one process's loss.
  const GlassRun& base = trained("one", 1);
  ASSERT_EQ(base.exit_code, 0) << base.err;
  const std::string chat = read_file(glass_test::source_dir("/data/chat/train.jsonl"));
  std::size_t cut = 0;
  for (int line = 0; line < 40; ++line) cut = chat.find('\n', cut) + 1;
  write_file(dir_ / "chat.jsonl", chat.substr(0, cut));
  auto finetune = [&](const std::string& out, int processes) {
    return glass("finetune --from " + q((dir_ / "one").string()) + " --chat " +
                     q((dir_ / "chat.jsonl").string()) + " --out " + q((dir_ / out).string()) +
                     " --iters 20 --eval-every 10 --batch-size 4 --eval-iters 2 --warmup 2"
                     " --sample-tokens 4 --threads 1",
                 processes);
  };
  const GlassRun one = finetune("chat-one", 1), two = finetune("chat-two", 2);
  ASSERT_EQ(one.exit_code, 0) << one.out << one.err;
  ASSERT_EQ(two.exit_code, 0) << two.out << two.err;
  expect_same_run(dir_ / "chat-one", dir_ / "chat-two", 2e-3, 1e-4);
  // Every step's loss, not only the evaluations' (steps.csv: step, loss, ...).
  auto step_losses = [](const fs::path& csv) {
    std::vector<double> losses;
    std::istringstream in(read_file(csv));
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) losses.push_back(std::stod(line.substr(line.find(',') + 1)));
    return losses;
  };
  const std::vector<double> steps_one = step_losses(dir_ / "chat-one" / "steps.csv");
  const std::vector<double> steps_two = step_losses(dir_ / "chat-two" / "steps.csv");
  ASSERT_EQ(steps_one.size(), 20u);
  ASSERT_EQ(steps_two.size(), 20u);
  for (std::size_t i = 0; i < steps_one.size(); ++i)
    EXPECT_NEAR(steps_one[i], steps_two[i], 1e-4) << "step " << i + 1;
}

TEST_F(TrainMpi, OneProcessUnderMpirunPrintsPlainLinesToo) {
  const fs::path out = dir_ / "mpirun-one";
  const GlassRun r = glass_test::run_glass(
      "train --out " + q(out.string()) + " --iters 10" + tiny(4, 5), dir_, mpirun(1));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find('\r'), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("step 10/10 | loss "), std::string::npos) << r.out;
}

TEST_F(TrainMpi, ABatchThatDoesNotSplitEvenlyIsRefused) {
  const fs::path out = dir_ / "odd";
  const GlassRun r = glass("train --out " + q(out.string()) + " --iters 4" + tiny(5), 2);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--batch-size 5 is the batch of all 2 processes together and must divide "
                       "evenly among them"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(out / "model.safetensors"));
}

TEST_F(TrainMpi, ResumeWorksAcrossProcessCounts) {
  ASSERT_EQ(trained("one", 1).exit_code, 0);
  // 40 steps with one process, the rest with two; and the other way round.
  for (const auto& [name, first, second] :
       {std::tuple{"one-then-two", 1, 2}, {"two-then-one", 2, 1}}) {
    const fs::path out = dir_ / name;
    const GlassRun a = glass("train --out " + q(out.string()) + " --iters 40" + tiny(), first);
    ASSERT_EQ(a.exit_code, 0) << a.err;
    const GlassRun b =
        glass("train --out " + q(out.string()) + " --iters 80 --resume" + tiny(), second);
    ASSERT_EQ(b.exit_code, 0) << b.err;
    EXPECT_NE(b.out.find("resuming from step 40"), std::string::npos) << b.out;
    // tiny() repeats the model's own sizes: nothing is ignored, so nothing is warned of.
    EXPECT_EQ(b.err.find("is ignored with --resume"), std::string::npos) << b.err;
    expect_same_run(dir_ / "one", out, 2e-3, 1e-4);
  }
}

TEST_F(TrainMpi, AKilledProcessEndsTheJobAndTheCheckpointSurvives) {
  const fs::path out = dir_ / "killed";
  const fs::path pid_file = dir_ / "mpirun.pid", status_file = dir_ / "mpirun.status";
  // A long run in the background; its exit status is written when mpirun ends.
  const std::string script =
      "(" + mpirun(2) + glass_test::binary_dir("/glass train --out ") + q(out.string()) +
      " --iters 1000000" + tiny(4, 10) + " </dev/null >" + q((dir_ / "killed.out").string()) +
      " 2>" + q((dir_ / "killed.err").string()) + " & echo $! >" + q(pid_file.string()) +
      "; wait $!; echo $? >" + q(status_file.string()) + ") >/dev/null 2>&1 &";
  ASSERT_EQ(std::system(script.c_str()), 0);
  // Wait (at most a minute) for the first checkpoint, then for rank 1 to show up.
  auto wait_for = [](const auto& done) {
    for (int i = 0; i < 1200 && !done(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return done();
  };
  // Whatever happens below (a failed assertion included), the background job does not outlive
  // the test: mpirun gets SIGTERM (it ends its processes), then its children and it SIGKILL.
  struct KillJob {
    const fs::path& pid_file;
    ~KillJob() {
      const std::string text = read_file(pid_file);
      const pid_t pid = text.empty() ? 0 : static_cast<pid_t>(std::atol(text.c_str()));
      if (pid <= 0 || ::kill(pid, 0) != 0) return;
      ::kill(pid, SIGTERM);
      std::this_thread::sleep_for(std::chrono::seconds(1));
      const std::string children = "pkill -KILL -P " + std::to_string(pid) + " >/dev/null 2>&1";
      if (std::system(children.c_str()) < 0) {}
      ::kill(pid, SIGKILL);
    }
  } kill_job{pid_file};
  ASSERT_TRUE(wait_for([&] { return fs::exists(out / "current") && !read_file(pid_file).empty(); }))
      << read_file(dir_ / "killed.err");
  const pid_t mpirun_pid = std::stoi(read_file(pid_file));
  // Rank 1: the child of mpirun whose environment says OMPI_COMM_WORLD_RANK=1.
  pid_t rank1 = 0;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string stat = read_file(entry.path() / "stat");
    const std::size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream fields(stat.substr(paren + 2));
    char state;
    pid_t ppid = 0;
    fields >> state >> ppid;
    if (ppid != mpirun_pid) continue;
    std::string env = read_file(entry.path() / "environ");
    for (char& c : env)
      if (c == '\0') c = '\n';
    if (("\n" + env).find("\nOMPI_COMM_WORLD_RANK=1\n") != std::string::npos)
      rank1 = std::stoi(entry.path().filename().string());
  }
  ASSERT_GT(rank1, 0) << "rank 1 of mpirun " << mpirun_pid << " not found";
  ASSERT_EQ(::kill(rank1, SIGKILL), 0);
  // The whole job ends: no hang (a minute is far more than mpirun needs; then it is killed).
  const bool ended =
      wait_for([&] { return fs::exists(status_file) && !read_file(status_file).empty(); });
  if (!ended) ::kill(mpirun_pid, SIGKILL);
  ASSERT_TRUE(ended) << "mpirun did not end after rank 1 was killed";
  EXPECT_NE(std::stoi(read_file(status_file)), 0);
  const std::string err = read_file(dir_ / "killed.err");
  EXPECT_NE(err.find("exited on signal 9"), std::string::npos) << err;
  // The last checkpoint is whole: one process continues it.
  const long saved =
      nlohmann::json::parse(read_file(out / "train_state.json")).at("step").get<long>();
  const GlassRun resumed = glass("train --out " + q(out.string()) + " --resume --iters " +
                                 std::to_string(saved + 10) + tiny(4, 10));
  EXPECT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("resuming from step " + std::to_string(saved)), std::string::npos)
      << resumed.out;
}
