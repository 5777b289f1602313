#include "train/adamw.hpp"

#include <cmath>

#include "autograd/threads.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

AdamW::AdamW(const std::vector<std::pair<std::string, Tensor>>& params, AdamWConfig config)
    : config_(config) {
  for (const auto& [name, p] : params) {
    AdamWParam entry{name, p, Array(), Array(), p.dim() >= 2};
    entry.m = Array::from_shape(p.value().shape());
    entry.v = Array::from_shape(p.value().shape());
    entry.m.fill(Scalar(0));
    entry.v.fill(Scalar(0));
    params_.push_back(std::move(entry));
  }
}

void AdamW::step(double lr) {
  ++step_count_;
  const double t = static_cast<double>(step_count_);
  const double b1 = config_.beta1, b2 = config_.beta2;
  const double bias_correction1 = 1.0 - std::pow(b1, t);
  const double bias_correction2 = 1.0 - std::pow(b2, t);
  const double step_size = lr / bias_correction1;
  const double sqrt_bc2 = std::sqrt(bias_correction2);

  // With num_threads() > 1 each parameter's elements are split among the threads: every element
  // is updated on its own, so the result is the same bits for any thread count.
  const int threads = static_cast<int>(num_threads());
#pragma omp parallel num_threads(threads) if (threads > 1)
  for (AdamWParam& entry : params_) {
    if (!entry.param.has_grad()) continue;
    Scalar* p = entry.param.value().data();
    const Scalar* g = entry.param.grad().data();
    Scalar* m = entry.m.data();
    Scalar* v = entry.v.data();
    const long n = static_cast<long>(entry.param.size());
    // The per-step constants are computed in double above; the loop runs in Scalar, like
    // PyTorch's float tensors, so that the compiler can vectorize it.
    const Scalar decay = static_cast<Scalar>(entry.decay ? 1.0 - lr * config_.weight_decay : 1.0);
    const Scalar beta1 = static_cast<Scalar>(b1), beta2 = static_cast<Scalar>(b2);
    const Scalar one_minus_beta1 = static_cast<Scalar>(1.0 - b1);
    const Scalar one_minus_beta2 = static_cast<Scalar>(1.0 - b2);
    const Scalar step = static_cast<Scalar>(step_size), root_bc2 = static_cast<Scalar>(sqrt_bc2);
    const Scalar eps = static_cast<Scalar>(config_.eps);
#pragma omp for schedule(static) nowait
    for (long i = 0; i < n; ++i) {
      p[i] *= decay;  // decoupled weight decay
      m[i] = beta1 * m[i] + one_minus_beta1 * g[i];
      v[i] = beta2 * v[i] + one_minus_beta2 * g[i] * g[i];
      const Scalar denom = std::sqrt(v[i]) / root_bc2 + eps;
      p[i] -= step * m[i] / denom;
    }
  }
}

void AdamW::zero_grad() {
  for (AdamWParam& entry : params_) entry.param.zero_grad();
}

}  // namespace GLASS_PRECISION
}  // namespace glass
