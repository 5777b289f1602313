// Elementwise ops: binary add/sub/mul/div with NumPy broadcasting, their scalar forms, and the
// unary functions neg, pow, exp, log, sigmoid, silu, relu, tanh. Each forward pass is one xtensor expression
// and each backward pass the derivative written as one, right under it.
//
// Broadcasting (as NumPy): shapes are aligned at the right; each pair of extents must be equal
// or one of them 1; the output takes the larger. xtensor's expressions broadcast the same way.
// In the backward pass every output element sends its gradient to the input element it was
// computed from, so an input that was broadcast receives the SUM of the gradients of all the
// output elements that reused it ("reduce-to-shape", sum_to_shape below).

#include <cmath>

#include <xtensor/xmath.hpp>
#include <xtensor/xreducer.hpp>

#include "autograd/ops.hpp"
#include "autograd/ops_util.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

namespace {

/// The broadcast shape of a and b; throws std::invalid_argument naming `op` and the shapes.
Shape broadcast_shape(const Shape& a, const Shape& b, const char* op) {
  const std::size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (std::size_t i = 0; i < n; ++i) {
    // Extent i counted from the right; missing axes act as 1.
    const std::size_t ea = i < a.size() ? a[a.size() - 1 - i] : 1;
    const std::size_t eb = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (ea != eb && ea != 1 && eb != 1) {
      throw std::invalid_argument(std::string(op) + ": shapes " + shape_str(a) + " and " +
                                  shape_str(b) + " cannot be broadcast together");
    }
    out[n - 1 - i] = ea == 1 ? eb : ea;
  }
  return out;
}

/// Reduce-to-shape: g (the output's shape) summed over the axes along which an input of shape
/// `shape` was broadcast: the leading axes it lacks, and its extents of 1 that the output
/// stretched. As NumPy: g.sum(axis=axes, keepdims=True).reshape(shape).
Array sum_to_shape(Array g, const Shape& shape) {
  const std::size_t lead = g.dimension() - shape.size();
  std::vector<std::size_t> axes;
  for (std::size_t d = 0; d < g.dimension(); ++d)
    if (d < lead || (shape[d - lead] == 1 && g.shape()[d] != 1)) axes.push_back(d);
  if (!axes.empty()) g = xt::sum(g, axes, xt::evaluation_strategy::immediate);
  g.reshape(shape);
  return g;
}

/// Sends one input its share of the gradient: `d` is d(loss)/d(output) * d(output)/d(input), of
/// the output's shape, summed back to the input's shape. Evaluated only when t needs it.
template <class E>
void send(const Tensor& t, E&& d) {
  if (t.requires_grad()) accumulate_grad(t, sum_to_shape(Array(std::forward<E>(d)), t.shape()));
}

/// Wraps a binary op's output; records `backward` when a or b needs a gradient.
Tensor binary_result(const char* name, const Tensor& a, const Tensor& b, Array out,
                     BackwardFn backward) {
  const bool track = needs_grad({&a, &b});
  Tensor result = detail::make_output(std::move(out), track);
  if (track) tape().record(name, result, std::move(backward));
  return result;
}

/// Wraps a unary op's output; records `backward(grad, y)` when a needs a gradient. The closure
/// must not hold the output Tensor (that would keep it alive forever), so it reads y through a
/// plain pointer: the tape record owns the output and runs the closure.
template <class Backward>
Tensor unary_result(const char* name, const Tensor& a, Array out, Backward backward) {
  const bool track = needs_grad({&a});
  Tensor result = detail::make_output(std::move(out), track);
  if (track) {
    const TensorImpl* y = result.impl();
    tape().record(name, result, [y, backward](const Array& grad) { backward(grad, y->value); });
  }
  return result;
}

}  // namespace

// ---- binary, broadcasting --------------------------------------------------------------------

// z = x + y:  dz/dx = 1, dz/dy = 1
// (The fast path's residual stream uses fast_add, autograd/kernels/reshape_add.cpp.)
Tensor add(const Tensor& a, const Tensor& b) {
  broadcast_shape(a.shape(), b.shape(), "add");
  return binary_result("add", a, b, a.value() + b.value(), [a, b](const Array& g) {
    send(a, g);
    send(b, g);
  });
}

// z = x - y:  dz/dx = 1, dz/dy = -1
Tensor sub(const Tensor& a, const Tensor& b) {
  broadcast_shape(a.shape(), b.shape(), "sub");
  return binary_result("sub", a, b, a.value() - b.value(), [a, b](const Array& g) {
    send(a, g);
    send(b, -g);
  });
}

