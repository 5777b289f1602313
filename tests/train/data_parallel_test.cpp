// The data-parallel training step (train/data_parallel.hpp) and the threaded AdamW update: the
// same loss and gradients as one thread, to rounding; the same bits on every run; errors and
// non-finite losses handled as with one thread.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>

#include <cblas.h>
#include <gtest/gtest.h>
#include <xtensor/xview.hpp>

#include "autograd/ops.hpp"
#include "autograd/tape.hpp"
#include "autograd/threads.hpp"
#include "train/adamw.hpp"
#include "train/data_parallel.hpp"

#include "fixtures.hpp"

using namespace glass;

namespace {

/// Restores the thread count of the tests (1) when a test ends.
struct ThreadsFor {
  explicit ThreadsFor(std::size_t n) { set_num_threads(n); }
  ~ThreadsFor() { set_num_threads(1); }
};

Ids random_ids(std::size_t B, std::size_t T, std::size_t vocab, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Ids ids = Ids::from_shape({B, T});
  for (auto& id : ids) id = static_cast<std::int32_t>(rng() % vocab);
  return ids;
}

/// The longest tape among the threads of a team of n (OpenMP keeps its threads between parallel
/// regions, so these are the threads DataParallel ran on; each has a tape of its own).
std::size_t longest_tape(int n) {
  std::size_t longest = 0;
#pragma omp parallel num_threads(n) reduction(max : longest)
  longest = tape().size();
  return longest;
}

/// Every parameter's gradient, concatenated in parameter order.
std::vector<double> all_grads(const Decoder& model) {
  std::vector<double> out;
  for (const Tensor& p : model.parameters())
    out.insert(out.end(), p.grad().data(), p.grad().data() + p.size());
  return out;
}

/// The largest |a - b| over the largest |b|: a relative error of the whole gradient.
double relative_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return worst / scale;
}

}  // namespace

TEST(DataParallel, GivesTheLossAndGradientsOfOneThread) {
  const ModelConfig c = glass_test::small_config(11, 16);
  for (const char* path : {"fast", "reference"}) {
    for (std::size_t B : {4u, 3u, 7u}) {  // 3 and 7: parts of unequal size
      Decoder model(c, 5);
      model.set_ops_path(parse_ops_path(path));
      const Ids x = random_ids(B, 9, 11, 6), y = random_ids(B, 9, 11, 7);

      // One thread: zero_grad, forward, cross-entropy, backward, as the trainer did before.
      for (Tensor& p : model.parameters()) p.zero_grad();
      Tensor loss = cross_entropy(model.forward(x), y);
      const double expected_loss = loss.item();
      loss.backward();
      const std::vector<double> expected = all_grads(model);

      for (std::size_t threads : {2u, 3u}) {
        DataParallel parallel(model, threads);
        for (Tensor& p : model.parameters()) p.grad().fill(Scalar(7));  // stale: must be zeroed
        const double got = parallel.loss_and_grad(x, y);
        EXPECT_NEAR(got, expected_loss, 1e-6 * std::abs(expected_loss)) << path << " B " << B;
        const std::vector<double> grads = all_grads(model);
        EXPECT_LE(relative_diff(grads, expected), 1e-5)
            << path << " B " << B << " threads " << threads;
        // The same bits on a second run, and the evaluation loss without a tape.
        EXPECT_EQ(parallel.loss_and_grad(x, y), got);
        EXPECT_EQ(all_grads(model), grads);
        EXPECT_NEAR(parallel.loss(x, y), expected_loss, 1e-6 * std::abs(expected_loss));
        EXPECT_EQ(longest_tape(static_cast<int>(threads)), 0u);
      }
    }
  }
}

TEST(DataParallel, ReplicasFollowTheModelsWeights) {
  // An optimizer step changes the model's weights; the next call must use them in every part.
  ThreadsFor threads(2);
  const ModelConfig c = glass_test::small_config(11, 16);
  Decoder model(c, 8), alone(c, 8);
  DataParallel parallel(model, 2);
  AdamW optimizer(model.named_parameters()), optimizer_alone(alone.named_parameters());
  const Ids x = random_ids(4, 8, 11, 9), y = random_ids(4, 8, 11, 10);
  for (int step = 0; step < 3; ++step) {
    const double loss = parallel.loss_and_grad(x, y);
    optimizer.step(1e-2);
    for (Tensor& p : alone.parameters()) p.zero_grad();
    Tensor reference = cross_entropy(alone.forward(x), y);
    EXPECT_NEAR(loss, reference.item(), 1e-5) << "step " << step;
    reference.backward();
    optimizer_alone.step(1e-2);
  }
}

