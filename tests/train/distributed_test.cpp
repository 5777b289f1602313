// Data parallelism (train/distributed.hpp): the single-process communicator changes nothing;
// under `mpirun -np 2` (Distributed.TwoRanksUnderMpirun starts this same test program so) the
// all-reduce sums the two ranks' buffers, each rank gets its half of a batch, and the mean of
// the two half-batch gradients is the whole-batch gradient, and a stop signal on one rank
// stops the training on both, each naming that signal.

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <algorithm>

#include <gtest/gtest.h>
#include <xtensor/xview.hpp>

#include "autograd/ops.hpp"
#include "data/text.hpp"
#include "fixtures.hpp"
#include "nn/decoder.hpp"
#include "test_util.hpp"
#include "train/distributed.hpp"
#include "train/trainer.hpp"
#include "test_paths.hpp"

using namespace glass;

namespace {

/// The tests' small model (fixtures.hpp) with 2 query heads over 1 KV head, vocabulary 11,
/// 8 positions.
ModelConfig tiny() {
  ModelConfig c = glass_test::small_config(11, 8);
  c.n_heads = 2;
  c.n_kv_heads = 1;
  return c;
}

/// Four windows of 5 ids (B = 4, T = 5) and their targets.
Ids batch_x() { return Ids({{1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}, {3, 1, 4, 1, 5}, {9, 2, 6, 5, 3}}); }
Ids batch_y() { return Ids({{2, 3, 4, 5, 6}, {7, 8, 9, 10, 1}, {1, 4, 1, 5, 9}, {2, 6, 5, 3, 5}}); }

}  // namespace

// ---- one process: every collective is the identity ------------------------------------------

TEST(Distributed, OneProcessLeavesBuffersAndGradientsAsTheyAre) {
  const Communicator one;
  EXPECT_EQ(one.rank(), 0);
  EXPECT_EQ(one.size(), 1);
  EXPECT_TRUE(one.is_root());
  std::vector<float> f = {1.5f, -2.0f};
  one.all_reduce_sum(f);
  EXPECT_EQ(f, (std::vector<float>{1.5f, -2.0f}));
  EXPECT_TRUE(one.any(true));
  EXPECT_FALSE(one.any(false));
  EXPECT_EQ(one.max(-3), -3);
  EXPECT_TRUE(one.same_on_all_ranks(7));

  Decoder model(tiny(), 3);
  Tensor loss = cross_entropy(model.forward(batch_x()), batch_y());
  loss.backward();
  const Array before = model.parameters()[0].grad();
  EXPECT_EQ(average_gradients(model.parameters(), 2.5, one), 2.5);
  EXPECT_EQ(model.parameters()[0].grad(), before);
  EXPECT_EQ(shard_rows(batch_x(), one), batch_x());
}

TEST(Distributed, WeightsChecksumSeesOneFlippedBit) {
  Decoder a(tiny(), 3), b(tiny(), 3), c(tiny(), 4);
  EXPECT_EQ(weights_checksum(a.parameters()), weights_checksum(b.parameters()));
  EXPECT_NE(weights_checksum(a.parameters()), weights_checksum(c.parameters()));
  float& w = b.parameters()[0].value().data()[0];
  w = std::nextafter(w, 1.0f);  // the lowest bit of one weight
  EXPECT_NE(weights_checksum(a.parameters()), weights_checksum(b.parameters()));
}

// ---- two processes ----------------------------------------------------------------------------

/// The tests below need two ranks; run alone (by CTest) they are skipped, and
/// Distributed.TwoRanksUnderMpirun runs them under `mpirun -np 2`.
class DistributedRanks : public ::testing::Test {
 protected:
  void SetUp() override {
    comm_ = Communicator::world();
    if (comm_.size() != 2)
      GTEST_SKIP() << "runs under mpirun -np 2 (see Distributed.TwoRanksUnderMpirun)";
  }
  Communicator comm_;
};

TEST_F(DistributedRanks, AllReduceSumAddsTheBuffersOfBothRanks) {
  const float r = static_cast<float>(comm_.rank());
  std::vector<float> f = {r + 1, 10 * (r + 1), 0.25f};  // rank 0: 1, 10, 0.25; rank 1: 2, 20, 0.25
  comm_.all_reduce_sum(f);
  EXPECT_EQ(f, (std::vector<float>{3, 30, 0.5f}));
  std::vector<double> d = {comm_.rank() == 0 ? 0.1 : 0.2};
  comm_.all_reduce_sum(d);
  EXPECT_DOUBLE_EQ(d[0], 0.1 + 0.2);
}

