// Gradient check by central finite differences (see gradcheck.hpp).

#include "autograd/gradcheck.hpp"

#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>

#include "autograd/ops.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

namespace {

/// L = sum(out * R), in double, without recording anything.
double projected(const GradcheckFn& f, const std::vector<Tensor>& inputs, const Array& R) {
  NoGradGuard no_grad;
  const Tensor out = f(inputs);
  if (out.size() != R.size())
    throw std::logic_error("gradcheck: output size changed between calls");
  double total = 0;
  for (std::size_t i = 0; i < R.size(); ++i)
    total += static_cast<double>(out.value().data()[i]) * static_cast<double>(R.data()[i]);
  return total;
}

}  // namespace

GradcheckReport gradcheck(const GradcheckFn& f, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options) {
  bool any = false;
  for (const Tensor& t : inputs) any = any || t.requires_grad();
  if (!any) throw std::invalid_argument("gradcheck: no input requires grad");

  // 1. Analytic gradients: one forward with recording, L = sum(out * R), one backward.
  tape().clear();
  Array R;
  for (const Tensor& t : inputs) {
    Tensor h = t;
    if (h.requires_grad()) h.zero_grad();
  }
  Tensor loss;
  {
    const Tensor out = f(inputs);
    if (!out.requires_grad()) {
      tape().clear();
      throw std::invalid_argument(
          "gradcheck: the output does not depend on any input that requires grad");
    }
    Rng rng(options.seed);
    std::normal_distribution<double> normal(0.0, 1.0);
    R = Array::from_shape(out.value().shape());
    for (auto& r : R) r = static_cast<Scalar>(normal(rng));
    loss = sum(mul(out, Tensor(R)));
  }  // `out` is now held by the tape only, as in training: a fast kernel's backward may reuse
  // its gradient buffer (autograd/kernels/grad_buffers.hpp), so that path is the one checked here
  loss.backward();  // also clears the tape

  // 2. Numeric gradients, element by element, and the comparison.
  GradcheckReport report;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    Tensor x = inputs[k];
    if (!x.requires_grad()) continue;
    InputGradError err;
    err.index = k;
    err.name = x.name();
    const Array analytic = x.grad();  // zeros if no gradient reached x
    Scalar* v = x.value().data();
    for (std::size_t i = 0; i < x.size(); ++i) {
      const Scalar saved = v[i];
      v[i] = static_cast<Scalar>(saved + options.eps);
      const double plus = projected(f, inputs, R);
      v[i] = static_cast<Scalar>(saved - options.eps);
      const double minus = projected(f, inputs, R);
      v[i] = saved;
      const double numeric = (plus - minus) / (2 * options.eps);
      double diff = std::abs(static_cast<double>(analytic.data()[i]) - numeric);
      if (std::isnan(diff)) diff = std::numeric_limits<double>::infinity();  // NaN must show
      err.max_abs_error = std::max(err.max_abs_error, diff);
      err.max_rel_error = std::max(err.max_rel_error, diff / std::max(std::abs(numeric), 1e-3));
      if (!(diff <= options.atol + options.rtol * std::abs(numeric)))
        err.passed = false;  // NaN fails
    }
    report.max_abs_error = std::max(report.max_abs_error, err.max_abs_error);
    report.max_rel_error = std::max(report.max_rel_error, err.max_rel_error);
    report.passed = report.passed && err.passed;
    report.inputs.push_back(err);
  }
  return report;
}

}  // namespace GLASS_PRECISION
}  // namespace glass
