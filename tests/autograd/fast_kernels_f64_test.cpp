// Every fast kernel of autograd/kernels/ against the reference composition it replaces, as one
// table (in the manner of ggml's test-backend-ops): one row per kernel and shape, naming the fast
// function, the reference ops it stands for and the input shapes. Each row runs both with the
// same random inputs, in double precision, and asserts the same value and the same gradient of
// every input (to 1e-12, relative to the size of the number) in every situation a kernel's buffer
// reuse depends on:
// - plain: each input used once, the output held only by the tape (its gradient buffer may be
//   handed on);
// - held: the caller keeps the output, whose gradient must then read back unchanged;
// - other uses: each input is used again after the op, so it already has a gradient when the
//   op's backward runs (written into with beta = 1, or added to);
// - two passes: backward run twice, gradients accumulating across the passes (a weight between
//   two zero_grad calls);
// - one input frozen (for each input in turn): it gets no gradient, the others the same ones.
// Rows marked "forward only" are kernels without a tape (generation, the sampler, the gradient
// norm): their values are compared. Below the table, the cases a table row cannot express.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <xtensor/xview.hpp>

#include "autograd/kernels/kernels.hpp"
#include "autograd/ops.hpp"
#include "autograd/tape.hpp"

namespace {

using namespace glass;

static_assert(sizeof(Scalar) == sizeof(double), "these comparisons need Scalar = double");
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

using Op = std::function<Tensor(const std::vector<Tensor>&)>;

/// One row of the table.
struct Row {
  std::string kernel;         ///< the fast function, and what the row varies
  std::string replaces;       ///< the reference composition, as written in `reference`
  std::vector<Shape> shapes;  ///< the inputs' shapes (random normal values)
  Op fast, reference;
  bool backward = true;  ///< false: forward only (no tape)
};

// ---- the reference compositions ---------------------------------------------------------------

/// Attention steps 4-8 on the reference ops (nn/attention.cpp): q (B, n, H, D), k and v
/// (B, m, H_kv, D), the queries at positions m - n .. m - 1 -> (B, n, H, D).
Tensor reference_attention(const Tensor& q, const Tensor& k, const Tensor& v, Scalar scale) {
  const std::size_t n = q.shape()[1], m = k.shape()[1], n_rep = q.shape()[2] / k.shape()[2];
  const Tensor Q = transpose(q, 1, 2);
  const Tensor K = repeat_kv(transpose(k, 1, 2), n_rep);
  const Tensor V = repeat_kv(transpose(v, 1, 2), n_rep);
  const Tensor scores = matmul(Q, transpose(K, -2, -1)) * scale;
  const Tensor weights = softmax(masked_fill(scores, causal_mask(n, m, m - n), -kInf));
  return transpose(matmul(weights, V), 1, 2);
}

/// The first `length` positions of a KV cache's storage (B, capacity, H_kv, D).
Tensor cached(const Tensor& storage, std::size_t length) {
  return Tensor(Array(xt::view(storage.value(), xt::all(), xt::range(0, length))));
}

// ---- the table -----------------------------------------------------------------------------------

std::vector<Row> rows() {
  using In = std::vector<Tensor>;
  std::vector<Row> t;
  // fast_linear
  const Op linear_fast = [](const In& in) { return fast_linear(in[0], in[1]); };
  const Op linear_ref = [](const In& in) { return linear(in[0], in[1]); };
  t.push_back({"fast_linear", "linear(x, W)", {{2, 3, 4}, {5, 4}}, linear_fast, linear_ref});
  t.push_back(
      {"fast_linear one row (gemv)", "linear(x, W)", {{1, 1, 4}, {5, 4}}, linear_fast, linear_ref});
  t.push_back({"fast_linear x read by three (wq, wk, wv)",
               "linear(x, A) + linear(x, B) * linear(x, C)",
               {{2, 3, 4}, {5, 4}, {5, 4}, {5, 4}},
               [](const In& in) {
                 return fast_linear(in[0], in[1]) +
                        fast_linear(in[0], in[2]) * fast_linear(in[0], in[3]);
               },
               [](const In& in) {
                 return linear(in[0], in[1]) + linear(in[0], in[2]) * linear(in[0], in[3]);
               }});
  // fast_rms_norm
  t.push_back({"fast_rms_norm",
               "rms_norm(x, gain, 1e-5)",
               {{2, 3, 10}, {10}},
               [](const In& in) { return fast_rms_norm(in[0], in[1], 1e-5); },
               [](const In& in) { return rms_norm(in[0], in[1], 1e-5); }});
  t.push_back({"fast_rms_norm in a residual block",
               "x + linear(rms_norm(x, gain, 1e-5), W)",
               {{2, 3, 6}, {6}, {6, 6}},
               [](const In& in) {
                 return fast_add(in[0], fast_linear(fast_rms_norm(in[0], in[1], 1e-5), in[2]));
               },
               [](const In& in) { return in[0] + linear(rms_norm(in[0], in[1], 1e-5), in[2]); }});
  // fast_rope: inside the cached table, past the first table, past 64k positions
  for (std::size_t start : {0, 5, 300, 70000}) {
    t.push_back({"fast_rope start " + std::to_string(start),
                 "rope(x, start, 100)",
                 {{2, 3, 2, 6}},
                 [start](const In& in) { return fast_rope(in[0], start, 100); },
                 [start](const In& in) { return rope(in[0], start, 100); }});
  }
  t.push_back({"fast_rope of fast_rope",
               "rope(rope(x, 2), 1)",
               {{1, 4, 3, 4}},
               [](const In& in) { return fast_rope(fast_rope(in[0], 2, 10000), 1, 10000); },
               [](const In& in) { return rope(rope(in[0], 2, 10000), 1, 10000); }});
  // fast_reshape, fast_add
  t.push_back({"fast_reshape",
               "reshape(x, (4, 6))",
               {{2, 3, 4}},
               [](const In& in) {
                 return fast_reshape(in[0], {4, 6});
               },
               [](const In& in) {
                 return reshape(in[0], {4, 6});
               }});
  const Op add_fast = [](const In& in) { return fast_add(in[0], in[1]); };
  const Op add_ref = [](const In& in) { return add(in[0], in[1]); };
  t.push_back({"fast_add", "a + b", {{3, 4}, {3, 4}}, add_fast, add_ref});
  t.push_back({"fast_add one tensor twice",
               "a + a",
               {{3, 4}},
               [](const In& in) { return fast_add(in[0], in[0]); },
               [](const In& in) { return add(in[0], in[0]); }});
  t.push_back(
      {"fast_add broadcast (falls back to add)", "a + b", {{2, 3, 4}, {4}}, add_fast, add_ref});
  // silu_mul: 2*3*21 = 126 elements, several SIMD batches and a scalar tail
  t.push_back({"silu_mul",
               "silu(gate) * up",
               {{2, 3, 21}, {2, 3, 21}},
               [](const In& in) { return silu_mul(in[0], in[1]); },
               [](const In& in) { return silu(in[0]) * in[1]; }});
  t.push_back({"silu_mul of one tensor with itself",
               "a * a * sigmoid(a)",
               {{3, 9}},
               [](const In& in) { return silu_mul(in[0], in[0]); },
               [](const In& in) { return in[0] * in[0] * sigmoid(in[0]); }});
  // topk_decode: some latents kept, all of them (k = F), one row, and AuxK's masked rows
  for (const auto& s : std::vector<std::vector<std::size_t>>{
           {7, 10, 4, 3}, {4, 6, 3, 6}, {1, 9, 5, 2}, {12, 40, 8, 5}}) {
    const std::size_t k = s[3];
    t.push_back({"topk_decode " + std::to_string(k) + " of " + std::to_string(s[1]),
                 "matmul(topk_relu(pre, k), W)",
                 {{s[0], s[1]}, {s[1], s[2]}},
                 [k](const In& in) { return topk_decode(in[0], k, in[1]); },
                 [k](const In& in) { return matmul(topk_relu(in[0], k), in[1]); }});
  }
  Mask alive = Mask::from_shape({1, 8});
  for (std::size_t j = 0; j < 8; ++j) alive(0, j) = j % 3 != 1;  // latents 1, 4, 7 dead
  t.push_back(
      {"topk_decode of AuxK's masked pre-activations",
       "matmul(topk_relu(masked_fill(pre, alive, -inf), 2), W)",
       {{5, 8}, {8, 3}},
       [alive](const In& in) { return topk_decode(masked_fill(in[0], alive, -kInf), 2, in[1]); },
       [alive](const In& in) {
         return matmul(topk_relu(masked_fill(in[0], alive, -kInf), 2), in[1]);
       }});
  // causal_attention: (B, n, m, H, H_kv, D) for MHA and GQA, n = m and n < m (cached positions),
  // one query, exactly one block of 32 query rows, several blocks and a partial last one
  const std::vector<std::vector<std::size_t>> attention_shapes = {
      {2, 5, 5, 4, 4, 3},   {2, 3, 7, 4, 2, 2},   {3, 1, 6, 4, 2, 4},   {1, 32, 32, 2, 2, 5},
      {2, 40, 40, 4, 2, 8}, {1, 40, 70, 4, 1, 4}, {2, 70, 70, 4, 1, 6}, {1, 70, 100, 4, 2, 3}};
  for (const auto& s : attention_shapes) {
    const Scalar scale = 1 / std::sqrt(static_cast<Scalar>(s[5]));
    t.push_back(
        {"causal_attention",
         "transpose, repeat_kv, matmul, masked_fill(causal), softmax, matmul",
         {{s[0], s[1], s[3], s[5]}, {s[0], s[2], s[4], s[5]}, {s[0], s[2], s[4], s[5]}},
         [scale](const In& in) { return causal_attention(in[0], in[1], in[2], scale); },
         [scale](const In& in) { return reference_attention(in[0], in[1], in[2], scale); }});
  }
  t.push_back({"causal_attention one tensor as q, k and v",
               "the same steps",
               {{2, 36, 2, 4}},
               [](const In& in) { return causal_attention(in[0], in[0], in[0], 0.5); },
               [](const In& in) { return reference_attention(in[0], in[0], in[0], 0.5); }});
  // forward only
  // attend_to_cache: one layer's cache (B, capacity 9, H_kv, D) holding 6 positions; 2 new
  // queries at positions 4 and 5
  t.push_back({"attend_to_cache (forward only)",
               "the attention steps over the first 6 cached positions",
               {{2, 9, 2, 3}, {2, 9, 2, 3}, {2, 2, 4, 3}},
               [](const In& in) {
                 return Tensor(
                     attend_to_cache(in[0].value(), in[1].value(), in[2].value(), 0.5, 4));
               },
               [](const In& in) {
                 return reference_attention(in[2], cached(in[0], 6), cached(in[1], 6), 0.5);
               },
               false});
  // softmax_rows: 37 = whole SIMD batches and a tail
  t.push_back({"softmax_rows (forward only)",
               "softmax(x)",
               {{3, 4, 37}},
               [](const In& in) { return Tensor(softmax_rows(in[0].value())); },
               [](const In& in) { return softmax(in[0]); },
               false});
  // sum_of_squares: 2500 values, two full blocks of 1024 and a tail
  t.push_back({"sum_of_squares (forward only)",
               "sum(x * x)",
               {{2500}},
               [](const In& in) {
                 return Tensor::scalar(static_cast<Scalar>(sum_of_squares(in[0].value())));
               },
               [](const In& in) { return sum(in[0] * in[0]); },
               false});
  return t;
}

// ---- running a row ------------------------------------------------------------------------------

enum class Mode { kPlain, kHeld, kOtherUses, kTwoPasses, kFrozen };

const char* mode_name(Mode mode) {
  switch (mode) {
    case Mode::kPlain:
      return "plain";
    case Mode::kHeld:
      return "held";
    case Mode::kOtherUses:
      return "other uses";
    case Mode::kTwoPasses:
      return "two passes";
    case Mode::kFrozen:
      return "frozen input";
  }
  return "?";
}

struct Result {
  Array value;
  std::vector<Array> grads;  ///< empty for an input that does not require grad
};

/// loss = sum(op(inputs) * R) (+ sum(input_i * C_i) recorded after the op, in kOtherUses), with
/// fixed random R and C_i; returns op's value and the inputs' gradients. In kFrozen, input
/// `frozen` does not require grad; with `backward` false no input does and nothing runs backward.
Result run(const Op& op, const std::vector<Array>& values, Mode mode, std::size_t frozen,
           bool backward) {
  std::vector<Tensor> inputs;
  for (std::size_t i = 0; i < values.size(); ++i)
    inputs.emplace_back(values[i], backward && !(mode == Mode::kFrozen && i == frozen));
  Result result;
  if (!backward) {
    result.value = op(inputs).value();
    return result;
  }
  const int passes = mode == Mode::kTwoPasses ? 2 : 1;
  for (int pass = 0; pass < passes; ++pass) {
    Rng r(11);  // the same R and C in every pass
    Tensor loss;
    {
      Tensor y = op(inputs);
      const Array R = Tensor::randn(y.shape(), 1, r).value();
      result.value = y.value();
      loss = sum(y * Tensor(R));
      if (mode == Mode::kOtherUses)
        for (const Tensor& x : inputs)
          loss = loss + sum(x * Tensor(Tensor::randn(x.shape(), 1, r).value()));
      if (mode == Mode::kHeld) {
        loss.backward();
        EXPECT_EQ(y.grad(), R) << "the held output's gradient was changed";
        continue;
      }
    }  // y is gone: the tape holds the op's output alone
    loss.backward();
  }
  for (const Tensor& x : inputs) {
    EXPECT_EQ(x.has_grad(), x.requires_grad()) << "a gradient reached an input that needs none";
    result.grads.push_back(x.has_grad() ? x.grad() : Array());
  }
  EXPECT_EQ(tape().size(), 0u);
  return result;
}

/// |a - b| <= 1e-12 * max(1, |b|) elementwise, NaN only where both are NaN.
void expect_close(const Array& a, const Array& b, const std::string& what) {
  ASSERT_EQ(shape_of(a), shape_of(b)) << what;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double x = a.data()[i], y = b.data()[i];
    if (std::isnan(x) || std::isnan(y)) {
      ASSERT_TRUE(std::isnan(x) && std::isnan(y)) << what << " at flat index " << i;
      continue;
    }
    ASSERT_NEAR(x, y, 1e-12 * std::max(1.0, std::abs(y))) << what << " at flat index " << i;
  }
}

