// Each reference op with a hand-derived backward pass (softmax, log_softmax, rms_norm,
// cross_entropy, rope, linear, repeat_kv) equals the same function composed from primitive ops,
// in value and in gradient (double precision). The composed versions follow the textbook
// formulas. (The fast kernels of autograd/kernels/ are compared with the reference ops in
// fast_kernels_f64_test.cpp.)

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>
#include <limits>
#include <tuple>

#include "autograd/ops.hpp"

namespace {

using namespace glass;

/// Runs f on a fresh leaf copy of x, backpropagates sum(f(x) * R) and returns (value, grad).
struct ValueGrad {
  Array value, grad;
};
template <class F>
ValueGrad run(const Array& x, const Array* R, F f) {
  const Tensor leaf(x, true);
  const Tensor y = f(leaf);
  Tensor loss = R ? sum(y * Tensor(*R)) : sum(y);
  loss.backward();
  return {y.value(), leaf.grad()};
}

void expect_close(const Array& a, const Array& b, double tol, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_NEAR(a.data()[i], b.data()[i], tol) << what << " at flat index " << i;
}

class FusedVsComposed : public ::testing::Test {
 protected:
  Rng rng{42};
  Array randn(const Shape& s) { return Tensor::randn(s, 1, rng).value(); }
};

TEST_F(FusedVsComposed, Softmax) {
  const Array x = randn({3, 7}), R = randn({3, 7});
  const auto fused = run(x, &R, [](const Tensor& a) { return softmax(a); });
  const auto composed = run(x, &R, [](const Tensor& a) {
    const Tensor e = exp(a);
    return e / sum(e, -1, true);  // exp(x) / sum(exp(x)), fine for moderate x
  });
  expect_close(fused.value, composed.value, 1e-12, "value");
  expect_close(fused.grad, composed.grad, 1e-12, "grad");
}

TEST_F(FusedVsComposed, LogSoftmax) {
  const Array x = randn({4, 5}), R = randn({4, 5});
  const auto fused = run(x, &R, [](const Tensor& a) { return log_softmax(a); });
  const auto composed = run(x, &R, [](const Tensor& a) { return a - log(sum(exp(a), -1, true)); });
  expect_close(fused.value, composed.value, 1e-12, "value");
  expect_close(fused.grad, composed.grad, 1e-12, "grad");
}

TEST_F(FusedVsComposed, RMSNormValueAndBothGradients) {
  const Array x = randn({2, 3, 8}), R = randn({2, 3, 8}), g = randn({8});
  const double eps = 1e-5;
  auto both = [&](bool fused) {
    const Tensor xt(x, true), gt(g, true);
    const Tensor y =
        fused ? rms_norm(xt, gt, eps) : xt * pow(mean(xt * xt, -1, true) + eps, -0.5) * gt;
    sum(y * Tensor(R)).backward();
    return std::make_tuple(y.value(), xt.grad(), gt.grad());
  };
  const auto [yf, dxf, dgf] = both(true);
  const auto [yc, dxc, dgc] = both(false);
  expect_close(yf, yc, 1e-12, "value");
  expect_close(dxf, dxc, 1e-12, "grad x");
  expect_close(dgf, dgc, 1e-12, "grad gain");
}

TEST_F(FusedVsComposed, CrossEntropyWithIgnoreIndex) {
  const Array x = randn({2, 3, 6});
  const Ids targets = {{2, 5, -1}, {0, 0, 4}};
  const auto fused =
      run(x, nullptr, [&](const Tensor& a) { return cross_entropy(a, targets, -1); });
  // Composed: -sum(onehot * log_softmax(x)) / count, with onehot rows zero for ignored targets.
  Array onehot = Array::from_shape({2, 3, 6});
  onehot.fill(0);
  double count = 0;
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t t = 0; t < 3; ++t)
      if (targets(b, t) != -1) {
        onehot(b, t, static_cast<std::size_t>(targets(b, t))) = 1;
        ++count;
      }
  const auto composed = run(x, nullptr, [&](const Tensor& a) {
    return neg(sum(log_softmax(a) * Tensor(onehot))) / count;
  });
  expect_close(fused.value, composed.value, 1e-12, "value");
  expect_close(fused.grad, composed.grad, 1e-12, "grad");
}

TEST_F(FusedVsComposed, RopeWithOffset) {
  const std::size_t B = 2, T = 3, H = 2, D = 6, half = D / 2, start = 4;
  const double base = 10000;
  const Array x = randn({B, T, H, D}), R = randn({B, T, H, D});
  // cos/sin of angle (start + t) * base^(-2i/D), shaped (T, 1, D/2, 1) to broadcast over
  // (B, T, H, D/2, 1).
  Array c = Array::from_shape({T, 1, half, 1}), s = Array::from_shape({T, 1, half, 1});
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t i = 0; i < half; ++i) {
      const double angle = (start + t) * std::pow(base, -2.0 * i / D);
      c(t, 0, i, 0) = std::cos(angle);
      s(t, 0, i, 0) = std::sin(angle);
    }
  const auto fused = run(x, &R, [&](const Tensor& a) { return rope(a, start, base); });
  const auto composed = run(x, &R, [&](const Tensor& a) {
    const Tensor pairs = reshape(a, {B, T, H, half, 2});
    const Tensor x0 = slice(pairs, -1, 0, 1), x1 = slice(pairs, -1, 1, 2);
    const Tensor cos_t(c), sin_t(s);
    const Tensor y0 = x0 * cos_t - x1 * sin_t;
    const Tensor y1 = x0 * sin_t + x1 * cos_t;
    return reshape(concat({y0, y1}, -1), {B, T, H, D});
  });
  expect_close(fused.value, composed.value, 1e-12, "value");
  expect_close(fused.grad, composed.grad, 1e-12, "grad");
}

TEST_F(FusedVsComposed, LinearEqualsMatmulWithTranspose) {
  const Array x = randn({2, 3, 4}), w = randn({5, 4}), R = randn({2, 3, 5});
  const Tensor wt(w);
  const auto fused = run(x, &R, [&](const Tensor& a) { return linear(a, wt); });
  const auto composed = run(x, &R, [&](const Tensor& a) { return matmul(a, transpose(wt, 0, 1)); });
  expect_close(fused.value, composed.value, 1e-12, "value");
  expect_close(fused.grad, composed.grad, 1e-12, "grad");
}

TEST_F(FusedVsComposed, RepeatKvEqualsConcatOfHeads) {
  const Array x = randn({2, 2, 3, 4}), R = randn({2, 6, 3, 4});
  const auto fused = run(x, &R, [](const Tensor& a) { return repeat_kv(a, 3); });
  const auto composed = run(x, &R, [](const Tensor& a) {
    const Tensor h0 = slice(a, 1, 0, 1), h1 = slice(a, 1, 1, 2);
    return concat({h0, h0, h0, h1, h1, h1}, 1);  // output head h = input head h / 3
  });
  expect_close(fused.value, composed.value, 0, "value");
  expect_close(fused.grad, composed.grad, 1e-12, "grad");
}

}  // namespace
