// Wrong shapes, axes and ids raise exceptions whose message names the op and the shapes.

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "autograd/kernels/kernels.hpp"
#include "autograd/ops.hpp"

namespace {

using namespace glass;

/// Expects `f` to throw E with a message containing every piece of `parts`.
template <class E>
void expect_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected one mentioning " << parts.front();
  } catch (const E& e) {
    const std::string what = e.what();
    for (const auto& p : parts)
      EXPECT_NE(what.find(p), std::string::npos) << "'" << p << "' not in: " << what;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

const Tensor t23 = Tensor::zeros({2, 3});
const Tensor t45 = Tensor::zeros({4, 5});

TEST(Errors, BinaryOpsNameShapesThatDoNotBroadcast) {
  expect_error<std::invalid_argument>([] { add(t23, t45); }, {"add", "(2, 3)", "(4, 5)"});
  expect_error<std::invalid_argument>([] { mul(t23, Tensor::zeros({2})); },
                                      {"mul", "(2, 3)", "(2,)"});
}

TEST(Errors, SiluMulNeedsEqualShapes) {
  // No broadcasting, even where add/mul would broadcast: gate and up must match exactly.
  expect_error<std::invalid_argument>([] { silu_mul(t23, t45); },
                                      {"silu_mul", "(2, 3)", "(4, 5)", "differ"});
  expect_error<std::invalid_argument>([] { silu_mul(t23, Tensor::zeros({3})); },
                                      {"silu_mul: shapes (2, 3) and (3,) differ"});
}

TEST(Errors, Matmul) {
  expect_error<std::invalid_argument>([] { matmul(t23, t45); },
                                      {"matmul", "inner", "(2, 3)", "(4, 5)"});
  expect_error<std::invalid_argument>(
      [] {
        matmul(Tensor::zeros({2, 2, 3}), Tensor::zeros({3, 3, 4}));
      },
      {"matmul", "batch", "(2, 2, 3)", "(3, 3, 4)"});
  expect_error<std::invalid_argument>([] { linear(t23, t45); }, {"linear", "(2, 3)", "(4, 5)"});
  expect_error<std::invalid_argument>([] { linear(t23, Tensor::zeros({3})); }, {"linear", "(3,)"});
}

TEST(Errors, ShapeOps) {
  expect_error<std::invalid_argument>(
      [] {
        reshape(t23, {4, 2});
      },
      {"reshape", "(2, 3)", "(4, 2)"});
  expect_error<std::invalid_argument>([] { sum(t23, 2); }, {"sum", "axis 2", "(2, 3)"});
  expect_error<std::invalid_argument>([] { transpose(t23, 0, -3); }, {"transpose", "(2, 3)"});
  expect_error<std::invalid_argument>([] { permute(t23, {0, 0}); }, {"permute", "(2, 3)"});
  expect_error<std::invalid_argument>([] { slice(t23, 1, 2, 5); }, {"slice", "(2, 3)"});
  expect_error<std::invalid_argument>(
      [] {
        concat({t23, t45}, 0);
      },
      {"concat", "(2, 3)", "(4, 5)"});
}

TEST(Errors, NeuralNetworkOps) {
  expect_error<std::out_of_range>(
      [] {
        embedding(t45, Ids{0, 4});
      },
      {"embedding", "id 4", "(4, 5)"});
  expect_error<std::out_of_range>([] { embedding(t45, Ids{-1}); }, {"embedding", "id -1"});
  expect_error<std::invalid_argument>(
      [] {
        cross_entropy(t23, Ids{0, 1, 2});
      },
      {"cross_entropy", "(2, 3)", "(3,)"});
  expect_error<std::out_of_range>(
      [] {
        cross_entropy(t23, Ids{0, 3});
      },
      {"cross_entropy", "target 3"});
  expect_error<std::invalid_argument>([] { rms_norm(t23, Tensor::ones({2}), 1e-5f); },
                                      {"rms_norm", "(2, 3)", "(2,)"});
  expect_error<std::invalid_argument>(
      [] {
        rope(Tensor::zeros({1, 2, 1, 3}), 0);
      },
      {"rope", "(1, 2, 1, 3)"});
  expect_error<std::invalid_argument>([] { repeat_kv(t23, 2); }, {"repeat_kv", "(2, 3)"});
  expect_error<std::invalid_argument>([] { masked_fill(t23, causal_mask(3, 3), 0); },
                                      {"masked_fill", "(3, 3)", "(2, 3)"});
  expect_error<std::invalid_argument>([] { softmax(Tensor::scalar(1)); }, {"softmax", "()"});
}

}  // namespace
