// Reductions: sum and mean of all elements, or over one axis.
//
// Forward: xt::sum over the axis (NumPy's x.sum(axis, keepdims)); the mean divides by the
// reduced extent n. Backward: every input element contributed with weight 1 to the sum (1/n to
// the mean), so the output gradient is copied back along the reduced axis: NumPy's
// np.broadcast_to(np.expand_dims(g, axis), x.shape) * scale.

#include <xtensor/xbroadcast.hpp>
#include <xtensor/xmanipulation.hpp>
#include <xtensor/xreducer.hpp>

#include "autograd/ops.hpp"
#include "autograd/ops_util.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

namespace {

/// sum (scale = 1) or mean (scale = 1/count) of every element -> shape ().
Tensor reduce_all(const char* name, const Tensor& a, bool mean) {
  const Array& x = a.value();
  const std::size_t n = x.size();
  if (mean && n == 0)
    throw std::invalid_argument("mean: empty tensor of shape " + shape_str(a.shape()));
  const Scalar scale = mean ? Scalar(1) / static_cast<Scalar>(n) : Scalar(1);
  // Accumulated in double: long float sums lose digits.
  const double total = n == 0 ? 0.0 : xt::sum<double>(x, xt::evaluation_strategy::immediate)();
  const bool track = needs_grad({&a});
  Tensor result = detail::make_output(Array(Shape{}, static_cast<Scalar>(total * scale)), track);
  if (track) {
    tape().record(name, result, [a, scale](const Array& grad) {
      // d(sum)/dx_i = 1, d(mean)/dx_i = 1/n
      accumulate_grad(a, Array(a.shape(), grad() * scale));
    });
  }
  return result;
}

/// sum / mean over one axis.
Tensor reduce_axis(const char* name, const Tensor& a, int axis, bool keepdim, bool mean) {
  const Shape in = a.shape();
  const std::size_t ax = detail::normalize_axis(axis, in.size(), name, in);
  const std::size_t n = in[ax];
  if (mean && n == 0) throw std::invalid_argument("mean: empty axis in shape " + shape_str(in));
  const Scalar scale = mean ? Scalar(1) / static_cast<Scalar>(n) : Scalar(1);

  Array out = xt::sum(a.value(), {ax}, xt::evaluation_strategy::immediate) * scale;
  if (keepdim) out = xt::expand_dims(out, ax);

  const bool track = needs_grad({&a});
  Tensor result = detail::make_output(std::move(out), track);
  if (track) {
    tape().record(name, result, [a, in, ax, keepdim, scale](const Array& grad) {
      const Array g = keepdim ? grad : Array(xt::expand_dims(grad, ax));
      accumulate_grad(a, Array(xt::broadcast(g * scale, in)));
    });
  }
  return result;
}

}  // namespace

Tensor sum(const Tensor& a) { return reduce_all("sum", a, false); }
Tensor mean(const Tensor& a) { return reduce_all("mean", a, true); }
Tensor sum(const Tensor& a, int axis, bool keepdim) {
  return reduce_axis("sum", a, axis, keepdim, false);
}
Tensor mean(const Tensor& a, int axis, bool keepdim) {
  return reduce_axis("mean", a, axis, keepdim, true);
}

}  // namespace GLASS_PRECISION
}  // namespace glass
