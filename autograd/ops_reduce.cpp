// Reductions: sum and mean of all elements, or over one axis.
//
// An axis reduction views the array as (outer, n, inner): `outer` = product of the extents
// before the axis, `n` = the reduced extent, `inner` = product of the extents after it.
// The backward pass copies the output gradient back along the reduced axis (every input
// element contributed with weight 1 to the sum, 1/n to the mean).

#include "autograd/ops.hpp"
#include "autograd/ops_util.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

namespace {

/// sum (scale = 1) or mean (scale = 1/count) of every element -> shape ().
Tensor reduce_all(const char* name, const Tensor& a, bool mean) {
  const Array& x = a.value();
  const std::size_t n = x.size();
  const Scalar scale = mean ? Scalar(1) / static_cast<Scalar>(n) : Scalar(1);
  if (mean && n == 0) throw std::invalid_argument("mean: empty tensor of shape " + shape_str(a.shape()));
  double total = 0;  // accumulate in double: long float sums lose digits
  for (std::size_t i = 0; i < n; ++i) total += x.data()[i];
  const bool track = needs_grad({&a});
  Tensor result = detail::make_output(Array(Shape{}, static_cast<Scalar>(total * scale)), track);
  if (track) {
    tape().record(name, result, [a, scale](const Array& grad) {
      // d(sum)/dx_i = 1, d(mean)/dx_i = 1/n
      accumulate_grad(a, Array(a.shape(), grad.data()[0] * scale));
    });
  }
  return result;
}

/// sum / mean over one axis.
Tensor reduce_axis(const char* name, const Tensor& a, int axis, bool keepdim, bool mean) {
  const Shape in = a.shape();
  const std::size_t ax = detail::normalize_axis(axis, in.size(), name, in);
  std::size_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < ax; ++d) outer *= in[d];
  for (std::size_t d = ax + 1; d < in.size(); ++d) inner *= in[d];
  const std::size_t n = in[ax];
  if (mean && n == 0) throw std::invalid_argument("mean: empty axis in shape " + shape_str(in));
  const Scalar scale = mean ? Scalar(1) / static_cast<Scalar>(n) : Scalar(1);

  Shape out_shape = in;
  if (keepdim) out_shape[ax] = 1;
  else out_shape.erase(out_shape.begin() + ax);

  Array out(out_shape, Scalar(0));
  const Scalar* x = a.value().data();
  Scalar* y = out.data();
  for (std::size_t o = 0; o < outer; ++o)
    for (std::size_t k = 0; k < n; ++k)
      for (std::size_t i = 0; i < inner; ++i) y[o * inner + i] += x[(o * n + k) * inner + i];
  for (std::size_t j = 0; j < out.size(); ++j) y[j] *= scale;

  const bool track = needs_grad({&a});
  Tensor result = detail::make_output(std::move(out), track);
  if (track) {
    tape().record(name, result, [a, in, outer, n, inner, scale](const Array& grad) {
      Array ga = detail::empty_array(in);
      const Scalar* g = grad.data();
      Scalar* d = ga.data();
      for (std::size_t o = 0; o < outer; ++o)
        for (std::size_t k = 0; k < n; ++k)
          for (std::size_t i = 0; i < inner; ++i) d[(o * n + k) * inner + i] = g[o * inner + i] * scale;
      accumulate_grad(a, std::move(ga));
    });
  }
  return result;
}

}  // namespace

Tensor sum(const Tensor& a) { return reduce_all("sum", a, false); }
Tensor mean(const Tensor& a) { return reduce_all("mean", a, true); }
Tensor sum(const Tensor& a, int axis, bool keepdim) { return reduce_axis("sum", a, axis, keepdim, false); }
Tensor mean(const Tensor& a, int axis, bool keepdim) { return reduce_axis("mean", a, axis, keepdim, true); }

}  // namespace GLASS_PRECISION
}  // namespace glass
