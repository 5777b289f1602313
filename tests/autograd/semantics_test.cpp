// Autograd semantics: accumulation, shared subexpressions, leaf identity, repeated backward,
// NoGradGuard, and that clearing the tape frees what it kept alive.
// Compiled in float (test_autograd) and, through semantics_f64_test.cpp, in double.

#include <gtest/gtest.h>

#include "autograd/ops.hpp"
#include "autograd/tape.hpp"

namespace {

using namespace glass;

// Expected values below are worked out by hand in the comments.

TEST(Semantics, TensorUsedTwiceGetsBothContributions) {
  // y = x*x + 3x, dy/dx = 2x + 3 = 7 at x = 2: the two uses of x (and the two inputs of mul)
  // must all accumulate.
  const Tensor x = Tensor::from_vector({2}, {1}, true);
  sum(x * x + x * Scalar(3)).backward();
  EXPECT_DOUBLE_EQ(x.grad()(0), 7.0);
}

TEST(Semantics, DiamondGraph) {
  // a = 3x, b = a + 1, c = a * 2, y = b * c = (3x + 1)(6x); dy/dx = 36x + 6 = 78 at x = 2.
  const Tensor x = Tensor::from_vector({2}, {1}, true);
  const Tensor a = x * Scalar(3);
  const Tensor b = a + Scalar(1);
  const Tensor c = a * Scalar(2);
  sum(b * c).backward();
  EXPECT_DOUBLE_EQ(x.grad()(0), 78.0);
}

TEST(Semantics, LeavesWithEqualValuesStaySeparate) {
  // y = u * v^2 with u = v = 3: dy/du = v^2 = 9, dy/dv = 2uv = 18.
  const Tensor u = Tensor::from_vector({3}, {1}, true);
  const Tensor v = Tensor::from_vector({3}, {1}, true);
  sum(u * v * v).backward();
  EXPECT_DOUBLE_EQ(u.grad()(0), 9.0);
  EXPECT_DOUBLE_EQ(v.grad()(0), 18.0);
  EXPECT_NE(u.impl(), v.impl());
}

TEST(Semantics, SecondBackwardAfterZeroingGivesTheSameGradients) {
  Rng rng(3);
  const Tensor x = Tensor::randn({3, 4}, 1, rng, true);
  const Tensor w = Tensor::randn({5, 4}, 1, rng, true);
  auto run = [&] { sum(softmax(linear(x, w)) * linear(x, w)).backward(); };
  run();
  const Array gx = x.grad(), gw = w.grad();
  Tensor(x).zero_grad();
  Tensor(w).zero_grad();
  run();
  for (std::size_t i = 0; i < gx.size(); ++i) EXPECT_EQ(x.grad().data()[i], gx.data()[i]);
  for (std::size_t i = 0; i < gw.size(); ++i) EXPECT_EQ(w.grad().data()[i], gw.data()[i]);
  // Without zeroing, a third backward accumulates: twice the gradient.
  run();
  for (std::size_t i = 0; i < gx.size(); ++i)
    EXPECT_NEAR(x.grad().data()[i], 2 * gx.data()[i], 1e-5 * (1 + std::abs(gx.data()[i])));
}

TEST(Semantics, NoGradGuardRecordsNothing) {
  tape().clear();
  const Tensor x = Tensor::ones({2, 2}, true);
  {
    NoGradGuard guard;
    EXPECT_FALSE(is_recording());
    const Tensor y = exp(x) * x;
    EXPECT_FALSE(y.requires_grad());
    EXPECT_EQ(tape().size(), 0u);
  }
  EXPECT_TRUE(is_recording());
  const Tensor z = exp(x);
  EXPECT_TRUE(z.requires_grad());
  EXPECT_EQ(tape().size(), 1u);
  tape().clear();
}

TEST(Semantics, OpsOnConstantsAreNotRecorded) {
  tape().clear();
  const Tensor a = Tensor::ones({2});
  const Tensor y = a + a;
  EXPECT_FALSE(y.requires_grad());
  EXPECT_EQ(tape().size(), 0u);
}

TEST(Semantics, ClearingTheTapeFreesIntermediates) {
  tape().clear();
  const Tensor x = Tensor::ones({4}, true);
  EXPECT_EQ(x.use_count(), 1);
  Tensor h = exp(x);      // kept by `h` and by the tape's record
  Tensor y = sum(h * h);  // the closures of mul hold h
  EXPECT_GT(h.use_count(), 1);
  EXPECT_GT(x.use_count(), 1);  // exp's closure holds x
  y.backward();                 // backward clears the tape
  EXPECT_EQ(tape().size(), 0u);
  EXPECT_EQ(h.use_count(), 1);
  EXPECT_EQ(x.use_count(), 1);
  EXPECT_EQ(y.use_count(), 1);

  // Also without backward: a forward pass that is thrown away.
  Tensor z = softmax(exp(x));
  EXPECT_GT(z.use_count(), 1);
  tape().clear();
  EXPECT_EQ(z.use_count(), 1);
  EXPECT_EQ(x.use_count(), 1);
}

TEST(Semantics, BackwardNeedsAScalarThatRequiresGrad) {
  const Tensor x = Tensor::ones({3}, true);
  EXPECT_THROW(exp(x).backward(), std::invalid_argument);
  tape().clear();
  EXPECT_THROW(sum(Tensor::ones({3})).backward(), std::invalid_argument);
}

}  // namespace
