#pragma once
// Gradient-buffer reuse for the fast kernels (internal to autograd/kernels/, not a public header).
// The reference ops (autograd/ops_*.cpp) write every input's gradient into a fresh array and hand
// it to accumulate_grad; the fast kernels save that temporary and its `+=` pass with the two
// helpers below. tests/autograd/fast_kernels_f64_test.cpp and backward_release_test.cpp show that the
// gradients are the same either way.

#include <utility>

#include "autograd/backward_release.hpp"
#include "autograd/tape.hpp"
#include "autograd/tensor.hpp"

namespace glass {
inline namespace GLASS_PRECISION {
namespace detail {

/// Where a kernel's backward writes the gradient of input t: straight into t's existing grad
/// (beta = 1: add to it, as a gemm with beta = 1 does) or, for the first contribution, into a
/// fresh array (beta = 0: write it) that finish() hands to accumulate_grad. Saves a temporary
/// and the `+=` pass of accumulate_grad whenever t already has a gradient (a weight after
/// zero_grad, an input used twice, the residual stream). With `zeroed` the fresh array starts
/// as zeros and beta is 1 either way (for a backward that adds several pieces and may leave some
/// places untouched). A tensor that does not require grad always gets a fresh array, which
/// finish() then drops.
struct GradTarget {
  explicit GradTarget(const Tensor& t, bool zeroed = false) : tensor(t) {
    if (tensor.requires_grad() && tensor.has_grad()) {
      data = tensor.grad().data();
      beta = 1;
    } else {
      fresh = zeroed ? Array(tensor.shape(), Scalar(0)) : Array::from_shape(tensor.shape());
      data = fresh.data();
      beta = zeroed ? 1 : 0;
      accumulate_fresh = true;
    }
  }
  void finish() {
    if (accumulate_fresh) accumulate_grad(tensor, std::move(fresh));
  }
  Tensor tensor;
  Array fresh;
  Scalar* data;
  Scalar beta;
  bool accumulate_fresh = false;
};

/// For a backward closure that takes its argument as `Array& grad`: the output's gradient as an
/// array the closure may keep (hand to accumulate_grad, or overwrite in place with an input's
/// gradient of the same size). It is the buffer itself when the tape frees it right after the
/// closure (grad_disposable, under Tensor::backward), otherwise a copy, so an
/// intermediate gradient the caller can still read is never changed. Call it at most once.
inline Array take_grad(Array& grad) {
  if (grad_disposable()) return std::move(grad);
  return grad;
}

}  // namespace detail
}  // namespace GLASS_PRECISION
}  // namespace glass
