// fast_reshape and fast_add: the reference reshape (ops_shape.cpp) and add (ops_elementwise.cpp)
// whose backward hands the output's gradient buffer itself to an input when the tape frees it
// next (detail::take_grad): the input's gradient then costs neither an allocation nor a copy.
// The forward passes are the reference ones.

#include <algorithm>
#include <stdexcept>
#include <string>

#include "autograd/kernels/grad_buffers.hpp"
#include "autograd/kernels/kernels.hpp"
#include "autograd/ops_util.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

// Row-major order is unchanged by a reshape: the gradient just takes the input's shape back.
Tensor fast_reshape(const Tensor& a, const Shape& shape) {
  if (detail::numel(shape) != a.size()) {
    throw std::invalid_argument("reshape: cannot reshape " + shape_str(a.shape()) + " (" +
                                std::to_string(a.size()) + " elements) into " + shape_str(shape));
  }
  Array out = detail::empty_array(shape);
  std::copy(a.value().data(), a.value().data() + a.size(), out.data());
  const bool track = needs_grad({&a});
  Tensor result = detail::make_output(std::move(out), track);
  if (track) {
    tape().record("reshape", result, [a](Array& grad) {
      Array ga = detail::take_grad(grad);  // the buffer itself under Tensor::backward, no copy
      ga.reshape(a.shape());
      accumulate_grad(a, std::move(ga));
    });
  }
  return result;
}

// z = x + y:  dz/dx = 1, dz/dy = 1. Without broadcasting (the residual stream's x + f(x)), both
// inputs receive g itself: one that already has a gradient adds g to it, the other takes g's
// buffer when the tape frees it — no arithmetic and at most one copy.
Tensor fast_add(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return add(a, b);
  Array out = detail::empty_array(a.shape());
  {
    const Scalar* x = a.value().data();
    const Scalar* y = b.value().data();
    Scalar* z = out.data();
    const std::size_t n = out.size();
    for (std::size_t i = 0; i < n; ++i) z[i] = x[i] + y[i];
  }
  const bool track = needs_grad({&a, &b});
  Tensor result = detail::make_output(std::move(out), track);
  if (track) {
    tape().record("add", result, [a, b](Array& grad) {
      const Array& g = grad;
      const bool need_a = a.requires_grad(), need_b = b.requires_grad();
      // The input served last may take the buffer: b, unless only a needs it or b already has
      // a gradient to add to while a has none. (With a == b the second call adds to the first.)
      const bool a_last = !need_b || (need_a && b.has_grad() && !a.has_grad());
      if (a_last) {
        if (need_b) accumulate_grad(b, g);
        accumulate_grad(a, detail::take_grad(grad));
      } else {
        if (need_a) accumulate_grad(a, g);
        accumulate_grad(b, detail::take_grad(grad));
      }
    });
  }
  return result;
}

}  // namespace GLASS_PRECISION
}  // namespace glass