// z = x * y:  dz/dx = y, dz/dy = x
Tensor mul(const Tensor& a, const Tensor& b) {
  broadcast_shape(a.shape(), b.shape(), "mul");
  return binary_result("mul", a, b, a.value() * b.value(), [a, b](const Array& g) {
    send(a, g * b.value());
    send(b, g * a.value());
  });
}

// z = x / y:  dz/dx = 1/y, dz/dy = -x/y^2
Tensor div(const Tensor& a, const Tensor& b) {
  broadcast_shape(a.shape(), b.shape(), "div");
  return binary_result("div", a, b, a.value() / b.value(), [a, b](const Array& g) {
    const Array& x = a.value();
    const Array& y = b.value();
    send(a, g / y);
    send(b, -g * x / (y * y));
  });
}

// ---- unary -----------------------------------------------------------------------------------

// y = -x:  dy/dx = -1
Tensor neg(const Tensor& a) {
  return unary_result("neg", a, -a.value(),
                      [a](const Array& g, const Array&) { accumulate_grad(a, Array(-g)); });
}

// y = x + s:  dy/dx = 1
Tensor add(const Tensor& a, Scalar s) {
  return unary_result("add_scalar", a, a.value() + s,
                      [a](const Array& g, const Array&) { accumulate_grad(a, g); });
}

// y = x * s:  dy/dx = s
Tensor mul(const Tensor& a, Scalar s) {
  return unary_result("mul_scalar", a, a.value() * s,
                      [a, s](const Array& g, const Array&) { accumulate_grad(a, Array(g * s)); });
}

// y = x^p:  dy/dx = p x^(p-1)
Tensor pow(const Tensor& a, Scalar p) {
  return unary_result("pow", a, xt::pow(a.value(), p), [a, p](const Array& g, const Array&) {
    accumulate_grad(a, Array(g * p * xt::pow(a.value(), p - 1)));
  });
}

// y = e^x:  dy/dx = e^x = y
Tensor exp(const Tensor& a) {
  return unary_result("exp", a, xt::exp(a.value()),
                      [a](const Array& g, const Array& y) { accumulate_grad(a, Array(g * y)); });
}

// y = ln x:  dy/dx = 1/x
Tensor log(const Tensor& a) {
  return unary_result("log", a, xt::log(a.value()), [a](const Array& g, const Array&) {
    accumulate_grad(a, Array(g / a.value()));
  });
}

// y = 1 / (1 + e^-x):  dy/dx = y (1 - y)
Tensor sigmoid(const Tensor& a) {
  return unary_result(
      "sigmoid", a, 1 / (1 + xt::exp(-a.value())),
      [a](const Array& g, const Array& y) { accumulate_grad(a, Array(g * y * (1 - y))); });
}

// y = x * s(x) with s = sigmoid(x):  dy/dx = s + x s (1 - s)
Tensor silu(const Tensor& a) {
  const Array& x = a.value();
  return unary_result("silu", a, x * (1 / (1 + xt::exp(-x))), [a](const Array& g, const Array&) {
    const Array& x = a.value();
    const Array s = 1 / (1 + xt::exp(-x));
    accumulate_grad(a, Array(g * (s + x * s * (1 - s))));
  });
}

// y = max(x, 0):  dy/dx = 1 where x > 0, else 0 (0 at x = 0, as PyTorch)
Tensor relu(const Tensor& a) {
  return unary_result("relu", a, xt::maximum(a.value(), Scalar(0)),
                      [a](const Array& g, const Array&) {
                        accumulate_grad(a, Array(xt::where(a.value() > 0, g, Scalar(0))));
                      });
}

// y = tanh x:  dy/dx = 1 - tanh^2 x = 1 - y^2
Tensor tanh(const Tensor& a) {
  return unary_result("tanh", a, xt::tanh(a.value()), [a](const Array& g, const Array& y) {
    accumulate_grad(a, Array(g * (1 - y * y)));
  });
}

// ---- operators -------------------------------------------------------------------------------

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator-(const Tensor& a) { return neg(a); }
Tensor operator+(const Tensor& a, Scalar s) { return add(a, s); }
Tensor operator-(const Tensor& a, Scalar s) { return add(a, -s); }
Tensor operator*(const Tensor& a, Scalar s) { return mul(a, s); }
Tensor operator*(Scalar s, const Tensor& a) { return mul(a, s); }
Tensor operator/(const Tensor& a, Scalar s) { return mul(a, Scalar(1) / s); }

}  // namespace GLASS_PRECISION
}  // namespace glass
