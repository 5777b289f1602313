#pragma once
// Helpers shared by the nn tests: a central-difference gradient check over named tensors,
// deterministic random inputs, and a way to give a model "non-trivial" weights.

#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "autograd/ops.hpp"
#include "nn/module.hpp"

namespace glass_test {

using namespace glass;

/// A double with 12 significant digits, for failure messages.
inline std::string fmt_double(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.12g", x);
  return buffer;
}

/// Worst disagreement between backward() and central finite differences.
struct GradcheckReport {
  double worst_error = 0.0;  ///< max over elements of |analytic - numeric| / (atol + rtol*|numeric|)
  std::string worst_where;   ///< "name[flat index]: analytic a, numeric n"
  std::size_t checked = 0;   ///< number of scalars compared
};

/// Compares d(loss)/d(t) from one backward() pass against (loss(t+h) - loss(t-h)) / 2h for every
/// element of every tensor in `inputs`. `loss` must rebuild the graph from the tensors each
/// call. An element passes when |analytic - numeric| <= atol + rtol * |numeric|; the report's
/// worst_error is the largest ratio of the two sides (<= 1 means every element passed).
/// Meant for Scalar = double.
inline GradcheckReport numeric_gradcheck(const std::function<Tensor()>& loss,
                                 const std::vector<std::pair<std::string, Tensor>>& inputs,
                                 double h = 1e-5, double atol = 1e-8, double rtol = 1e-6) {
  for (auto [name, t] : inputs) t.zero_grad();
  tape().clear();
  Tensor out = loss();
  out.backward();
  std::vector<Array> analytic;
  for (auto& [name, t] : inputs) analytic.push_back(t.grad());

  GradcheckReport report;
  NoGradGuard no_grad;
  for (std::size_t p = 0; p < inputs.size(); ++p) {
    Tensor t = inputs[p].second;
    Array& value = t.value();
    for (std::size_t i = 0; i < value.size(); ++i) {
      const Scalar saved = value.data()[i];
      value.data()[i] = saved + h;
      const double plus = loss().item();
      value.data()[i] = saved - h;
      const double minus = loss().item();
      value.data()[i] = saved;
      const double numeric = (plus - minus) / (2 * h);
      const double a = analytic[p].data()[i];
      const double ratio = std::abs(a - numeric) / (atol + rtol * std::abs(numeric));
      ++report.checked;
      if (ratio > report.worst_error) {
        report.worst_error = ratio;
        report.worst_where = inputs[p].first + "[" + std::to_string(i) +
                             "]: analytic " + fmt_double(a) + ", numeric " +
                             fmt_double(numeric);
      }
    }
  }
  return report;
}

/// A tensor of N(0, std^2) values from a fixed seed.
inline Tensor random_tensor(const Shape& shape, double std, std::uint64_t seed,
                            bool requires_grad = false) {
  Rng rng(seed);
  return Tensor::randn(shape, static_cast<Scalar>(std), rng, requires_grad);
}

/// Token ids uniform in [0, vocab) from a fixed seed.
inline Ids random_ids(std::size_t batch, std::size_t length, std::size_t vocab, std::uint64_t seed) {
  Rng rng(seed);
  std::uniform_int_distribution<int> pick(0, static_cast<int>(vocab) - 1);
  Ids ids = Ids::from_shape({batch, length});
  for (auto& id : ids) id = pick(rng);
  return ids;
}

/// Replaces every parameter by N(0, std^2) values and every RMSNorm gain ("...norm.weight") by
/// 1 + N(0, 0.2^2), so that gradient checks do not run at the special point of the init
/// (tiny weights, unit gains).
inline void randomize(Module& module, double std, std::uint64_t seed) {
  Rng rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (auto& [name, p] : module.named_parameters()) {
    const bool is_gain = name.size() >= 11 && name.compare(name.size() - 11, 11, "norm.weight") == 0;
    for (auto& x : p.value()) {
      x = static_cast<Scalar>(is_gain ? 1.0 + 0.2 * normal(rng) : std * normal(rng));
    }
  }
}

/// sum(out * probe): a scalar whose gradient with respect to `out` is the fixed tensor `probe`,
/// so every output element matters (unlike sum(out), whose gradient is all ones).
inline Tensor probe_loss(const Tensor& out, const Tensor& probe) { return sum(mul(out, probe)); }

}  // namespace glass_test
