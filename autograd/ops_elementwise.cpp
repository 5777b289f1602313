// Elementwise ops: binary add/sub/mul/div with NumPy broadcasting, their scalar forms, and the
// unary functions neg, pow, exp, log, sigmoid, silu.
//
// Broadcasting (as NumPy): shapes are aligned at the right; each pair of extents must be equal
// or one of them 1; the output takes the larger. In the backward pass every output element sends
// its gradient to the input element it was computed from, so an input that was broadcast
// receives the SUM of the gradients of all the output elements that reused it
// ("reduce-to-shape").

#include <cmath>

#include <xtensor/xmath.hpp>

#include "autograd/ops.hpp"
#include "autograd/ops_util.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

namespace {

using detail::numel;

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

/// Strides of `in` (row-major) seen from the output's axes: 0 where `in` is broadcast.
std::vector<std::size_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<std::size_t> strides(out.size(), 0);
  std::size_t stride = 1;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const std::size_t axis_in = in.size() - 1 - i;
    const std::size_t axis_out = out.size() - 1 - i;
    strides[axis_out] = in[axis_in] == 1 ? 0 : stride;
    stride *= in[axis_in];
  }
  return strides;
}

/// True when `small` equals the trailing axes of `out` (e.g. (d) against (B, T, d)).
bool is_trailing(const Shape& small, const Shape& out) {
  if (small.size() > out.size()) return false;
  return std::equal(small.begin(), small.end(), out.end() - small.size());
}

/// Calls f(i, ia, ib) for every output flat index i with the flat indices ia, ib of the input
/// elements it is made from. Fast paths for equal shapes and for a trailing-rows operand.
template <class F>
void for_each_broadcast(const Shape& out, const Shape& sa, const Shape& sb, F&& f) {
  const std::size_t n = numel(out);
  if (sa == out && sb == out) {
    for (std::size_t i = 0; i < n; ++i) f(i, i, i);
    return;
  }
  if (sa == out && is_trailing(sb, out)) {
    const std::size_t nb = numel(sb);
    for (std::size_t i = 0; i < n; ++i) f(i, i, i % nb);
    return;
  }
  if (sb == out && is_trailing(sa, out)) {
    const std::size_t na = numel(sa);
    for (std::size_t i = 0; i < n; ++i) f(i, i % na, i);
    return;
  }
  // General case: walk the output with an odometer, moving each input by its own strides.
  const std::size_t nd = out.size();
  const auto stride_a = broadcast_strides(sa, out);
  const auto stride_b = broadcast_strides(sb, out);
  std::vector<std::size_t> index(nd, 0);
  std::size_t ia = 0, ib = 0;
  for (std::size_t i = 0; i < n; ++i) {
    f(i, ia, ib);
    for (std::size_t d = nd; d-- > 0;) {  // increment the last axis, carrying leftwards
      ++index[d];
      ia += stride_a[d];
      ib += stride_b[d];
      if (index[d] < out[d]) break;
      ia -= stride_a[d] * out[d];
      ib -= stride_b[d] * out[d];
      index[d] = 0;
    }
  }
}

/// A broadcasting binary op. `forward(x, y)` gives the output element; `backward` receives
/// (g, x, y) and returns the pair (d out/dx * g, d out/dy * g) for one element.
template <class Forward, class Backward>
Tensor binary_op(const char* name, const Tensor& a, const Tensor& b, Forward forward,
                 Backward backward) {
  const Shape sa = a.shape(), sb = b.shape();
  const Shape so = broadcast_shape(sa, sb, name);
  Array out = detail::empty_array(so);
  {
    const Scalar* x = a.value().data();
    const Scalar* y = b.value().data();
    Scalar* z = out.data();
    for_each_broadcast(so, sa, sb, [&](std::size_t i, std::size_t ia, std::size_t ib) {
      z[i] = forward(x[ia], y[ib]);
    });
  }
  const bool track = needs_grad({&a, &b});
  Tensor result = detail::make_output(std::move(out), track);
  if (track) {
    tape().record(name, result, [a, b, sa, sb, so, backward](const Array& grad) {
      const bool need_a = a.requires_grad(), need_b = b.requires_grad();
      const Scalar* x = a.value().data();
      const Scalar* y = b.value().data();
      const Scalar* g = grad.data();
      if (sa == so && sb == so) {  // no broadcasting: each gradient element is written once
        const std::size_t n = grad.size();
        Array ga = detail::empty_array(sa), gb = detail::empty_array(sb);
        for (std::size_t i = 0; i < n; ++i) {  // both, without branches: the loop vectorizes
          const auto [da, db] = backward(g[i], x[i], y[i]);
          ga.data()[i] = da;
          gb.data()[i] = db;
        }
        if (need_a) accumulate_grad(a, std::move(ga));
        if (need_b) accumulate_grad(b, std::move(gb));
        return;
      }
      // Zeros first: a broadcast input adds up several output elements (+= below). An input
      // that does not require grad gets no array at all.
      Array ga = need_a ? Array(sa, Scalar(0)) : Array();
      Array gb = need_b ? Array(sb, Scalar(0)) : Array();
      Scalar* pa = ga.data();
      Scalar* pb = gb.data();
      for_each_broadcast(so, sa, sb, [&](std::size_t i, std::size_t ia, std::size_t ib) {
        const auto [da, db] = backward(g[i], x[ia], y[ib]);
        if (need_a) pa[ia] += da;  // += : a broadcast element collects every use
        if (need_b) pb[ib] += db;
      });
      if (need_a) accumulate_grad(a, std::move(ga));
      if (need_b) accumulate_grad(b, std::move(gb));
    });
  }
  return result;
}

