// The fast path's single ops (fast_linear, fast_rms_norm, fast_rope, fast_reshape, fast_add;
// autograd/kernels/) against the reference ops they are named after, in double precision: the
// same values and the same gradients in every situation their buffer reuse depends on:
// - plain: each input used once, the output held only by the tape (its gradient buffer may be
//   handed on);
// - held: the caller keeps the output, whose gradient must then read back unchanged;
// - other uses: each input is used again after the op, so it already has a gradient when the
//   op's backward runs (written into with beta = 1, or added to);
// - two passes: backward run twice, gradients accumulating across the passes (a weight between
//   two zero_grad calls).

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include <xtensor/xview.hpp>

#include "autograd/kernels/kernels.hpp"
#include "autograd/ops.hpp"
#include "autograd/tape.hpp"

namespace {

using namespace glass;

static_assert(sizeof(Scalar) == sizeof(double), "these comparisons need Scalar = double");

using Op = std::function<Tensor(const std::vector<Tensor>&)>;

enum class Mode { kPlain, kHeld, kOtherUses, kTwoPasses };

struct Result {
  Array value;
  std::vector<Array> grads;
};

/// loss = sum(op(inputs) * R) (+ sum(input_i * C_i) recorded after the op, in kOtherUses), with
/// fixed random R and C_i; returns op's value and the inputs' gradients.
Result run(const Op& op, const std::vector<Array>& values, Mode mode) {
  Rng rng(77);
  std::vector<Tensor> inputs;
  for (const Array& v : values) inputs.emplace_back(v, true);
  Result result;
  const int passes = mode == Mode::kTwoPasses ? 2 : 1;
  for (int pass = 0; pass < passes; ++pass) {
    Rng r(11);  // the same R and C in every pass
    Tensor loss;
    Array R;
    {
      Tensor y = op(inputs);
      R = Tensor::randn(y.shape(), 1, r).value();
      result.value = y.value();
      loss = sum(y * Tensor(R));
      if (mode == Mode::kOtherUses)
        for (const Tensor& x : inputs) loss = loss + sum(x * Tensor(Tensor::randn(x.shape(), 1, r).value()));
      if (mode == Mode::kHeld) {
        loss.backward();
        EXPECT_EQ(y.grad(), R) << "the held output's gradient was changed";
        continue;
      }
    }  // y is gone: the tape holds the op's output alone
    loss.backward();
  }
  for (const Tensor& x : inputs) result.grads.push_back(x.grad());
  EXPECT_EQ(tape().size(), 0u);
  return result;
}

void expect_close(const Array& a, const Array& b, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  for (std::size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a.data()[i], b.data()[i], 1e-12) << what << " at flat index " << i;
}

/// fast and reference agree, in values and gradients, in every mode.
void expect_equal_ops(const std::string& name, const Op& fast, const Op& reference,
                      const std::vector<Shape>& shapes) {
  Rng rng(5);
  std::vector<Array> values;
  for (const Shape& s : shapes) values.push_back(Tensor::randn(s, 1, rng).value());
  for (Mode mode : {Mode::kPlain, Mode::kHeld, Mode::kOtherUses, Mode::kTwoPasses}) {
    const std::string what = name + " (mode " + std::to_string(static_cast<int>(mode)) + ")";
    const Result f = run(fast, values, mode), r = run(reference, values, mode);
    expect_close(f.value, r.value, what + ": value");
    ASSERT_EQ(f.grads.size(), r.grads.size());
    for (std::size_t i = 0; i < f.grads.size(); ++i)
      expect_close(f.grads[i], r.grads[i], what + ": gradient of input " + std::to_string(i));
  }
}

TEST(FastOps, FastLinearEqualsLinear) {
  const Op fast = [](const std::vector<Tensor>& in) { return fast_linear(in[0], in[1]); };
  const Op ref = [](const std::vector<Tensor>& in) { return linear(in[0], in[1]); };
  expect_equal_ops("linear (2, 3, 4) x (5, 4)", fast, ref, {{2, 3, 4}, {5, 4}});
  expect_equal_ops("linear, one row (gemv)", fast, ref, {{1, 1, 4}, {5, 4}});
  // x read by three projections, as wq, wk and wv read the normed x
  expect_equal_ops("linear, x shared by three", [](const std::vector<Tensor>& in) {
    return fast_linear(in[0], in[1]) + fast_linear(in[0], in[2]) * fast_linear(in[0], in[3]);
  }, [](const std::vector<Tensor>& in) {
    return linear(in[0], in[1]) + linear(in[0], in[2]) * linear(in[0], in[3]);
  }, {{2, 3, 4}, {5, 4}, {5, 4}, {5, 4}});
}

TEST(FastOps, FastLinearThrowsAsLinear) {
  const Tensor x = Tensor::zeros({2, 3}), w = Tensor::zeros({4, 5});
  for (const Tensor& weight : {w, Tensor::zeros({5})}) {
    std::string fast_error, ref_error;
    try { fast_linear(x, weight); } catch (const std::invalid_argument& e) { fast_error = e.what(); }
    try { linear(x, weight); } catch (const std::invalid_argument& e) { ref_error = e.what(); }
    EXPECT_FALSE(fast_error.empty());
    EXPECT_EQ(fast_error, ref_error);
  }
}

TEST(FastOps, FastRmsNormEqualsRmsNorm) {
  expect_equal_ops("rms_norm", [](const std::vector<Tensor>& in) { return fast_rms_norm(in[0], in[1], 1e-5); },
                   [](const std::vector<Tensor>& in) { return rms_norm(in[0], in[1], 1e-5); },
                   {{2, 3, 10}, {10}});
  // The residual stream: x + f(rms_norm(x)), x's gradient arriving first through the add.
  expect_equal_ops("rms_norm in a residual block", [](const std::vector<Tensor>& in) {
    return fast_add(in[0], fast_linear(fast_rms_norm(in[0], in[1], 1e-5), in[2]));
  }, [](const std::vector<Tensor>& in) {
    return in[0] + linear(rms_norm(in[0], in[1], 1e-5), in[2]);
  }, {{2, 3, 6}, {6}, {6, 6}});
}

TEST(FastOps, FastRopeEqualsRope) {
  for (std::size_t start : {0, 5, 300, 70000}) {  // inside, past the first table, past 64k
    expect_equal_ops("rope at " + std::to_string(start),
                     [start](const std::vector<Tensor>& in) { return fast_rope(in[0], start, 100); },
                     [start](const std::vector<Tensor>& in) { return rope(in[0], start, 100); },
                     {{2, 3, 2, 6}});
  }
  expect_equal_ops("rope of rope", [](const std::vector<Tensor>& in) {
    return fast_rope(fast_rope(in[0], 2, 10000), 1, 10000);
  }, [](const std::vector<Tensor>& in) { return rope(rope(in[0], 2, 10000), 1, 10000); }, {{1, 4, 3, 4}});
}

TEST(FastOps, FastReshapeAndFastAddEqualReshapeAndAdd) {
  expect_equal_ops("reshape", [](const std::vector<Tensor>& in) { return fast_reshape(in[0], {4, 6}); },
                   [](const std::vector<Tensor>& in) { return reshape(in[0], {4, 6}); }, {{2, 3, 4}});
  expect_equal_ops("add", [](const std::vector<Tensor>& in) { return fast_add(in[0], in[1]); },
                   [](const std::vector<Tensor>& in) { return add(in[0], in[1]); }, {{3, 4}, {3, 4}});
  expect_equal_ops("add, one tensor twice", [](const std::vector<Tensor>& in) { return fast_add(in[0], in[0]); },
                   [](const std::vector<Tensor>& in) { return add(in[0], in[0]); }, {{3, 4}});
  expect_equal_ops("add, broadcast (the reference add)",
                   [](const std::vector<Tensor>& in) { return fast_add(in[0], in[1]); },
                   [](const std::vector<Tensor>& in) { return add(in[0], in[1]); }, {{2, 3, 4}, {4}});
}

TEST(FastOps, SumOfSquaresEqualsTheSumInDouble) {
  // 2500 values: two full blocks of 1024 and a tail. The first block holds a huge value and the
  // tail only tiny ones (their block sums leave [1e-30, 1e30] and are summed element by element).
  Rng rng(9);
  Array x = Tensor::randn({2500}, 1, rng).value();
  auto sum_in_double = [](const Array& a) {
    double total = 0;
    for (double v : a) total += v * v;
    return total;
  };
  EXPECT_NEAR(sum_of_squares(x), sum_in_double(x), 1e-12 * sum_in_double(x));
  x(17) = 1e20;
  for (std::size_t i = 2048; i < 2500; ++i) x(i) *= 1e-20;
  EXPECT_NEAR(sum_of_squares(x), sum_in_double(x), 1e-12 * sum_in_double(x));
  Array tail = xt::view(x, xt::range(2048, 2500));
  EXPECT_NEAR(sum_of_squares(tail), sum_in_double(tail), 1e-12 * sum_in_double(tail));
  EXPECT_GT(sum_of_squares(tail), 0.0);
  EXPECT_EQ(sum_of_squares(Array::from_shape({0})), 0.0);
}

}  // namespace
