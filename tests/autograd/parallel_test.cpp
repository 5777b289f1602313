// parallel_for (autograd/parallel.hpp) and the kernels that use it: every index exactly once,
// nested loops inline, exceptions reach the caller, and the ops give the same numbers, to the
// last bit, with 1, 2 or 3 threads.

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "autograd/ops.hpp"
#include "autograd/parallel.hpp"

namespace {

using namespace glass;

/// Runs each test with the pool back at 1 thread afterwards.
class Parallel : public ::testing::Test {
 protected:
  void TearDown() override { set_num_threads(1); }
};

TEST_F(Parallel, EveryIndexExactlyOnceForAnyThreadCount) {
  for (std::size_t threads : {1, 2, 3, 4}) {
    set_num_threads(threads);
    EXPECT_EQ(num_threads(), threads);
    for (std::size_t n : {0, 1, 2, 3, 7, 100, 1001}) {
      std::vector<std::atomic<int>> hits(n);
      std::atomic<int> calls{0};
      parallel_for(n, 1, [&](std::size_t begin, std::size_t end) {
        ++calls;
        EXPECT_LT(begin, end);
        for (std::size_t i = begin; i < end; ++i) ++hits[i];
      });
      for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(hits[i], 1) << "n " << n << " index " << i;
      // One chunk per thread at most (chunks of an n smaller than the thread count are empty
      // and skipped); none at all for n = 0.
      EXPECT_LE(calls.load(), static_cast<int>(std::min(n, threads)));
      if (n == 0) {
        EXPECT_EQ(calls.load(), 0);
      }
    }
  }
}

TEST_F(Parallel, SmallLoopsAndNestedLoopsRunOnTheCallingThread) {
  set_num_threads(2);
  int calls = 0;  // not atomic: a single call is expected
  parallel_for(10, 8, [&](std::size_t begin, std::size_t end) {  // 10 < 2 * 8: inline
    ++calls;
    EXPECT_EQ(begin, 0u);
    EXPECT_EQ(end, 10u);
  });
  EXPECT_EQ(calls, 1);
  std::atomic<int> inner_calls{0};
  parallel_for(2, 1, [&](std::size_t, std::size_t) {
    parallel_for(100, 1, [&](std::size_t begin, std::size_t end) {  // inside: inline, one call
      EXPECT_EQ(begin, 0u);
      EXPECT_EQ(end, 100u);
      ++inner_calls;
    });
  });
  EXPECT_EQ(inner_calls.load(), 2);
}

TEST_F(Parallel, AnExceptionInAChunkReachesTheCaller) {
  set_num_threads(2);
  EXPECT_THROW(parallel_for(100, 1,
                            [](std::size_t begin, std::size_t) {
                              if (begin > 0) throw std::runtime_error("worker chunk failed");
                            }),
               std::runtime_error);
  // The pool still works afterwards.
  std::atomic<int> total{0};
  parallel_for(100, 1, [&](std::size_t begin, std::size_t end) { total += int(end - begin); });
  EXPECT_EQ(total.load(), 100);
  EXPECT_THROW(set_num_threads(0), std::invalid_argument);
}

/// Values and input gradients of f(inputs) . R (R fixed), for the current thread count.
template <class F>
std::vector<Array> run(const std::vector<Array>& inputs, F f) {
  std::vector<Tensor> leaves;
  for (const Array& a : inputs) leaves.emplace_back(a, true);
  const Tensor y = f(leaves);
  Rng rng(99);
  const Tensor R = Tensor::randn(y.shape(), 1, rng);
  sum(y * R).backward();
  std::vector<Array> out{y.value()};
  for (const Tensor& t : leaves) out.push_back(t.grad());
  return out;
}

template <class F>
void expect_same_for_1_2_3_threads(const std::vector<Array>& inputs, F f, const char* what) {
  set_num_threads(1);
  const auto one = run(inputs, f);
  for (std::size_t threads : {2, 3}) {
    set_num_threads(threads);
    const auto many = run(inputs, f);
    ASSERT_EQ(many.size(), one.size());
    for (std::size_t k = 0; k < one.size(); ++k) {
      ASSERT_EQ(many[k].size(), one[k].size());
      std::size_t differ = 0;
      for (std::size_t i = 0; i < one[k].size(); ++i) differ += many[k].data()[i] != one[k].data()[i];
      EXPECT_EQ(differ, 0u) << what << ": array " << k << " with " << threads << " threads";
    }
  }
}

TEST_F(Parallel, KernelsGiveTheSameBitsForAnyThreadCount) {
  Rng rng(3);
  // Sizes above the kernels' thresholds (32k elements), and not multiples of the blocks.
  const Array a = Tensor::randn({7, 61, 344}, 2, rng).value();
  const Array b = Tensor::randn({7, 61, 344}, 1, rng).value();
  expect_same_for_1_2_3_threads({a, b}, [](auto& t) { return silu_mul(t[0], t[1]); }, "silu_mul");
  expect_same_for_1_2_3_threads({a, b}, [](auto& t) { return t[0] + t[1]; }, "add");
  expect_same_for_1_2_3_threads({a, b}, [](auto& t) { return t[0] * t[1]; }, "mul");

  const Array x = Tensor::randn({5, 130, 128}, 1, rng).value();  // 650 rows: 11 row blocks
  const Array gain = Tensor::randn({128}, 1, rng).value();
  expect_same_for_1_2_3_threads({x, gain}, [](auto& t) { return rms_norm(t[0], t[1], 1e-5f); },
                                "rms_norm");
  // The residual-stream case: x already has a gradient when rms_norm's backward adds into it.
  expect_same_for_1_2_3_threads(
      {x, gain}, [](auto& t) { return rms_norm(t[0], t[1], 1e-5f) + t[0] * 0.5f; },
      "rms_norm added into an existing gradient");

  const Array q = Tensor::randn({6, 70, 4, 32}, 1, rng).value();
  expect_same_for_1_2_3_threads({q}, [](auto& t) { return rope(t[0], 3); }, "rope");

  const Array scores = Tensor::randn({6, 4, 70, 75}, 3, rng).value();
  const Mask causal = causal_mask(70, 75, 5);
  expect_same_for_1_2_3_threads({scores}, [&](auto& t) { return masked_softmax(t[0], causal); },
                                "masked_softmax");
}

}  // namespace