class FastKernelTable : public ::testing::TestWithParam<Row> {};

TEST_P(FastKernelTable, SameValueAndGradientsAsTheReference) {
  const Row& row = GetParam();
  Rng rng(5);
  std::vector<Array> values;
  for (const Shape& s : row.shapes) values.push_back(Tensor::randn(s, 1, rng).value());
  std::vector<std::pair<Mode, std::size_t>> runs;  // (mode, frozen input)
  if (!row.backward) {
    runs.push_back({Mode::kPlain, 0});
  } else {
    for (Mode mode : {Mode::kPlain, Mode::kHeld, Mode::kOtherUses, Mode::kTwoPasses})
      runs.push_back({mode, 0});
    if (values.size() > 1)
      for (std::size_t i = 0; i < values.size(); ++i) runs.push_back({Mode::kFrozen, i});
  }
  for (const auto& [mode, frozen] : runs) {
    const std::string what = row.kernel + " vs " + row.replaces + " (" + mode_name(mode) +
                             (mode == Mode::kFrozen ? " " + std::to_string(frozen) : "") + ")";
    const Result f = run(row.fast, values, mode, frozen, row.backward);
    const Result r = run(row.reference, values, mode, frozen, row.backward);
    expect_close(f.value, r.value, what + ": value");
    ASSERT_EQ(f.grads.size(), r.grads.size());
    for (std::size_t i = 0; i < f.grads.size(); ++i)
      expect_close(f.grads[i], r.grads[i], what + ": gradient of input " + std::to_string(i));
  }
}

