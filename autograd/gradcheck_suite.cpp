// The gradient-check suite: every op of ops.hpp on small random inputs, in double precision.
// Compiled only in the double library (glass_autograd_f64); see gradcheck_suite.hpp.

#if defined(GLASS_DOUBLE)

#include "autograd/scalar.hpp"  // declares the inline namespace glass::f64 first

#include "autograd/gradcheck_suite.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "autograd/gradcheck.hpp"
#include "autograd/kernels/kernels.hpp"
#include "autograd/ops.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

namespace {

using Inputs = std::vector<Tensor>;

/// One case: a name, how to make its inputs, and the function to check.
struct Case {
  std::string name;
  std::function<Inputs(Rng&)> make_inputs;
  GradcheckFn fn;
};

/// N(0, 1) leaf that requires grad.
Tensor rand_leaf(const Shape& shape, Rng& rng) { return Tensor::randn(shape, 1.0, rng, true); }

/// Leaf with values in [0.5, 1.5] (for log, div, pow).
Tensor positive_leaf(const Shape& shape, Rng& rng) {
  std::uniform_real_distribution<double> u(0.5, 1.5);
  Array a(shape);
  for (auto& x : a) x = u(rng);
  return Tensor(std::move(a), true);
}

std::vector<Case> make_cases() {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<Case> c;
  auto unary = [&](const std::string& name, Shape s, bool positive,
                   std::function<Tensor(const Tensor&)> f) {
    c.push_back(
        {name,
         [s, positive](Rng& r) { return Inputs{positive ? positive_leaf(s, r) : rand_leaf(s, r)}; },
         [f](const Inputs& in) { return f(in[0]); }});
  };
  auto binary = [&](const std::string& name, Shape sa, Shape sb, bool positive_b,
                    std::function<Tensor(const Tensor&, const Tensor&)> f) {
    c.push_back(
        {name,
         [sa, sb, positive_b](Rng& r) {
           return Inputs{rand_leaf(sa, r), positive_b ? positive_leaf(sb, r) : rand_leaf(sb, r)};
         },
         [f](const Inputs& in) { return f(in[0], in[1]); }});
  };

  // elementwise
  binary("add", {3, 4}, {3, 4}, false, [](auto& a, auto& b) { return add(a, b); });
  binary("add/broadcast_rows", {2, 3, 4}, {4}, false, [](auto& a, auto& b) { return add(a, b); });
  binary("add/broadcast_both", {2, 1, 4}, {3, 1}, false,
         [](auto& a, auto& b) { return add(a, b); });
  binary("sub/broadcast", {3, 1}, {1, 4}, false, [](auto& a, auto& b) { return sub(a, b); });
  binary("mul/broadcast", {2, 3, 4}, {3, 1}, false, [](auto& a, auto& b) { return mul(a, b); });
  binary("mul/same_tensor_twice", {3, 4}, {3, 4}, false, [](auto& a, auto&) { return mul(a, a); });
  binary("div/broadcast", {3, 4}, {4}, true, [](auto& a, auto& b) { return div(a, b); });
  unary("neg", {3, 4}, false, [](const Tensor& a) { return neg(a); });
  unary("scalar_ops", {3, 4}, false, [](const Tensor& a) { return ((a + 2.0) * 3.0 - 1.0) / 4.0; });
  unary("pow", {3, 4}, true, [](const Tensor& a) { return pow(a, 2.5); });
  unary("exp", {3, 4}, false, [](const Tensor& a) { return exp(a); });
  unary("log", {3, 4}, true, [](const Tensor& a) { return log(a); });
  unary("sigmoid", {3, 4}, false, [](const Tensor& a) { return sigmoid(a); });
  unary("silu", {3, 4}, false, [](const Tensor& a) { return silu(a); });
  unary("relu", {3, 4}, false, [](const Tensor& a) { return relu(a); });
  unary("tanh", {3, 4}, false, [](const Tensor& a) { return tanh(a); });
  binary("silu_mul", {3, 4}, {3, 4}, false,
         [](auto& gate, auto& up) { return silu_mul(gate, up); });
  binary("silu_mul/same_tensor", {3, 4}, {3, 4}, false,
         [](auto& a, auto&) { return silu_mul(a, a); });
  // reductions
  unary("sum", {3, 4}, false, [](const Tensor& a) { return sum(a); });
  unary("mean", {3, 4}, false, [](const Tensor& a) { return mean(a); });
  unary("sum/axis", {2, 3, 4}, false, [](const Tensor& a) { return sum(a, 1); });
  unary("mean/axis_keepdim", {2, 3, 4}, false, [](const Tensor& a) { return mean(a, -1, true); });
  // shape
  unary("reshape", {2, 3, 4}, false, [](const Tensor& a) { return reshape(a, {4, 6}); });
  unary("transpose", {2, 3, 4}, false, [](const Tensor& a) { return transpose(a, 0, 2); });
  unary("permute", {2, 3, 4, 5}, false, [](const Tensor& a) { return permute(a, {2, 0, 3, 1}); });
  unary("permute/last_axis_kept", {2, 3, 4, 5}, false, [](const Tensor& a) {
    return permute(a, {0, 2, 1, 3});
  });  // (B, T, H, D) -> (B, H, T, D)
  unary("slice", {3, 5}, false, [](const Tensor& a) { return slice(a, 1, 1, 4); });
  c.push_back({"concat",
               [](Rng& r) {
                 return Inputs{rand_leaf({2, 3}, r), rand_leaf({2, 1}, r), rand_leaf({2, 2}, r)};
               },
               [](const Inputs& in) { return concat(in, 1); }});
  // matrix products
  binary("matmul", {3, 4}, {4, 5}, false, [](auto& a, auto& b) { return matmul(a, b); });
  binary("matmul/batched", {2, 3, 4, 5}, {2, 3, 5, 2}, false,
         [](auto& a, auto& b) { return matmul(a, b); });
  binary("matmul/shared_b", {2, 3, 4}, {4, 5}, false,
         [](auto& a, auto& b) { return matmul(a, b); });
  binary("matmul_nt", {2, 3, 4}, {2, 5, 4}, false,
         [](auto& a, auto& b) { return matmul_nt(a, b); });
  binary("matmul_nt/scaled", {2, 3, 4}, {2, 5, 4}, false,
         [](auto& a, auto& b) { return matmul_nt(a, b, Scalar(0.37)); });
  binary("linear", {2, 3, 4}, {5, 4}, false, [](auto& a, auto& b) { return linear(a, b); });
  // the fused attention (steps 5-8 as one op, what the model trains with): q (B, n, H, D),
  // k and v (B, m, H_kv, D). MHA with n = m = 36 (two blocks of 32 query rows); GQA (n_rep 2)
  // with n = 3 queries after start = 2 earlier positions.
  auto attention = [&](const std::string& name, Shape sq, Shape skv) {
    c.push_back(
        {name,
         [sq, skv](Rng& r) {
           return Inputs{rand_leaf(sq, r), rand_leaf(skv, r), rand_leaf(skv, r)};
         },
         [](const Inputs& in) { return causal_attention(in[0], in[1], in[2], Scalar(0.37)); }});
  };
  attention("causal_attention", {1, 36, 2, 2}, {1, 36, 2, 2});
  attention("causal_attention/start", {2, 3, 4, 3}, {2, 5, 2, 3});
  // neural-network ops
  c.push_back({"embedding",
               [](Rng& r) {
                 return Inputs{rand_leaf({6, 3}, r)};
               },
               [](const Inputs& in) {
                 Ids ids = {{0, 2, 2, 5}, {1, 0, 4, 2}};  // repeated ids accumulate
                 return embedding(in[0], ids);
               }});
  unary("masked_fill", {2, 3, 4}, false, [](const Tensor& a) {
    return masked_fill(a, causal_mask(3, 4, 0), -5.0);  // mask (3, 4) broadcast over the batch
  });
  unary("softmax", {3, 5}, false, [](const Tensor& a) { return softmax(a); });
  unary("softmax/masked_rows", {2, 3, 5}, false, [inf](const Tensor& a) {
    Mask m = causal_mask(3, 5, 1);
    for (std::size_t j = 0; j < 5; ++j) m(2, j) = true;  // one fully masked row -> zeros
    return softmax(masked_fill(a, m, -inf));
  });
  unary("log_softmax", {3, 5}, false, [](const Tensor& a) { return log_softmax(a); });
  unary("cross_entropy", {2, 3, 5}, false, [](const Tensor& a) {
    Ids targets = {{1, 4, -1}, {0, -1, 3}};  // -1 = ignore_index: averaged over the other 4
    return cross_entropy(a, targets, -1);
  });
  binary("rms_norm", {2, 3, 6}, {6}, false, [](auto& x, auto& g) { return rms_norm(x, g, 1e-5); });
  unary("rope/start_5", {2, 3, 2, 4}, false, [](const Tensor& a) { return rope(a, 5, 10000.0); });
  // k = 3 of 7 per row, some rows with fewer than 3 positive entries (ReLU after TopK)
  unary("topk_relu", {2, 4, 7}, false, [](const Tensor& a) { return topk_relu(a, 3); });
  unary("topk_relu/k_equals_n", {3, 4}, false, [](const Tensor& a) { return topk_relu(a, 4); });
  unary("repeat_kv", {2, 2, 3, 4}, false, [](const Tensor& a) { return repeat_kv(a, 2); });
  // the fast path's single ops (kernels.hpp); "twice" uses an input in two places, so that its
  // second gradient is written into the first (the buffer-reuse paths)
  binary("fast_linear", {2, 3, 4}, {5, 4}, false,
         [](auto& a, auto& b) { return fast_linear(a, b); });
  binary("fast_linear/twice", {2, 3, 4}, {5, 4}, false,
         [](auto& a, auto& b) { return fast_linear(a, b) * fast_linear(a * 2.0, b); });
  binary("fast_rms_norm", {2, 3, 6}, {6}, false,
         [](auto& x, auto& g) { return fast_rms_norm(x, g, 1e-5); });
  binary("fast_rms_norm/residual", {2, 3, 6}, {6}, false,
         [](auto& x, auto& g) { return fast_add(x, fast_rms_norm(x, g, 1e-5)); });
  unary("fast_rope/start_5", {2, 3, 2, 4}, false,
        [](const Tensor& a) { return fast_rope(a, 5, 10000.0); });
  unary("fast_reshape", {2, 3, 4}, false, [](const Tensor& a) { return fast_reshape(a, {4, 6}); });
  binary("fast_add", {3, 4}, {3, 4}, false, [](auto& a, auto& b) { return fast_add(a, b); });
  binary("fast_add/same_tensor_twice", {3, 4}, {3, 4}, false,
         [](auto& a, auto&) { return fast_add(a, a); });
  return c;
}

}  // namespace

std::vector<OpCheckRow> run_gradcheck_suite(const std::string& only) {
  const std::vector<Case> cases = make_cases();
  std::vector<OpCheckRow> rows;
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const Case& c = cases[k];
    const bool selected = only.empty() || c.name == only || c.name.rfind(only + "/", 0) == 0;
    if (!selected) continue;
    Rng rng(1000 + k);  // each case has its own fixed inputs
    const Inputs inputs = c.make_inputs(rng);
    const GradcheckReport report = gradcheck(c.fn, inputs);
    OpCheckRow row;
    row.op = c.name;
    for (std::size_t i = 0; i < inputs.size(); ++i)
      row.shapes += (i ? ", " : "") + shape_str(inputs[i].shape());
    row.max_abs_error = report.max_abs_error;
    row.max_rel_error = report.max_rel_error;
    row.passed = report.passed;
    rows.push_back(row);
  }
  if (rows.empty()) {
    std::string valid;
    for (const Case& c : cases) valid += (valid.empty() ? "" : ", ") + c.name;
    throw std::invalid_argument("gradcheck: unknown op '" + only + "'; valid names: " + valid);
  }
  return rows;
}

}  // namespace GLASS_PRECISION
}  // namespace glass

#endif  // GLASS_DOUBLE
