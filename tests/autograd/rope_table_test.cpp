// The fast path's fast_rope reads its cos/sin from a per-thread table (positions 0 .. 64k, grown
// by doubling) or, past it, from rows computed for the call: the rotation must be the same at
// every position, and equal to the reference rope's, and gradients recorded before the table was
// rebuilt must still use their own angles.

#include <gtest/gtest.h>

#include <cmath>

#include "autograd/kernels/kernels.hpp"
#include "autograd/ops.hpp"

namespace {

using namespace glass;

/// rope (fast or reference) of x = (1, 0) in every pair, one head of dim 4, at `position`: pair i
/// turns to (cos a_i, sin a_i) with a_i = position * 10000^(-2i/4), computed here in double.
void expect_rotation_at(std::size_t position) {
  const Tensor x = Tensor::from_vector({1, 0, 1, 0}, {1, 1, 1, 4});
  for (const bool fast : {true, false}) {
    const Array y = fast ? fast_rope(x, position).value() : rope(x, position).value();
    for (std::size_t i = 0; i < 2; ++i) {
      const double angle = double(position) * std::pow(10000.0, -2.0 * double(i) / 4.0);
      EXPECT_NEAR(y.data()[2 * i], std::cos(angle), 2e-6)
          << "position " << position << " pair " << i << " fast " << fast;
      EXPECT_NEAR(y.data()[2 * i + 1], std::sin(angle), 2e-6)
          << "position " << position << " pair " << i << " fast " << fast;
    }
  }
}

TEST(RopeTable, SameRotationInsideTheTableAfterGrowingAndBeyondIt) {
  for (std::size_t position : {0, 1, 255, 256, 257, 1000, 5000, 65535, 65536, 70000, 1000000})
    expect_rotation_at(position);
  expect_rotation_at(3);  // back inside the (grown) table
}

TEST(RopeTable, ABackwardRecordedBeforeTheTableGrewKeepsItsAngles) {
  // The gradient of sum(rope(x) * c) is rope^-1(c); record at position 10, grow the table by
  // asking for position 3000, then run the backward pass.
  const Tensor x = Tensor::from_vector({0.3f, -0.7f, 1.1f, 0.2f}, {1, 1, 1, 4}, true);
  const Tensor c = Tensor::from_vector({1, 2, 3, 4}, {1, 1, 1, 4});
  const Tensor loss = sum(fast_rope(x, 10) * c);
  (void)fast_rope(Tensor::ones({1, 1, 1, 4}), 3000);  // rebuilds the per-thread table
  loss.backward();
  // By hand: rotating c = (1, 2), (3, 4) by -a_i with a_0 = 10, a_1 = 10 * 10000^-0.5 = 0.1.
  const double a0 = 10.0, a1 = 0.1;
  const double expected[4] = {
      1 * std::cos(a0) + 2 * std::sin(a0), -1 * std::sin(a0) + 2 * std::cos(a0),
      3 * std::cos(a1) + 4 * std::sin(a1), -3 * std::sin(a1) + 4 * std::cos(a1)};
  for (std::size_t j = 0; j < 4; ++j) EXPECT_NEAR(x.grad().data()[j], expected[j], 1e-5) << j;
}

}  // namespace