/// An elementwise unary op. `forward(x)` gives y; `derivative(x, y)` gives dy/dx.
template <class Forward, class Derivative>
Tensor unary_op(const char* name, const Tensor& a, Forward forward, Derivative derivative) {
  const Array& x = a.value();
  Array out = detail::empty_array(a.shape());
  const std::size_t n = x.size();
  for (std::size_t i = 0; i < n; ++i) out.data()[i] = forward(x.data()[i]);
  const bool track = needs_grad({&a});
  Tensor result = detail::make_output(std::move(out), track);
  if (track) {
    // The closure must not hold the output Tensor (that would keep it alive forever), so it
    // reads y through a plain pointer: the tape record owns the output and runs this closure.
    const TensorImpl* y = result.impl();
    tape().record(name, result, [a, y, derivative](const Array& grad) {
      const Scalar* xv = a.value().data();
      const Scalar* yv = y->value.data();
      Array ga = detail::empty_array(a.shape());
      const std::size_t n = ga.size();
      for (std::size_t i = 0; i < n; ++i) ga.data()[i] = grad.data()[i] * derivative(xv[i], yv[i]);
      accumulate_grad(a, std::move(ga));
    });
  }
  return result;
}

using Pair = std::pair<Scalar, Scalar>;

}  // namespace

// ---- binary, broadcasting --------------------------------------------------------------------

// z = x + y:  dz/dx = 1, dz/dy = 1
// (The fast path's residual stream uses fast_add, autograd/kernels/reshape_add.cpp.)
Tensor add(const Tensor& a, const Tensor& b) {
  return binary_op("add", a, b, [](Scalar x, Scalar y) { return x + y; },
                   [](Scalar g, Scalar, Scalar) { return Pair{g, g}; });
}

// z = x - y:  dz/dx = 1, dz/dy = -1
Tensor sub(const Tensor& a, const Tensor& b) {
  return binary_op("sub", a, b, [](Scalar x, Scalar y) { return x - y; },
                   [](Scalar g, Scalar, Scalar) { return Pair{g, -g}; });
}

// z = x * y:  dz/dx = y, dz/dy = x
Tensor mul(const Tensor& a, const Tensor& b) {
  return binary_op("mul", a, b, [](Scalar x, Scalar y) { return x * y; },
                   [](Scalar g, Scalar x, Scalar y) { return Pair{g * y, g * x}; });
}

// z = x / y:  dz/dx = 1/y, dz/dy = -x/y^2
Tensor div(const Tensor& a, const Tensor& b) {
  return binary_op("div", a, b, [](Scalar x, Scalar y) { return x / y; },
                   [](Scalar g, Scalar x, Scalar y) { return Pair{g / y, -g * x / (y * y)}; });
}

// ---- unary -----------------------------------------------------------------------------------

// y = -x:  dy/dx = -1
Tensor neg(const Tensor& a) {
  return unary_op("neg", a, [](Scalar x) { return -x; }, [](Scalar, Scalar) { return Scalar(-1); });
}

// y = x + s:  dy/dx = 1
Tensor add(const Tensor& a, Scalar s) {
  return unary_op("add_scalar", a, [s](Scalar x) { return x + s; },
                  [](Scalar, Scalar) { return Scalar(1); });
}

// y = x * s:  dy/dx = s
Tensor mul(const Tensor& a, Scalar s) {
  return unary_op("mul_scalar", a, [s](Scalar x) { return x * s; },
                  [s](Scalar, Scalar) { return s; });
}

// y = x^p:  dy/dx = p x^(p-1)
Tensor pow(const Tensor& a, Scalar p) {
  return unary_op("pow", a, [p](Scalar x) { return std::pow(x, p); },
                  [p](Scalar x, Scalar) { return p * std::pow(x, p - 1); });
}

// y = e^x:  dy/dx = e^x = y
Tensor exp(const Tensor& a) {
  return unary_op("exp", a, [](Scalar x) { return std::exp(x); }, [](Scalar, Scalar y) { return y; });
}

// y = ln x:  dy/dx = 1/x
Tensor log(const Tensor& a) {
  return unary_op("log", a, [](Scalar x) { return std::log(x); },
                  [](Scalar x, Scalar) { return 1 / x; });
}

// y = 1 / (1 + e^-x):  dy/dx = y (1 - y)
Tensor sigmoid(const Tensor& a) {
  return unary_op("sigmoid", a, [](Scalar x) { return 1 / (1 + std::exp(-x)); },
                  [](Scalar, Scalar y) { return y * (1 - y); });
}

namespace {
/// s = sigmoid(x) = 1 / (1 + e^-x) of every element.
Array sigmoid_of(const Array& x) { return 1 / (1 + xt::exp(-x)); }
}  // namespace

// y = x * s(x) with s = sigmoid:  dy/dx = s + x s (1 - s)
Tensor silu(const Tensor& a) {
  const Array& x = a.value();
  Array y = sigmoid_of(x);
  const std::size_t n = x.size();
  for (std::size_t i = 0; i < n; ++i) y.data()[i] *= x.data()[i];  // x * s
  const bool track = needs_grad({&a});
  Tensor result = detail::make_output(std::move(y), track);
  if (track) {
    tape().record("silu", result, [a](const Array& grad) {
      const Array& x = a.value();
      Array ga = sigmoid_of(x);  // s, turned into the gradient in place
      const std::size_t n = x.size();
      for (std::size_t i = 0; i < n; ++i) {
        const Scalar s = ga.data()[i], xi = x.data()[i];
        ga.data()[i] = grad.data()[i] * (s + xi * s * (1 - s));
      }
      accumulate_grad(a, std::move(ga));
    });
  }
  return result;
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
