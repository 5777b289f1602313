// Ops that add their input gradient straight into an existing grad (instead of a temporary
// and a `+=` pass) must give the same gradient as the two contributions computed apart.

#include <gtest/gtest.h>

#include <vector>

#include "autograd/ops.hpp"

namespace {

using namespace glass;

/// Runs loss() with fresh gradients on `inputs` and returns a copy of each input's gradient.
template <class F>
std::vector<Array> gradients(const std::vector<Tensor>& inputs, F loss) {
  for (const Tensor& t : inputs) {  // no gradient at all before the run
    t.impl()->grad = Array();
    t.impl()->has_grad = false;
  }
  loss().backward();
  std::vector<Array> out;
  for (const Tensor& t : inputs) out.push_back(t.grad());
  return out;
}

TEST(GradAccumulation, RmsNormAddsIntoAnExistingGradient) {
  Rng rng(7);
  const Tensor x = Tensor::randn({3, 4, 8}, 1.0, rng, true);
  const Tensor gain = Tensor::randn({8}, 1.0, rng, true);
  const Tensor c = Tensor::randn({3, 4, 8}, 1.0, rng);
  auto norm_part = [&] { return sum(rms_norm(x, gain, 1e-5) * c); };
  auto square_part = [&] { return sum(x * x * 0.5); };  // d/dx = x
  // Recorded after rms_norm, so in the backward pass x already holds the square part's
  // gradient when rms_norm's backward runs (the residual-stream situation of the model).
  const auto both = gradients({x, gain}, [&] {
    const Tensor first = norm_part();  // two statements: the order of `a() + b()` is unspecified
    const Tensor second = square_part();
    return first + second;
  });
  const auto norm_only = gradients({x, gain}, norm_part);
  ASSERT_EQ(both[0].size(), x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_NEAR(both[0].data()[i], norm_only[0].data()[i] + x.value().data()[i], 1e-12) << i;
  }
  for (std::size_t j = 0; j < 8; ++j) EXPECT_NEAR(both[1].data()[j], norm_only[1].data()[j], 1e-12);
}

}  // namespace
