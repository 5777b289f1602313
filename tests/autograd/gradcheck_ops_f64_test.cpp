// Gradient check of every op (double precision): the whole suite of gradcheck_suite.cpp
// (broadcast inputs, non-square shapes, batched matmul, rope with start > 0, cross-entropy
// with ignore_index, repeat_kv, ...) must pass, and gradcheck itself must catch a wrong
// backward.

#include <gtest/gtest.h>

#include "autograd/kernels/kernels.hpp"
#include "autograd/gradcheck.hpp"
#include "autograd/gradcheck_suite.hpp"
#include "autograd/ops.hpp"

namespace {

using namespace glass;

TEST(GradcheckSuite, EveryOpPasses) {
  const auto rows = f64::run_gradcheck_suite();
  EXPECT_GE(rows.size(), 20u);
  for (const auto& row : rows) {
    EXPECT_TRUE(row.passed) << row.op << " " << row.shapes << " abs " << row.max_abs_error
                            << " rel " << row.max_rel_error;
    EXPECT_LT(row.max_rel_error, 1e-5) << row.op;
  }
}

TEST(GradcheckSuite, CoversTheFusedCausalAttention) {
  // causal_attention is the op the model trains with; `glass gradcheck` must check it too
  // (MHA with two blocks of query rows, and GQA with cached positions, start = m - n > 0).
  const auto rows = f64::run_gradcheck_suite("causal_attention");
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& row : rows) EXPECT_TRUE(row.passed) << row.op << " " << row.shapes;
}

TEST(GradcheckSuite, UnknownNameListsValidNames) {
  try {
    f64::run_gradcheck_suite("no_such_op");
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("matmul/batched"), std::string::npos) << e.what();
  }
  // A family name selects every variant of it.
  EXPECT_EQ(f64::run_gradcheck_suite("matmul").size(), 3u);
}

// An op with a deliberately wrong backward (gradient 2x too large): gradcheck must fail it.
Tensor wrong_square(const Tensor& a) {
  Array y = a.value() * a.value();
  const bool track = needs_grad({&a});
  Tensor out(y, track);
  if (track) {
    tape().record("wrong_square", out, [a](const Array& g) {
      accumulate_grad(a, Array(g * a.value() * 4.0));  // correct would be 2 x g
    });
  }
  return out;
}

TEST(Gradcheck, DetectsAWrongBackward) {
  Rng rng(7);
  const Tensor x = Tensor::randn({3, 2}, 1.0, rng, true);
  const auto report =
      gradcheck([](const std::vector<Tensor>& in) { return wrong_square(in[0]); }, {x});
  EXPECT_FALSE(report.passed);
  EXPECT_GT(report.max_abs_error, 0.1);
  ASSERT_EQ(report.inputs.size(), 1u);
  EXPECT_FALSE(report.inputs[0].passed);
}

TEST(Gradcheck, ReportsOnlyInputsThatRequireGrad) {
  Rng rng(8);
  const Tensor a = Tensor::randn({2, 3}, 1.0, rng, true);
  const Tensor b = Tensor::randn({2, 3}, 1.0, rng, false);
  const auto report =
      gradcheck([](const std::vector<Tensor>& in) { return mul(in[0], in[1]); }, {a, b});
  ASSERT_EQ(report.inputs.size(), 1u);
  EXPECT_EQ(report.inputs[0].index, 0u);
  EXPECT_TRUE(report.passed);
}

TEST(Gradcheck, ThrowsWhenNothingRequiresGrad) {
  const Tensor a = Tensor::ones({2});
  EXPECT_THROW(gradcheck([](const std::vector<Tensor>& in) { return exp(in[0]); }, {a}),
               std::invalid_argument);
}

}  // namespace
