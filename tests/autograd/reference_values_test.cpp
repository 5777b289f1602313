// Reference values from PyTorch 1.13 (Debian python3-torch, float64), computed independently of
// this code by /usr/bin/python3 with the snippets quoted above each test and pasted as
// literals. Compiled in float (test_autograd, tolerance 2e-6 relative to the scale) and,
// through reference_values_f64_test.cpp, in double (tolerance 1e-12).

#include <gtest/gtest.h>

#include <limits>

#include <type_traits>

#include "autograd/kernels/kernels.hpp"
#include "autograd/ops.hpp"

namespace {

using namespace glass;

constexpr double kTol = std::is_same<Scalar, double>::value ? 1e-12 : 4e-6;

void expect_values(const Array& a, const std::vector<double>& expected, const char* what) {
  ASSERT_EQ(a.size(), expected.size()) << what;
  for (std::size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(a.data()[i], expected[i], kTol * (1 + std::abs(expected[i])))
        << what << " [" << i << "]";
}

// x = torch.tensor([[0.5, -1.0, 2.0, 0.0], [1.5, 0.25, -0.75, 3.0], [-2.0, 1.0, 0.5, -0.5]])
const std::vector<Scalar> kX = {0.5, -1.0, 2.0, 0.0, 1.5, 0.25, -0.75, 3.0, -2.0, 1.0, 0.5, -0.5};
// W = torch.arange(12.).reshape(3, 4) / 10, the weights of the projected losses below
std::vector<Scalar> weights() {
  std::vector<Scalar> w(12);
  for (int i = 0; i < 12; ++i) w[i] = Scalar(i) / 10;
  return w;
}

// loss = F.cross_entropy(x, torch.tensor([2, -100, 3]), ignore_index=-100); loss.backward()
TEST(ReferenceValues, CrossEntropyWithIgnoreIndexMatchesPyTorch) {
  const Tensor x = Tensor::from_vector(kX, {3, 4}, true);
  const Ids targets = {2, -100, 3};
  const Tensor loss = cross_entropy(x, targets, -100);
  EXPECT_NEAR(loss.item(), 1.2366638198131623, kTol * 2);
  loss.backward();
  expect_values(x.grad(),
                {0.07922235475748987, 0.017676896704374435, -0.14495003855691285,
                 0.048050787095048605, 0.0, 0.0, 0.0, 0.0, 0.013245131370676134, 0.2660355751981867,
                 0.1613587329319861, -0.44063943950084894},
                "dx");
}

// g = torch.tensor([1.0, 0.5, 2.0, -1.0]); y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * g
// (y * W).sum().backward()
TEST(ReferenceValues, RMSNormMatchesPyTorch) {
  const Tensor x = Tensor::from_vector(kX, {3, 4}, true);
  const Tensor g = Tensor::from_vector({1.0, 0.5, 2.0, -1.0}, {4}, true);
  const Tensor y = rms_norm(x, g, Scalar(1e-5));
  expect_values(y.value(),
                {0.4364341178689883, -0.4364341178689883, 3.4914729429519062, -0.0,
                 0.8705700339100337, 0.07254750282583615, -0.8705700339100337, -1.7411400678200675,
                 -1.705599528676056, 0.426399882169014, 0.852799764338028, 0.426399882169014},
                "y");
  sum(y * Tensor::from_vector(weights(), {3, 4})).backward();
  expect_values(
      x.grad(),
      {-0.062347256097428055, 0.16833792398175496, 0.09975826990547842, -0.261860470721393,
       0.40351627006956103, 0.17365571582281986, 0.6107738966145845, -0.06353749377091178,
       0.8062825114272268, 0.3217385439737104, 1.6745888536868547, -0.9070690657826298},
      "dx");
  expect_values(g.grad(),
                {-1.0162516093768315, 0.7527804671562637, 0.5143761662911945, 0.749758177088132},
                "dgain");
}

// F.silu(x); torch.log_softmax(x, -1); (log_softmax * W).sum().backward()
TEST(ReferenceValues, SiluAndLogSoftmaxMatchPyTorch) {
  const Tensor x = Tensor::from_vector(kX, {3, 4}, true);
  expect_values(silu(x).value(),
                {0.3112296656009273, -0.2689414213699951, 1.7615941559557646, 0.0,
                 1.2263617142904655, 0.14054412522144952, -0.24061597561845527, 2.8577223804672998,
                 -0.2384058440442351, 0.7310585786300049, 0.3112296656009273, -0.1887703343990727},
                "silu");
  tape().clear();
  const Tensor ls = log_softmax(x);
  expect_values(
      ls.value(),
      {-1.842349582389822, -3.342349582389822, -0.342349582389822, -2.342349582389822,
       -1.7704665576088487, -3.0204665576088487, -4.020466557608849, -0.2704665576088488,
       -3.6309780572365025, -0.6309780572365026, -1.1309780572365025, -2.1309780572365025},
      "log_softmax");
  sum(ls * Tensor::from_vector(weights(), {3, 4})).backward();
  expect_values(
      x.grad(),
      {-0.09506682570898786, 0.07878772395475069, -0.22605995373170462, 0.2423390554859417,
       0.025442218139640673, 0.39268739879569436, 0.5605219002383063, -0.9786515171736415,
       0.6993370015828614, -1.121870371506219, -0.22632637028309446, 0.648859740206452},
      "dx");
}

// The two ops of the recipe options (ReLU² MLP, logit soft-capping), from NumPy 1.24 (Debian
// python3-numpy, float64), /usr/bin/python3:
//   x = np.array(kX).reshape(3, 4); W = np.arange(12.).reshape(3, 4) / 10
//   np.tanh(x); W * (1 - np.tanh(x)**2)            (d/dx of (tanh(x) * W).sum())
//   np.maximum(x, 0)**2; W * 2 * np.maximum(x, 0)  (d/dx of (relu(x)**2 * W).sum())
// x[0][3] = 0 checks relu's gradient there: 0, as PyTorch.
TEST(ReferenceValues, TanhAndReluSquaredMatchNumPy) {
  const Tensor x = Tensor::from_vector(kX, {3, 4}, true);
  const Tensor t = tanh(x);
  expect_values(
      t.value(),
      {0.46211715726000974, -0.7615941559557649, 0.9640275800758169, 0.0, 0.9051482536448665,
       0.24491866240370913, -0.6351489523872873, 0.9950547536867305, -0.9640275800758169,
       0.7615941559557649, 0.46211715726000974, -0.46211715726000974},
      "tanh");
  sum(t * Tensor::from_vector(weights(), {3, 4})).backward();
  expect_values(x.grad(),
                {0.0, 0.041997434161402614, 0.014130164970632887, 0.3, 0.07228265556945934,
                 0.470007424403189, 0.35795148496879886, 0.006906226015808147, 0.05652065988253155,
                 0.3779769074526235, 0.7864477329659274, 0.8650925062625202},
                "dtanh");
  tape().clear();
  const Tensor y = Tensor::from_vector(kX, {3, 4}, true);
  const Tensor r2 = pow(relu(y), 2);
  expect_values(r2.value(), {0.25, 0.0, 4.0, 0.0, 2.25, 0.0625, 0.0, 9.0, 0.0, 1.0, 0.25, 0.0},
                "relu^2");
  sum(r2 * Tensor::from_vector(weights(), {3, 4})).backward();
  expect_values(y.grad(), {0.0, 0.0, 0.8, 0.0, 1.2, 0.25, 0.0, 4.2, 0.0, 1.8, 1.0, 0.0}, "drelu^2");
}

// Meta LLaMA's apply_rotary_emb (complex multiplication by torch.polar(1, (start+t) * freqs),
// freqs = 1 / 10000 ** (arange(0, D, 2) / D)) on x (1, 2, 1, 4), start = 3.
TEST(ReferenceValues, RopeMatchesLlamaReference) {
  const Tensor x = Tensor::from_vector({0.5, -1.0, 2.0, 0.25, 1.5, 0.75, -0.5, 1.0}, {1, 2, 1, 4});
  expect_values(rope(x, 3, 10000).value(),
                {-0.35387624024035547, 1.060552500630379, 1.9916011924473511, 0.3098785088422382,
                 -0.41286355981447187, -1.625436458609601, -0.5395893875171232, 0.9792054395676608},
                "rope");
}

// a (2, 2, 3) @ b (2, 3, 2); (y * R).sum().backward() with R = [[[1,2],[3,4]],[[-1,.5],[2,-2]]]
TEST(ReferenceValues, BatchedMatmulMatchesPyTorch) {
  const Tensor a =
      Tensor::from_vector({1, 2, 0.5, -1, 0, 3, 0.25, -0.5, 1, 2, 1, -1}, {2, 2, 3}, true);
  const Tensor b = Tensor::from_vector({1, 0, 0.5, -1, 2, 1, -1, 1, 0, 2, 1, 0.5}, {2, 3, 2}, true);
  const Tensor y = matmul(a, b);
  expect_values(y.value(), {3.0, -1.5, 5.0, 3.0, 0.75, -0.25, -3.0, 3.5}, "y");
  sum(y * Tensor::from_vector({1, 2, 3, 4, -1, 0.5, 2, -2}, {2, 2, 2})).backward();
  expect_values(a.grad(), {1.0, -1.5, 4.0, 3.0, -2.5, 10.0, 1.5, 1.0, -0.75, -4.0, -4.0, 1.0},
                "da");
  expect_values(b.grad(), {-2.0, -2.0, 2.0, 4.0, 9.5, 13.0, 3.75, -3.875, 2.5, -2.25, -3.0, 2.5},
                "db");
}

// The two tests below (silu_mul; softmax under a causal mask), whole command:
// /usr/bin/python3 -c "
// import torch, torch.nn.functional as F
// x = torch.tensor([[0.5, -1.0, 2.0, 0.0], [1.5, 0.25, -0.75, 3.0], [-2.0, 1.0, 0.5, -0.5]], dtype=torch.float64, requires_grad=True)
// u = torch.tensor([[1.0, 2.0, -0.5, 0.25], [-1.5, 0.5, 1.0, 2.0], [0.75, -1.0, 3.0, 0.5]], dtype=torch.float64, requires_grad=True)
// W = torch.arange(12., dtype=torch.float64).reshape(3, 4) / 10
// y = F.silu(x) * u; (y * W).sum().backward()
// print(y.flatten().tolist()); print(x.grad.flatten().tolist()); print(u.grad.flatten().tolist())
// x.grad = None
// m = torch.ones(3, 4, dtype=torch.bool).triu(1)
// w = torch.softmax(x.masked_fill(m, float('-inf')), -1); (w * W).sum().backward()
// print(w.flatten().tolist()); print(x.grad.flatten().tolist())"

// u = torch.tensor([[1.0, 2.0, -0.5, 0.25], [-1.5, 0.5, 1.0, 2.0], [0.75, -1.0, 3.0, 0.5]])
// (x, u float64 leaves); y = F.silu(x) * u; (y * W).sum().backward()
TEST(ReferenceValues, SiluMulMatchesPyTorch) {
  const Tensor x = Tensor::from_vector(kX, {3, 4}, true);
  const Tensor u = Tensor::from_vector(
      {1.0, 2.0, -0.5, 0.25, -1.5, 0.5, 1.0, 2.0, 0.75, -1.0, 3.0, 0.5}, {3, 4}, true);
  const Tensor y = silu_mul(x, u);
  expect_values(y.value(),
                {0.3112296656009273, -0.5378828427399902, -0.8807970779778823, 0.0,
                 -1.839542571435698, 0.07027206261072476, -0.24061597561845527, 5.7154447609345995,
                 -0.1788043830331763, -0.7310585786300049, 0.933688996802782, -0.09438516719953635},
                "y");
  sum(y * Tensor::from_vector(weights(), {3, 4})).backward();
  expect_values(x.grad(),
                {0.0, 0.014465897625702653, -0.10907842487848955, 0.0375, -0.6247764925794859,
                 0.15592750539254943, 0.09444003330194789, 1.523345748421237, -0.05447054927093729,
                 -0.8349034606843381, 2.2198835619079555, 0.14302134698354152},
                "d_gate");
  expect_values(u.grad(),
                {0.0, -0.026894142136999512, 0.3523188311911529, 0.0, 0.4905446857161862,
                 0.07027206261072476, -0.14436958537107317, 2.0004056663271097,
                 -0.19072467523538808, 0.6579527207670044, 0.3112296656009273, -0.20764736783898},
                "d_up");
}

// m = torch.ones(3, 4, dtype=torch.bool).triu(1)   (= causal_mask(3, 4): key j > query i)
// w = torch.softmax(x.masked_fill(m, float('-inf')), -1); (w * W).sum().backward()
TEST(ReferenceValues, SoftmaxUnderACausalMaskMatchesPyTorch) {
  const Tensor x = Tensor::from_vector(kX, {3, 4}, true);
  const Tensor w =
      softmax(masked_fill(x, causal_mask(3, 4), -std::numeric_limits<Scalar>::infinity()));
  expect_values(w.value(),
                {1.0, 0.0, 0.0, 0.0, 0.7772998611746911, 0.2227001388253088, 0.0, 0.0,
                 0.030058887569574023, 0.6037488961486258, 0.3661922162818002, 0.0},
                "w");
  sum(w * Tensor::from_vector(weights(), {3, 4})).backward();
  expect_values(x.grad(),
                {0.0, 0.0, 0.0, 0.0, -0.01731047869924968, 0.0173104786992497, 0.0, 0.0,
                 -0.004016268150572148, -0.02029401261687696, 0.024310280767449125, 0.0},
                "dx");
}

}  // namespace
