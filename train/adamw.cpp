#include "train/adamw.hpp"

#include <cmath>

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

  for (AdamWParam& entry : params_) {
    if (!entry.param.has_grad()) continue;
    Scalar* p = entry.param.value().data();
    const Scalar* g = entry.param.grad().data();
    Scalar* m = entry.m.data();
    Scalar* v = entry.v.data();
    const std::size_t n = entry.param.size();
    const double decay_factor = entry.decay ? 1.0 - lr * config_.weight_decay : 1.0;
    for (std::size_t i = 0; i < n; ++i) {
      p[i] = static_cast<Scalar>(p[i] * decay_factor);  // decoupled weight decay
      m[i] = static_cast<Scalar>(b1 * m[i] + (1.0 - b1) * g[i]);
      v[i] = static_cast<Scalar>(b2 * v[i] + (1.0 - b2) * g[i] * g[i]);
      const double denom = std::sqrt(static_cast<double>(v[i])) / sqrt_bc2 + config_.eps;
      p[i] = static_cast<Scalar>(p[i] - step_size * m[i] / denom);
    }
  }
}

void AdamW::zero_grad() {
  for (AdamWParam& entry : params_) entry.param.zero_grad();
}

}  // namespace GLASS_PRECISION
}  // namespace glass
