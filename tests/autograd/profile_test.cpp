// Tape profiling (Tape::set_profiling): per-op call counts and times, off by default.

#include <gtest/gtest.h>

#include "autograd/ops.hpp"

namespace {

using namespace glass;

TEST(TapeProfile, OffByDefaultRecordsNothing) {
  tape().reset_profile();
  ASSERT_FALSE(tape().profiling());
  Tensor a = Tensor::ones({2, 3}, true);
  sum(a * a).backward();
  EXPECT_TRUE(tape().profile().empty());
}

TEST(TapeProfile, CountsEveryForwardAndBackwardByOpName) {
  tape().reset_profile();
  tape().set_profiling(true);
  Tensor x = Tensor::ones({4, 3}, true);
  Tensor w = Tensor::ones({2, 3}, true);
  // linear twice, mul once, sum once -> four records, four backward closures
  Tensor h = linear(x, w);
  Tensor y = linear(h * h, Tensor::ones({5, 2}, true));
  sum(y).backward();
  tape().set_profiling(false);
  const auto& p = tape().profile();
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
  // Turning profiling off stops the counting; reset empties the table.
  sum(linear(x, w)).backward();
  EXPECT_EQ(tape().profile().at("linear").forward_calls, 2u);
  tape().reset_profile();
  EXPECT_TRUE(tape().profile().empty());
}

TEST(TapeProfile, OpsWithoutGradientAreNotRecorded) {
  tape().reset_profile();
  tape().set_profiling(true);
  {
    NoGradGuard no_grad;
    Tensor x = Tensor::ones({2, 2}, true);
    (void)(x * x);
  }
  tape().set_profiling(false);
  EXPECT_TRUE(tape().profile().empty());
}

}  // namespace