/// The row's kernel and index as a test name of letters, digits and underscores.
std::string row_name(const ::testing::TestParamInfo<Row>& info) {
  std::string name;
  for (char c : info.param.kernel) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name + "_" + std::to_string(info.index);
}

INSTANTIATE_TEST_SUITE_P(Rows, FastKernelTable, ::testing::ValuesIn(rows()), row_name);

// ---- cases a row cannot express --------------------------------------------------------------

TEST(FastKernels, FastLinearThrowsAsLinear) {
  const Tensor x = Tensor::zeros({2, 3}), w = Tensor::zeros({4, 5});
  for (const Tensor& weight : {w, Tensor::zeros({5})}) {
    std::string fast_error, ref_error;
    try {
      fast_linear(x, weight);
    } catch (const std::invalid_argument& e) {
      fast_error = e.what();
    }
    try {
      linear(x, weight);
    } catch (const std::invalid_argument& e) {
      ref_error = e.what();
    }
    EXPECT_FALSE(fast_error.empty());
    EXPECT_EQ(fast_error, ref_error);
  }
}

TEST(FastKernels, SumOfSquaresOfHugeAndTinyBlocks) {
  // The first block holds a huge value and the tail only tiny ones (their block sums leave
  // [1e-30, 1e30] and are summed element by element), against the sum in double.
  Rng rng(9);
  Array x = Tensor::randn({2500}, 1, rng).value();
  auto sum_in_double = [](const Array& a) {
    double total = 0;
    for (double v : a) total += v * v;
    return total;
  };
  x(17) = 1e20;
  for (std::size_t i = 2048; i < 2500; ++i) x(i) *= 1e-20;
  EXPECT_NEAR(sum_of_squares(x), sum_in_double(x), 1e-12 * sum_in_double(x));
  Array tail = xt::view(x, xt::range(2048, 2500));
  EXPECT_NEAR(sum_of_squares(tail), sum_in_double(tail), 1e-12 * sum_in_double(tail));
  EXPECT_GT(sum_of_squares(tail), 0.0);
  EXPECT_EQ(sum_of_squares(Array::from_shape({0})), 0.0);
}