TEST(DataParallel, ANonFiniteLossInOnePartLeavesEveryGradientAtZero) {
  // The first part's loss is finite and its thread runs its backward at once; the second part
  // meets a token whose embedding is NaN. The step's loss is NaN and no gradient is left.
  const ModelConfig c = glass_test::small_config(11, 16);
  Decoder model(c, 11);
  DataParallel parallel(model, 2);
  Ids x = random_ids(4, 8, 10, 12);  // ids 0..9: id 10 appears only where it is put below
  const Ids y = random_ids(4, 8, 11, 13);
  x(3, 5) = 10;  // row 3: the second part (rows 2 and 3)
  Tensor embedding = model.tok_embeddings.weight;
  embedding.value()(10, 0) = std::numeric_limits<Scalar>::quiet_NaN();
  EXPECT_TRUE(std::isnan(parallel.loss_and_grad(x, y)));
  EXPECT_EQ(longest_tape(2), 0u);
  for (const Tensor& p : model.parameters())
    for (Scalar g : p.grad()) ASSERT_EQ(g, Scalar(0)) << p.name();
  // With the NaN gone, the same object computes the step again.
  embedding.value()(10, 0) = 0;
  EXPECT_TRUE(std::isfinite(parallel.loss_and_grad(x, y)));
}

TEST(DataParallel, ANonFiniteLossRunsNoBackwardAndErrorsReachTheCaller) {
  const ModelConfig c = glass_test::small_config(11, 16);
  Decoder model(c, 11);
  DataParallel parallel(model, 2);
  // Weights of NaN: the loss is NaN, no backward is run, every tape is left empty.
  Decoder broken(c, 11);
  for (Tensor& p : broken.parameters()) p.value().fill(std::numeric_limits<Scalar>::quiet_NaN());
  DataParallel parallel_broken(broken, 2);
  const Ids x = random_ids(4, 8, 11, 12), y = random_ids(4, 8, 11, 13);
  EXPECT_TRUE(std::isnan(parallel_broken.loss_and_grad(x, y)));
  EXPECT_EQ(longest_tape(2), 0u);
  // An id outside the vocabulary, in the second part only: the error of its thread is rethrown.
  Ids bad = x;
  bad(3, 0) = 11;
  EXPECT_THROW(parallel.loss_and_grad(bad, y), std::invalid_argument);
  EXPECT_EQ(longest_tape(2), 0u);
  // Targets of another shape than the inputs: refused before any thread reads them.
  EXPECT_THROW(parallel.loss_and_grad(x, random_ids(2, 8, 11, 13)), std::invalid_argument);
  EXPECT_THROW(parallel.loss(x, random_ids(4, 7, 11, 13)), std::invalid_argument);
  // And the object still works afterwards.
  EXPECT_TRUE(std::isfinite(parallel.loss_and_grad(x, y)));
}

TEST(DataParallel, BlasGetsItsThreadsBackWhenTheLastMultiThreadedInstanceEnds) {
  ThreadsFor guard(2);
  ASSERT_EQ(openblas_get_num_threads(), 2);
  const ModelConfig c = glass_test::small_config(11, 16);
  Decoder model(c, 11);
  auto first = std::make_unique<DataParallel>(model, 2);
  EXPECT_EQ(openblas_get_num_threads(), 1);
  {
    DataParallel second(model, 2);
    EXPECT_EQ(openblas_get_num_threads(), 1);
  }
  EXPECT_EQ(openblas_get_num_threads(), 1);  // `first` still runs its threads
  first.reset();
  EXPECT_EQ(openblas_get_num_threads(), 2);
}

TEST(AdamW, AnyThreadCountGivesTheSameBits) {
  const ModelConfig c = glass_test::small_config(11, 16);
  std::vector<std::vector<double>> weights;
  for (std::size_t threads : {1u, 2u, 3u}) {
    ThreadsFor guard(threads);
    Decoder model(c, 14);
    AdamW optimizer(model.named_parameters());
    std::mt19937_64 rng(15);  // the same gradients for every thread count
    std::normal_distribution<double> normal(0.0, 0.1);
    for (int step = 0; step < 2; ++step) {
      for (Tensor& p : model.parameters())
        for (Scalar& g : p.grad()) g = static_cast<Scalar>(normal(rng));
      optimizer.step(1e-2);
    }
    std::vector<double> w;
    for (const Tensor& p : model.parameters())
      w.insert(w.end(), p.value().data(), p.value().data() + p.size());
    weights.push_back(w);
  }
  EXPECT_EQ(weights[0], weights[1]);
  EXPECT_EQ(weights[0], weights[2]);
}

TEST(Threads, SetNumThreadsTakesZeroAsEveryCore) {
  {
    ThreadsFor guard(0);
    EXPECT_EQ(num_threads(), available_cores());
  }
  EXPECT_EQ(num_threads(), 1u);
}

// ---- a loss mask (chat fine-tuning): targets -1 are not counted ---------------------------------

namespace {

/// y with the targets of `row` before column `from` set to -1 (a prompt the loss skips) and
/// those from column `to` on too (padding after an answer).
void mask_row(Ids& y, std::size_t row, std::size_t from, std::size_t to) {
  for (std::size_t t = 0; t < y.shape()[1]; ++t)
    if (t < from || t >= to) y(row, t) = -1;
}

}  // namespace