TEST_F(DistributedRanks, AnyAndSameOnAllRanksAgreeEverywhere) {
  EXPECT_TRUE(comm_.any(comm_.rank() == 1));
  EXPECT_FALSE(comm_.any(false));
  EXPECT_TRUE(comm_.same_on_all_ranks(0x5eed));
  EXPECT_FALSE(comm_.same_on_all_ranks(comm_.rank() == 0 ? 0x10 : 0x30));  // differ in one bit
}

TEST_F(DistributedRanks, MaxIsTheLargestValueOnEveryRank) {
  EXPECT_EQ(comm_.max(comm_.rank() == 1 ? SIGTERM : 0), SIGTERM);
  EXPECT_EQ(comm_.max(comm_.rank() == 0 ? 7 : -2), 7);
}

TEST_F(DistributedRanks, ASignalOnRankOneStopsBothRanksNamingIt) {
  // Rank 1 got SIGTERM before the first step; rank 0 has no stop flag at all (library use).
  const std::filesystem::path dir = glass_test::temp_dir("glass_distributed_stop");
  const std::u32string text = load_text(glass_test::source_dir("/data/corpora/domcasmurro.txt"));
  std::ofstream(dir / "text.txt", std::ios::binary) << u32_to_utf8(text.substr(0, 5000));
  TrainOptions o;
  o.data_path = (dir / "text.txt").string();
  o.out_dir = (dir / "run").string();  // rank 0 writes its own; rank 1 writes nothing
  o.batch_size = 4;
  o.context = 16;
  o.iters = 1000;
  o.warmup = 1;
  o.eval_iters = 2;
  o.sample_tokens = 0;
  o.model = glass_test::small_config(0, 16);
  o.comm = comm_;
  volatile std::sig_atomic_t flag = SIGTERM;
  o.stop_flag = comm_.rank() == 1 ? &flag : nullptr;
  std::ostringstream out;
  Trainer trainer(o, out);
  const TrainResult r = trainer.run();
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(r.step, 0);
  EXPECT_EQ(r.stop_signal, SIGTERM) << "rank " << comm_.rank();
  if (comm_.rank() == 0) {  // rank 0 prints for both
    EXPECT_NE(out.str().find("interrupted at step 0 (SIGTERM)"), std::string::npos) << out.str();
    EXPECT_EQ(out.str().find("Ctrl-C"), std::string::npos) << out.str();
  }
}

TEST_F(DistributedRanks, EachRankTakesItsHalfOfTheBatch) {
  const Ids half = shard_rows(batch_x(), comm_);
  const Ids want = comm_.rank() == 0 ? Ids({{1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}})
                                     : Ids({{3, 1, 4, 1, 5}, {9, 2, 6, 5, 3}});
  EXPECT_EQ(half, want);
  const Ids three_rows = xt::view(batch_x(), xt::range(0, 3), xt::all());
  EXPECT_THROW(shard_rows(three_rows, comm_), std::invalid_argument);  // 3 rows, 2 ranks
}

TEST_F(DistributedRanks, MeanOfTheHalfBatchGradientsIsTheWholeBatchGradient) {
  Decoder model(tiny(), 3);
  // The whole batch on this rank alone.
  Tensor whole = cross_entropy(model.forward(batch_x()), batch_y());
  whole.backward();
  std::vector<Array> whole_grads;
  for (const Tensor& p : model.parameters()) whole_grads.push_back(p.grad());
  // Each rank its half, then the all-reduce.
  for (Tensor& p : model.parameters()) p.zero_grad();
  Tensor half =
      cross_entropy(model.forward(shard_rows(batch_x(), comm_)), shard_rows(batch_y(), comm_));
  half.backward();
  const double mean_loss = average_gradients(model.parameters(), half.item(), comm_);

  EXPECT_NEAR(mean_loss, whole.item(), 1e-6);
  const std::vector<Tensor> params = model.parameters();
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Array& g = params[i].grad();
    double max_diff = 0, max_abs = 0;
    for (std::size_t j = 0; j < g.size(); ++j) {
      max_diff =
          std::max(max_diff, static_cast<double>(std::abs(g.data()[j] - whole_grads[i].data()[j])));
      max_abs = std::max(max_abs, static_cast<double>(std::abs(whole_grads[i].data()[j])));
    }
    EXPECT_LE(max_diff, 1e-5 * max_abs + 1e-9) << "parameter " << i;
    EXPECT_GT(max_abs, 0) << "parameter " << i << " has no gradient";
  }
  // Both ranks now hold the same gradients: one update keeps their weights equal.
  std::vector<Tensor> grads;
  for (const Tensor& p : params) grads.push_back(Tensor(p.grad()));
  EXPECT_TRUE(comm_.same_on_all_ranks(weights_checksum(grads)));
}