TEST(FastKernels, SoftmaxRowsWithANaNGivesNaNAndAFullyMaskedRowGivesZeros) {
  // Rows: [NaN, 1, 2], [NaN, NaN, NaN], [NaN, -inf, -inf], [-inf, -inf, -inf], [1, 2, 3]; and a
  // value that overflows exp without the max shift.
  const Array x = {
      {kNaN, 1, 2}, {kNaN, kNaN, kNaN}, {kNaN, -kInf, -kInf}, {-kInf, -kInf, -kInf}, {1, 800, 3}};
  const Tensor leaf(x, true);
  const Tensor reference = softmax(leaf);
  sum(reference).backward();
  expect_close(softmax_rows(x), reference.value(), "softmax_rows");
  for (const Array& y : {reference.value(), softmax_rows(x)}) {
    for (std::size_t r = 0; r < 3; ++r)
      for (std::size_t j = 0; j < 3; ++j) EXPECT_TRUE(std::isnan(y(r, j))) << "row " << r;
    for (std::size_t j = 0; j < 3; ++j) EXPECT_EQ(y(3, j), 0.0);  // fully -inf: zeros
    EXPECT_NEAR(y(4, 0) + y(4, 1) + y(4, 2), 1.0, 1e-15);
  }
  for (std::size_t j = 0; j < 3; ++j) EXPECT_EQ(leaf.grad()(3, j), 0.0);  // and zero gradient
}

}  // namespace

