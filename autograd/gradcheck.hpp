#pragma once
// gradcheck: compares the tape's gradients with central finite differences, like
// torch.autograd.gradcheck. Meant for the double build (glass::f64, target glass_autograd_f64):
// with Scalar = double and eps = 1e-6 a correct backward agrees to ~1e-8 relative error, a wrong
// one is off by O(1). (In float the differences are too noisy for these tolerances.)
//
// A non-scalar output is reduced to the scalar L = sum(out * R) with a fixed random projection
// R ~ N(0, 1) (seeded), so every output element takes part with a different weight.
// For every input that requires grad and every element x_i of it:
//   numeric_i  = (L(x_i + eps) - L(x_i - eps)) / (2 eps)
//   analytic_i = dL/dx_i from one backward pass through the tape
// and the element passes when |analytic_i - numeric_i| <= atol + rtol * |numeric_i|.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "autograd/tensor.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

/// Settings of a gradient check. Defaults: PyTorch's eps (1e-6); tolerances tighter than
/// PyTorch's defaults (atol 1e-5, rtol 1e-3), which double precision meets comfortably.
struct GradcheckOptions {
  double eps = 1e-6;          ///< finite-difference step
  double atol = 1e-6;         ///< absolute tolerance
  double rtol = 1e-5;         ///< relative tolerance
  std::uint64_t seed = 1234;  ///< seed of the projection R
};

/// The result for one input tensor.
struct InputGradError {
  std::size_t index = 0;     ///< position in the inputs vector
  std::string name;          ///< the input's name (may be empty)
  double max_abs_error = 0;  ///< max_i |analytic_i - numeric_i|
  double max_rel_error = 0;  ///< max_i |analytic_i - numeric_i| / max(|numeric_i|, 1e-3)
  bool passed = true;        ///< every element within atol + rtol * |numeric_i|
};

/// The result of a gradient check over all inputs that require grad.
struct GradcheckReport {
  std::vector<InputGradError> inputs;  ///< one entry per input that requires grad
  double max_abs_error = 0;            ///< max over inputs
  double max_rel_error = 0;            ///< max over inputs
  bool passed = true;                  ///< all inputs passed
};

/// The function under test: takes the inputs, returns any tensor computed from them with ops.
using GradcheckFn = std::function<Tensor(const std::vector<Tensor>&)>;

/// Runs the check. `inputs` are modified in place while perturbing and restored afterwards;
/// their grads are overwritten. Clears the thread's tape before starting.
/// Throws std::invalid_argument when no input requires grad or the output does not depend on
/// any input that does.
GradcheckReport gradcheck(const GradcheckFn& f, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options = {});

}  // namespace GLASS_PRECISION
}  // namespace glass
