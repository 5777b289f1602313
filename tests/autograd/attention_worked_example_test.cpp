// The worked example of docs/atencao.md ("Um exemplo completo, à mão"):
// Q = K = [[1,0],[1,1],[0,1]], V = [[2,0],[0,2],[2,2]], scores = Q K^T / sqrt(2),
// causal_mask(3, 3, 0) -> -inf, softmax, mix with V. The expected numbers are the page's
// printed output ("Saída verificada"), rounded to 6 decimals.
// This file is compiled in float (test_autograd); attention_worked_example_f64_test.cpp includes it in
// double (test_autograd_f64).

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "autograd/ops.hpp"

namespace {

using glass::Scalar;
using glass::Tensor;

TEST(AttentionWorkedExample, ReproducesThePrintedWeightsAndOutputs) {
  const Tensor q = Tensor::from_vector({1, 0, 1, 1, 0, 1}, {3, 2}, true);
  const Tensor k = Tensor::from_vector({1, 0, 1, 1, 0, 1}, {3, 2}, true);
  const Tensor v = Tensor::from_vector({2, 0, 0, 2, 2, 2}, {3, 2}, true);

  const Tensor scores = glass::matmul(q, glass::transpose(k, 0, 1)) * Scalar(1 / std::sqrt(2.0));
  const glass::Mask mask = glass::causal_mask(3, 3, 0);
  const Tensor masked = glass::masked_fill(scores, mask, -std::numeric_limits<Scalar>::infinity());
  const Tensor weights = glass::softmax(masked);
  const Tensor out = glass::matmul(weights, v);

  const double expected_weights[3][3] = {{1.000000, 0.000000, 0.000000},
                                         {0.330238, 0.669762, 0.000000},
                                         {0.197776, 0.401112, 0.401112}};
  const double expected_out[3][2] = {
      {2.000000, 0.000000}, {0.660477, 1.339523}, {1.197776, 1.604448}};
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t j = 0; j < 3; ++j) {
      EXPECT_EQ(mask(i, j), j > i);
      EXPECT_NEAR(weights.value()(i, j), expected_weights[i][j], 5e-7) << i << "," << j;
    }
    for (std::size_t j = 0; j < 2; ++j)
      EXPECT_NEAR(out.value()(i, j), expected_out[i][j], 5e-7) << i << "," << j;
  }

  // The same scores through matmul_nt (no explicit transpose) agree.
  const Tensor scores_nt = glass::matmul_nt(q, k) * Scalar(1 / std::sqrt(2.0));
  for (std::size_t i = 0; i < 9; ++i)
    EXPECT_NEAR(scores_nt.value().data()[i], scores.value().data()[i], 1e-6);

  // Backward runs and produces finite gradients; the masked (future) keys get nothing from
  // query 0, which only sees itself.
  glass::sum(out).backward();
  for (const Tensor* t : {&q, &k, &v})
    for (Scalar g : t->grad()) EXPECT_TRUE(std::isfinite(g));
}

}  // namespace
