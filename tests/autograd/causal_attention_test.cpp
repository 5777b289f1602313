// causal_attention in float: values and gradients against PyTorch, and the error messages.
// (Gradient checks are in causal_attention_f64_test; the equality with the reference steps is a
// row of fast_kernels_f64_test.)

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/kernels/kernels.hpp"
#include "autograd/ops.hpp"

namespace {

using namespace glass;

/// x[i] = sin(a * i + b) over the flat index i: inputs both sides can write down exactly.
Array sin_array(const Shape& shape, double a, double b) {
  Array x = Array::from_shape(shape);
  for (std::size_t i = 0; i < x.size(); ++i) x.data()[i] = static_cast<Scalar>(std::sin(a * i + b));
  return x;
}

void expect_values(const Array& got, const std::vector<double>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got.data()[i], want[i], 2e-6) << what << " at flat index " << i;
}

// Reference values from PyTorch 1.13 (Debian's python3-torch), float64:
//   B, n, m, H, Hkv, D = 1, 3, 5, 4, 2, 2; start = m - n = 2; scale = 0.8
//   f = lambda shape, a, b: torch.tensor([sin(a*i + b) for i in range(prod(shape))]).reshape(shape)
//   q = f((B,n,H,D), 0.7, 0.1); k = f((B,m,Hkv,D), 1.3, 0.4); v = f((B,m,Hkv,D), 0.9, -0.2)
//   R = f((B,n,H,D), 0.5, 0.3)                       (all with requires_grad except R)
//   qh = q.transpose(1,2); kh, vh = k, v .transpose(1,2).repeat_interleave(H // Hkv, 1)
//   mask = torch.ones(n, m, dtype=bool).tril(diagonal=start)          # True = allowed
//   s = (qh @ kh.transpose(-2,-1)) * scale
//   out = (torch.softmax(s.masked_fill(~mask, -inf), -1) @ vh).transpose(1,2)
//   (out * R).sum().backward()        -> out, q.grad, k.grad, v.grad flattened below (%.8f)
TEST(CausalAttention, MatchesPyTorch) {
  const Tensor q(sin_array({1, 3, 4, 2}, 0.7, 0.1), true);
  const Tensor k(sin_array({1, 5, 2, 2}, 1.3, 0.4), true);
  const Tensor v(sin_array({1, 5, 2, 2}, 0.9, -0.2), true);
  const Tensor R(sin_array({1, 3, 4, 2}, 0.5, 0.3));
  const Tensor out = causal_attention(q, k, v, 0.8f);
  sum(out * R).backward();
  expect_values(out.value(),
                {-0.05991535, 0.17441524, -0.13505131, 0.31640529,  0.23788165,  0.11251481,
                 0.57531482,  0.34273064, -0.10839840, -0.02306010, -0.19882815, 0.18076011,
                 0.04748032,  0.06954076, 0.37434104,  0.34883153,  0.03093526,  0.06498702,
                 0.01071981,  0.13069599, 0.03657003,  -0.03926894, 0.09995596,  0.01710838},
                "out");
  expect_values(q.grad(),
                {0.07249596,  -0.07603365, 0.10737717,  -0.04733223, -0.19462143, -0.17600453,
                 0.09110220,  0.13458726,  0.15004104,  -0.03555169, -0.05445241, -0.07932193,
                 -0.07057083, -0.03086594, -0.22988543, -0.32603471, -0.08458699, 0.05354091,
                 -0.05327289, -0.02723257, 0.07873926,  -0.05548242, -0.00415996, 0.19819472},
                "grad q");
  expect_values(k.grad(), {0.10995886,  0.03102396,  -0.10000424, -0.21192237, -0.19360424,
                           -0.11158639, 0.17200641,  0.31382811,  -0.02488136, -0.14975853,
                           -0.11063677, -0.04978730, 0.20118502,  0.28560948,  -0.04361343,
                           -0.02746857, -0.09265828, -0.05528852, 0.08224803,  -0.02464987},
                "grad k");
  expect_values(v.grad(), {0.23036388,  0.44218858,  0.29969395,  0.03539929,  0.05767613,
                           0.08726697,  -0.02022103, -0.06523502, 0.13984389,  0.04351904,
                           -0.20130290, -0.22113071, -0.00294354, -0.12777863, -0.13541889,
                           -0.03053841, 0.11233092,  0.00367904,  -0.20924616, -0.17716951},
                "grad v");
}

/// Expects std::invalid_argument whose message contains every string of `parts`.
void expect_error(const Shape& sq, const Shape& sk, const Shape& sv,
                  const std::vector<std::string>& parts) {
  const Tensor q(Array(sq, 0.0f)), k(Array(sk, 0.0f)), v(Array(sv, 0.0f));
  try {
    causal_attention(q, k, v, 1.0f);
    ADD_FAILURE() << "expected std::invalid_argument for q " << shape_str(sq);
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    for (const auto& part : parts)
      EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
  }
}

TEST(CausalAttention, ErrorsNameTheShapes) {
  expect_error({2, 3, 4}, {2, 3, 2, 4}, {2, 3, 2, 4}, {"causal_attention", "4-D", "(2, 3, 4)"});
  expect_error({2, 3, 4, 8}, {2, 3, 2, 8}, {2, 3, 2, 4}, {"same shape", "(2, 3, 2, 4)"});
  expect_error({2, 3, 4, 8}, {1, 3, 2, 8}, {1, 3, 2, 8}, {"batch", "(1, 3, 2, 8)"});
  expect_error({2, 3, 4, 8}, {2, 3, 2, 4}, {2, 3, 2, 4}, {"head_dim"});
  expect_error({2, 3, 4, 8}, {2, 3, 3, 8}, {2, 3, 3, 8}, {"4 query heads", "3 key/value heads"});
  expect_error({2, 3, 4, 8}, {2, 3, 0, 8}, {2, 3, 0, 8}, {"0 key/value heads"});
  expect_error({2, 5, 4, 8}, {2, 3, 2, 8}, {2, 3, 2, 8},
               {"more queries than keys", "(2, 5, 4, 8)"});
}

}  // namespace