TEST(DataParallel, AMaskedLossOnTwoThreadsIsTheLossOfOneThread) {
  // Rows of very different counted targets: the first part (rows 0, 1) counts 2 targets, the
  // second (rows 2, 3) 13. Weighting the parts by rows (1/2 each) would give another loss.
  const ModelConfig c = glass_test::small_config(11, 16);
  Decoder model(c, 21);
  const Ids x = random_ids(4, 9, 11, 22);
  Ids y = random_ids(4, 9, 11, 23);
  mask_row(y, 0, 8, 9);  // 1 target
  mask_row(y, 1, 3, 4);  // 1 target
  mask_row(y, 2, 2, 9);  // 7 targets
  mask_row(y, 3, 3, 9);  // 6 targets
  ASSERT_EQ(counted_targets(y), 15u);
  for (Tensor& p : model.parameters()) p.zero_grad();
  Tensor loss = cross_entropy(model.forward(x), y);
  const double expected_loss = loss.item();
  loss.backward();
  const std::vector<double> expected = all_grads(model);
  for (std::size_t threads : {2u, 3u}) {
    DataParallel parallel(model, threads);
    const double got = parallel.loss_and_grad(x, y);
    EXPECT_NEAR(got, expected_loss, 1e-6 * std::abs(expected_loss)) << threads << " threads";
    EXPECT_LE(relative_diff(all_grads(model), expected), 1e-5) << threads << " threads";
    EXPECT_NEAR(parallel.loss(x, y), expected_loss, 1e-6 * std::abs(expected_loss));
  }
}

TEST(DataParallel, APartWithNoCountedTargetAddsNothing) {
  // Rows 0 and 1 (the first part) are all masked: the loss and gradients are those of rows 2, 3.
  const ModelConfig c = glass_test::small_config(11, 16);
  Decoder model(c, 24);
  const Ids x = random_ids(4, 6, 11, 25);
  Ids y = random_ids(4, 6, 11, 26);
  mask_row(y, 0, 6, 6);
  mask_row(y, 1, 6, 6);
  const Ids x_back = xt::view(x, xt::range(2, 4), xt::all());
  const Ids y_back = xt::view(y, xt::range(2, 4), xt::all());
  for (Tensor& p : model.parameters()) p.zero_grad();
  Tensor loss = cross_entropy(model.forward(x_back), y_back);
  const double expected_loss = loss.item();
  loss.backward();
  const std::vector<double> expected = all_grads(model);
  DataParallel parallel(model, 2);
  EXPECT_NEAR(parallel.loss_and_grad(x, y), expected_loss, 1e-6 * expected_loss);
  EXPECT_LE(relative_diff(all_grads(model), expected), 1e-5);
  // Nothing counted at all: loss 0, every gradient 0 (as cross_entropy of no target).
  Ids none = y;
  none.fill(-1);
  EXPECT_EQ(parallel.loss_and_grad(x, none), 0.0);
  for (const Tensor& p : model.parameters())
    for (Scalar g : p.grad()) ASSERT_EQ(g, Scalar(0)) << p.name();
}

TEST(DataParallel, MaskedTokensFeedAttentionButTheirTargetsChangeNothing) {
  // Row 0 is a prompt (targets masked, columns 0..3), an answer (columns 4..6 counted) and
  // padding (7..8 masked). Whatever the masked targets would have been, the gradients are the
  // same bits; a prompt token changed changes them (the answer attends to it); a padding token
  // after the answer changes nothing (causal attention: no counted position sees it).
  const ModelConfig c = glass_test::small_config(11, 16);
  Decoder model(c, 27);
  DataParallel parallel(model, 2);
  const Ids x = random_ids(4, 9, 11, 28);
  const Ids next = random_ids(4, 9, 11, 29);  // the unmasked targets
  auto grads_for = [&](const Ids& inputs, const Ids& full_targets) {
    Ids y = full_targets;
    for (std::size_t r = 0; r < 4; ++r) mask_row(y, r, 4, 7);
    parallel.loss_and_grad(inputs, y);
    return all_grads(model);
  };
  const std::vector<double> base = grads_for(x, next);
  Ids other_targets = random_ids(4, 9, 11, 30);  // differs at masked and counted columns ...
  for (std::size_t r = 0; r < 4; ++r)
    for (std::size_t t = 4; t < 7; ++t) other_targets(r, t) = next(r, t);  // ... counted kept
  EXPECT_EQ(grads_for(x, other_targets), base);
  Ids padded = x;
  padded(0, 8) = (x(0, 8) + 1) % 11;
  padded(3, 7) = (x(3, 7) + 5) % 11;
  EXPECT_EQ(grads_for(padded, next), base);
  Ids prompt = x;
  prompt(0, 1) = (x(0, 1) + 1) % 11;
  EXPECT_NE(grads_for(prompt, next), base);
}