namespace {

TEST(FastKernels, TopkDecodeKeepsTopkRelusEntriesOnTiesNaNAndInfinities) {
  // Ties at the k-th value (the lower index wins), a NaN (above every number), -inf entries,
  // a row with fewer than k positive entries and an all-negative row.
  const Array pre = {{1, 2, 2, 2, 0.5},
                     {0.5, kNaN, 3, -1, 3},
                     {-kInf, 4, -kInf, -kInf, 1},
                     {0.3, -2, -1, -3, -4},
                     {-1, -2, -3, -4, -5}};
  Rng rng(4);
  const Tensor W = Tensor::randn({5, 3}, 1, rng);
  const Tensor reference = matmul(topk_relu(Tensor(pre), 2), W);
  std::vector<std::uint32_t> active;
  const Tensor fast = topk_decode(Tensor(pre), 2, W, &active);
  for (std::size_t r = 0; r < 5; ++r)
    for (std::size_t d = 0; d < 3; ++d) {
      if (r == 1) {
        EXPECT_TRUE(std::isnan(fast.value()(r, d)));  // the NaN is kept, as by topk_relu
        EXPECT_TRUE(std::isnan(reference.value()(r, d)));
      } else {
        EXPECT_NEAR(fast.value()(r, d), reference.value()(r, d), 1e-12) << r << ", " << d;
      }
    }
  // kept: row 0 latents 1, 2 (the tie at 2 goes to the lower indices); row 1 the NaN (1) and 2;
  // row 2 latents 1 and 4; row 3 latent 0 only (the other is not > 0); row 4 none
  EXPECT_EQ(active, (std::vector<std::uint32_t>{1, 2, 1, 2, 1, 4, 0}));
}

TEST(FastKernels, TopkDecodeThrowsOnBadShapesOrK) {
  const Tensor pre = Tensor::zeros({2, 4});
  EXPECT_THROW(topk_decode(pre, 0, Tensor::zeros({4, 3})), std::invalid_argument);
  EXPECT_THROW(topk_decode(pre, 5, Tensor::zeros({4, 3})), std::invalid_argument);
  EXPECT_THROW(topk_decode(pre, 2, Tensor::zeros({3, 3})), std::invalid_argument);
  EXPECT_THROW(topk_decode(Tensor::zeros({4}), 2, Tensor::zeros({4, 3})), std::invalid_argument);
}

}  // namespace
