// Tensor::backward() frees the tape as it walks it (backward_and_release, autograd/backward_release.hpp): each record is
// dropped once its backward has run, and a fast kernel whose output nobody else holds may reuse
// that output's gradient buffer for an input's gradient (autograd/kernels/grad_buffers.hpp). These
// tests check that
// nothing a caller can still read changes: an intermediate tensor the caller holds keeps its
// gradient intact, and every input gets the same gradient whether or not the intermediate
// was held (i.e. whether the op reused the buffer or copied it).

#include <gtest/gtest.h>

#include <functional>

#include "autograd/kernels/kernels.hpp"
#include "autograd/ops.hpp"
#include "autograd/backward_release.hpp"
#include "autograd/tape.hpp"

namespace {

using namespace glass;

Tensor ramp(const Shape& shape, Scalar start, Scalar step, bool requires_grad) {
  std::vector<Scalar> values;
  std::size_t n = 1;
  for (auto s : shape) n *= s;
  for (std::size_t i = 0; i < n; ++i) values.push_back(start + step * Scalar(i));
  return Tensor::from_vector(values, shape, requires_grad);
}

// loss = sum(op(inputs) * weights) with weights a fixed ramp, so d loss / d op(inputs) = weights.
// Runs it twice: once holding the op's output (its gradient must then read back as `weights`,
// untouched by the op's backward) and once not holding it (the op may take the buffer over).
// The inputs' gradients must be identical in both runs.
void check_op(const std::string& what, const std::vector<Shape>& input_shapes,
              const std::function<Tensor(const std::vector<Tensor>&)>& op) {
  SCOPED_TRACE(what);
  auto make_inputs = [&] {
    std::vector<Tensor> inputs;
    for (std::size_t i = 0; i < input_shapes.size(); ++i)
      inputs.push_back(
          ramp(input_shapes[i], Scalar(-0.7) + Scalar(0.3) * Scalar(i), Scalar(0.05), true));
    return inputs;
  };
  std::vector<Tensor> held_inputs = make_inputs(), free_inputs = make_inputs();

  const Tensor held = op(held_inputs);
  const Tensor weights = ramp(held.shape(), Scalar(0.25), Scalar(-0.01), false);
  sum(held * weights).backward();
  ASSERT_TRUE(held.has_grad());
  EXPECT_EQ(held.grad(), weights.value()) << "the held intermediate's gradient was changed";

  // Not held: a temporary that is gone before backward() (a temporary inside the backward()
  // expression itself would live until its end, and count as held).
  const Tensor loss = sum(op(free_inputs) * weights);
  loss.backward();
  for (std::size_t i = 0; i < held_inputs.size(); ++i) {
    ASSERT_TRUE(free_inputs[i].has_grad());
    EXPECT_EQ(free_inputs[i].grad(), held_inputs[i].grad()) << "input " << i;
  }
  EXPECT_EQ(tape().size(), 0u);
}

TEST(BackwardRelease, OpsThatReuseTheGradientBufferLeaveHeldGradientsIntact) {
  check_op("fast_reshape", {{2, 3, 4}}, [](const std::vector<Tensor>& in) {
    return fast_reshape(in[0], {6, 4});
  });
  check_op("fast_add", {{3, 4}, {3, 4}},
           [](const std::vector<Tensor>& in) { return fast_add(in[0], in[1]); });
  check_op("fast_linear", {{2, 3, 4}, {5, 4}},
           [](const std::vector<Tensor>& in) { return fast_linear(in[0], in[1]); });
  check_op("fast_rms_norm", {{2, 3, 4}, {4}},
           [](const std::vector<Tensor>& in) { return fast_rms_norm(in[0], in[1], 1e-5f); });
  check_op("silu_mul", {{3, 7}, {3, 7}},  // 21 elements: one SIMD batch and a tail
           [](const std::vector<Tensor>& in) { return silu_mul(in[0], in[1]); });
  check_op("fast_rope", {{1, 3, 2, 4}},
           [](const std::vector<Tensor>& in) { return fast_rope(in[0], 1, 10000); });
  // The aliasing cases of the in-place paths: one tensor as both inputs (d_gate written over g
  // while d_up still reads it), and an op applied twice in a chain (the inner output's buffer is
  // taken in turn).
  check_op("silu_mul, one tensor as gate and up", {{3, 7}},
           [](const std::vector<Tensor>& in) { return silu_mul(in[0], in[0]); });
  check_op("fast_add, one tensor twice", {{3, 7}},
           [](const std::vector<Tensor>& in) { return fast_add(in[0], in[0]); });
  check_op("fast_rope of fast_rope", {{1, 3, 2, 4}}, [](const std::vector<Tensor>& in) {
    const Tensor r = fast_rope(in[0], 2, 100);
    return fast_add(r, fast_rope(r, 1, 100));
  });
}

TEST(BackwardRelease, FastAddSendsTheGradientToBothInputsInEveryOrder) {
  // z = a + b; loss = sum(z * w): dz/da = dz/db = w, plus whatever else reaches a or b.
  const Tensor w = Tensor::from_vector({1, 2, 3}, {3});
  {  // x + x: the same tensor twice gets 2w
    const Tensor x = Tensor::from_vector({5, 6, 7}, {3}, true);
    sum(fast_add(x, x) * w).backward();
    EXPECT_EQ(x.grad(), (Array{2, 4, 6}));
  }
  {  // only b requires grad
    const Tensor a = Tensor::from_vector({5, 6, 7}, {3});
    const Tensor b = Tensor::from_vector({1, 1, 1}, {3}, true);
    sum(fast_add(a, b) * w).backward();
    EXPECT_EQ(b.grad(), w.value());
    EXPECT_FALSE(a.has_grad());
  }
  {  // b already has a gradient when add's backward runs, a has none: y = (a + b) * w + 3b,
     // and b's own term is recorded after the add, so its backward runs first.
    const Tensor a = Tensor::from_vector({5, 6, 7}, {3}, true);
    const Tensor b = Tensor::from_vector({1, 1, 1}, {3}, true);
    const Tensor z = fast_add(a, b);
    sum(z * w + b * Scalar(3)).backward();
    EXPECT_EQ(a.grad(), w.value());
    EXPECT_EQ(b.grad(), (Array{4, 5, 6}));
  }
}

// A probe op: y = x, whose backward records whether the tape declared y's gradient disposable.
Tensor probe(const Tensor& x, bool& disposable_seen) {
  Tensor y(x.value(), true);
  tape().record("probe", y, [x, &disposable_seen](Array& grad) {
    disposable_seen = grad_disposable();
    accumulate_grad(x, grad);
  });
  return y;
}

TEST(BackwardRelease, GradientIsDisposableOnlyWhenNobodyElseHoldsTheOutput) {
  Tensor x = Tensor::from_vector({1, 2}, {2}, true);
  bool seen = false;
  const Tensor loss = sum(probe(x, seen));  // the probe's output is only on the tape now
  loss.backward();
  EXPECT_TRUE(seen) << "a temporary output's gradient is freed right after its backward";
  EXPECT_EQ(x.grad(), (Array{1, 1}));

  seen = true;
  const Tensor held = probe(x, seen);
  sum(held).backward();
  EXPECT_FALSE(seen) << "the caller holds the output: its gradient must stay";
  EXPECT_EQ(held.grad(), (Array{1, 1}));

  // Tape::backward (without clear) keeps every record: nothing is disposable, backward can
  // run again and gradients accumulate.
  seen = true;
  const Tensor y = sum(probe(x, seen));
  x.zero_grad();
  tape().backward(y);
  EXPECT_FALSE(seen);
  EXPECT_GT(tape().size(), 0u);
  tape().backward(y);
  EXPECT_EQ(x.grad(), (Array{3, 3})) << "the root's seed is 1 again, the rest accumulates";
  tape().clear();
  EXPECT_FALSE(grad_disposable());
}

TEST(BackwardRelease, TapeIsEmptyEvenWhenABackwardThrows) {
  const Tensor x = Tensor::from_vector({1, 2}, {2}, true);
  Tensor y(x.value(), true);
  tape().record("throws", y, [](Array&) { throw std::runtime_error("boom"); });
  EXPECT_THROW(sum(y).backward(), std::runtime_error);
  EXPECT_EQ(tape().size(), 0u);
  EXPECT_FALSE(grad_disposable());
}

}  // namespace