TEST_F(DistributedRanks, MaskedShardsWeightedByTheirTargetsGiveTheWholeBatchGradient) {
  // A loss mask leaves rank 0's half 2 counted targets and rank 1's 7: weighting the ranks by
  // 1/2 each (average_gradients) would give another gradient; their shares 2/9 and 7/9 give
  // the whole batch's, as one process computes it.
  Ids y = batch_y();
  for (std::size_t t = 0; t < 5; ++t) {
    if (t != 4) y(0, t) = -1;            // row 0: 1 target
    if (t != 2) y(1, t) = -1;            // row 1: 1 target
    if (t == 0 || t == 4) y(3, t) = -1;  // row 3: 3 targets
  }
  y(2, 0) = -1;  // row 2: 4 targets
  Decoder model(tiny(), 4);
  Tensor whole = cross_entropy(model.forward(batch_x()), y);
  whole.backward();
  std::vector<Array> whole_grads;
  for (const Tensor& p : model.parameters()) whole_grads.push_back(p.grad());
  for (Tensor& p : model.parameters()) p.zero_grad();
  const Ids my_y = shard_rows(y, comm_);
  Tensor half = cross_entropy(model.forward(shard_rows(batch_x(), comm_)), my_y);
  half.backward();
  const double share = static_cast<double>(std::count_if(my_y.begin(), my_y.end(),
                                                         [](std::int32_t t) { return t >= 0; })) /
                       9.0;
  EXPECT_DOUBLE_EQ(share, comm_.rank() == 0 ? 2.0 / 9 : 7.0 / 9);
  const double loss = combine_gradients(model.parameters(), half.item(), share, comm_);
  EXPECT_NEAR(loss, whole.item(), 1e-6);
  const std::vector<Tensor> params = model.parameters();
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Array& g = params[i].grad();
    double max_diff = 0, max_abs = 0;
    for (std::size_t j = 0; j < g.size(); ++j) {
      max_diff =
          std::max(max_diff, static_cast<double>(std::abs(g.data()[j] - whole_grads[i].data()[j])));
      max_abs = std::max(max_abs, static_cast<double>(std::abs(whole_grads[i].data()[j])));
    }
    EXPECT_LE(max_diff, 1e-5 * max_abs + 1e-9) << "parameter " << i;
  }
}

/// The command that starts `n` copies of a program: --oversubscribe allows more processes than
/// cores (CI has 2), and root (CI's user) must say --allow-run-as-root.
std::string mpirun(int n) {
  return "mpirun -np " + std::to_string(n) + " --oversubscribe" +
         (::geteuid() == 0 ? " --allow-run-as-root" : "") + " ";
}

TEST(Distributed, TwoRanksUnderMpirun) {
  if (!Communicator::built_with_mpi()) GTEST_SKIP() << "built without MPI (GLASS_MPI off)";
  if (Communicator::world().size() > 1) GTEST_SKIP() << "already under mpirun";
  const std::filesystem::path dir = glass_test::temp_dir("glass_distributed_test");
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string cmd = mpirun(2) + glass_test::quote(self) +
                          " --gtest_color=no --gtest_filter='DistributedRanks.*' </dev/null >" +
                          glass_test::quote((dir / "out.txt").string()) + " 2>&1";
  const int status = std::system(cmd.c_str());
  const std::string out = glass_test::read_file(dir / "out.txt");
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd << "\n" << out;
  // Both ranks ran all seven tests, none skipped.
  std::size_t passed = 0;
  for (std::size_t at = out.find("[  PASSED  ] 7 tests."); at != std::string::npos;
       at = out.find("[  PASSED  ] 7 tests.", at + 1))
    ++passed;
  EXPECT_EQ(passed, 2u) << out;
  EXPECT_EQ(out.find("SKIPPED"), std::string::npos) << out;
}
