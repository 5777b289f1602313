// The op profiler (OpProfiler, an observer of the tape): per-op call counts and times while it
// is set, nothing when it is not.

#include <gtest/gtest.h>

#include "autograd/ops.hpp"
#include "autograd/profiler.hpp"

namespace {

using namespace glass;

TEST(OpProfiler, UnsetRecordsNothing) {
  ASSERT_EQ(tape().observer(), nullptr);  // no observer by default
  OpProfiler profiler;
  Tensor a = Tensor::ones({2, 3}, true);
  sum(a * a).backward();
  EXPECT_TRUE(profiler.profile().empty());
}

TEST(OpProfiler, CountsEveryForwardAndBackwardByOpName) {
  OpProfiler profiler;
  tape().set_observer(&profiler);
  profiler.restart_clock();
  Tensor x = Tensor::ones({4, 3}, true);
  Tensor w = Tensor::ones({2, 3}, true);
  // linear twice, mul once, sum once -> four records, four backward closures
  Tensor h = linear(x, w);
  Tensor y = linear(h * h, Tensor::ones({5, 2}, true));
  sum(y).backward();
  tape().set_observer(nullptr);
  const auto& p = profiler.profile();
  ASSERT_EQ(p.count("linear"), 1u);
  EXPECT_EQ(p.at("linear").forward_calls, 2u);
  EXPECT_EQ(p.at("linear").backward_calls, 2u);
  EXPECT_EQ(p.at("mul").forward_calls, 1u);
  EXPECT_EQ(p.at("mul").backward_calls, 1u);
  EXPECT_EQ(p.at("sum").forward_calls, 1u);
  EXPECT_EQ(p.size(), 3u);
  for (const auto& [name, op] : p) {
    EXPECT_GE(op.forward_ms, 0.0) << name;
    EXPECT_GE(op.backward_ms, 0.0) << name;
  }
  // Removing the observer stops the counting; reset empties the table.
  sum(linear(x, w)).backward();
  EXPECT_EQ(profiler.profile().at("linear").forward_calls, 2u);
  profiler.reset();
  EXPECT_TRUE(profiler.profile().empty());
}

TEST(OpProfiler, OpsWithoutGradientAreNotRecorded) {
  OpProfiler profiler;
  tape().set_observer(&profiler);
  {
    NoGradGuard no_grad;
    Tensor x = Tensor::ones({2, 2}, true);
    (void)(x * x);
  }
  tape().set_observer(nullptr);
  EXPECT_TRUE(profiler.profile().empty());
}

}  // namespace
