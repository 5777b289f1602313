#include "interp/attribution_patching.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <stdexcept>

#include "interp/patching.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

Tensor patch_metric(const Tensor& logits, const PatchMetric& metric) {
  const Shape shape = logits.shape();
  const std::size_t T = shape[1], V = shape[2];
  Tensor last = reshape(slice(logits, 1, T - 1, T), {V});  // (V) the last position
  if (metric.kind == PatchMetric::Kind::log_prob) last = log_softmax(last);
  // m = last . w with w = e_answer (- e_other for a logit difference): (V) constant weights.
  Array w = xt::zeros<Scalar>({V});
  w(metric.answer) += 1;
  if (metric.kind == PatchMetric::Kind::logit_diff) w(metric.other) -= 1;
  return sum(last * Tensor(std::move(w)));
}

std::string to_string(PatchMetric::Kind kind) {
  return kind == PatchMetric::Kind::log_prob ? "log_prob" : "logit_diff";
}

namespace {

void check_inputs(const Decoder& model, const Tokens& clean, const Tokens& corrupted,
                  const PatchMetric& metric) {
  if (clean.empty() || clean.size() != corrupted.size())
    throw std::invalid_argument("attribution patching: the clean (" + std::to_string(clean.size()) +
                                " tokens) and corrupted (" + std::to_string(corrupted.size()) +
                                " tokens) prompts must be non-empty and of the same length");
  const auto V = static_cast<std::int32_t>(model.config().vocab_size);
  for (std::int32_t id : {metric.answer, metric.other})
    if (id < 0 || id >= V)
      throw std::invalid_argument("attribution patching: the metric's token id " +
                                  std::to_string(id) + " is outside the vocabulary [0, " +
                                  std::to_string(V) + ")");
}

std::string mlp_point(std::size_t layer) {
  return "layers." + std::to_string(layer) + ".feed_forward.out";
}

// The hook points of the components: each layer's head outputs and MLP output.
std::vector<std::string> component_points(const Decoder& model) {
  std::vector<std::string> points;
  for (std::size_t L = 0; L < model.config().n_layers; ++L) {
    points.push_back(attention_point(L, "mix"));
    points.push_back(mlp_point(L));
  }
  return points;
}

// The parameters' requires_grad switched off while alive and restored after: the tape then
// tracks only what follows the watched activations, and the weights' gradients stay as they were.
class FrozenParameters {
 public:
  explicit FrozenParameters(const Module& model) : params_(model.parameters()) {
    for (Tensor& p : params_) {
      was_.push_back(p.requires_grad());
      p.set_requires_grad(false);
    }
  }
  ~FrozenParameters() {
    for (std::size_t i = 0; i < params_.size(); ++i) params_[i].set_requires_grad(was_[i]);
  }
  FrozenParameters(const FrozenParameters&) = delete;
  FrozenParameters& operator=(const FrozenParameters&) = delete;

 private:
  std::vector<Tensor> params_;
  std::vector<bool> was_;
};

// The metric of an unpatched run, and its activations at `points`, batch removed.
double run_activations(const Decoder& model, const Tokens& tokens, const PatchMetric& metric,
                       const std::vector<std::string>& points, std::map<std::string, Array>& out) {
  Tracer tracer;
  tracer.set_recording(false);
  for (const std::string& p : points)
    tracer.add_hook(p, [&out](const std::string& name, Array& value) {
      const Shape shape(value.shape().begin() + 1, value.shape().end());
      out[name] = Array::from_shape(shape);
      std::copy(value.data(), value.data() + value.size(), out[name].data());
    });
  return static_cast<double>(
      patch_metric(Tensor(run_with_hooks(model, as_batch(tokens), tracer)), metric).item());
}

}  // namespace

AttributionPatching attribution_patching(const Decoder& model, const Tokens& clean,
                                         const Tokens& corrupted, const PatchMetric& metric) {
  check_inputs(model, clean, corrupted, metric);
  const auto& c = model.config();
  const std::size_t T = clean.size(), H = c.n_heads, hd = c.head_dim(), d = c.d_model;
  const std::vector<std::string> points = component_points(model);
  AttributionPatching result;
  result.total.metric = metric;
  std::map<std::string, Array> clean_acts;  // (H, T, head_dim) or (T, d) per point
  result.total.clean = run_activations(model, clean, metric, points, clean_acts);

  // The corrupted run on the tape, every component watched: after backward, watched(p).grad()
  // is ∂m/∂a at the corrupted activations, (1, H, T, head_dim) or (1, T, d).
  FrozenParameters frozen(model);
  Tracer run;
  run.set_recording(false);
  for (const std::string& p : points) run.watch(p);
  const Tensor m = patch_metric(model.forward(as_batch(corrupted), nullptr, &run), metric);
  result.total.corrupted = static_cast<double>(m.item());
  m.backward();

  // grad · (clean - corrupted), summed over each component's own axes at each position.
  result.head_positions = xt::zeros<Scalar>({c.n_layers, H, T});
  result.mlp_positions = xt::zeros<Scalar>({c.n_layers, T});
  for (std::size_t L = 0; L < c.n_layers; ++L) {
    const Tensor& mix = run.watched(attention_point(L, "mix"));
    const Array& mix_clean = clean_acts.at(attention_point(L, "mix"));
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t t = 0; t < T; ++t) {
        double sum = 0;
        for (std::size_t j = 0, i = (h * T + t) * hd; j < hd; ++j, ++i)
          sum += static_cast<double>(mix.grad().data()[i]) *
                 (static_cast<double>(mix_clean.data()[i]) - mix.value().data()[i]);
        result.head_positions(L, h, t) = static_cast<Scalar>(sum);
      }
    const Tensor& mlp = run.watched(mlp_point(L));
    const Array& mlp_clean = clean_acts.at(mlp_point(L));
    for (std::size_t t = 0; t < T; ++t) {
      double sum = 0;
      for (std::size_t j = 0, i = t * d; j < d; ++j, ++i)
        sum += static_cast<double>(mlp.grad().data()[i]) *
               (static_cast<double>(mlp_clean.data()[i]) - mlp.value().data()[i]);
      result.mlp_positions(L, t) = static_cast<Scalar>(sum);
    }
  }
  result.total.heads = xt::sum(result.head_positions, {2});
  result.total.mlps = xt::sum(result.mlp_positions, {1});
  return result;
}

PatchingEffects exact_patching(const Decoder& model, const Tokens& clean, const Tokens& corrupted,
                               const PatchMetric& metric) {
  check_inputs(model, clean, corrupted, metric);
  const auto& c = model.config();
  std::map<std::string, Array> clean_acts, unused;
  PatchingEffects e;
  e.metric = metric;
  e.clean = run_activations(model, clean, metric, component_points(model), clean_acts);
  e.corrupted = run_activations(model, corrupted, metric, {}, unused);
  // The metric of a patched run's logits (T, V), minus the corrupted run's.
  auto effect = [&](Array logits) {
    logits.reshape({1, logits.shape()[0], logits.shape()[1]});
    return static_cast<Scalar>(
        static_cast<double>(patch_metric(Tensor(std::move(logits)), metric).item()) - e.corrupted);
  };
  e.heads = Array::from_shape({c.n_layers, c.n_heads});
  e.mlps = Array::from_shape({c.n_layers});
  for (std::size_t L = 0; L < c.n_layers; ++L) {
    const std::string mix = attention_point(L, "mix");
    for (std::size_t h = 0; h < c.n_heads; ++h)
      e.heads(L, h) =
          effect(patched_logits(model, corrupted, mix, clean_acts.at(mix), std::nullopt, h));
    e.mlps(L) = effect(patched_logits(model, corrupted, mlp_point(L), clean_acts.at(mlp_point(L))));
  }
  return e;
}

namespace {

// Ranks 1 .. n of the values, ties given their mean rank.
std::vector<double> ranks(const Array& values) {
  const std::size_t n = values.size();
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return values.data()[a] < values.data()[b]; });
  std::vector<double> rank(n);
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i;
    while (j + 1 < n && values.data()[order[j + 1]] == values.data()[order[i]]) ++j;
    for (std::size_t k = i; k <= j; ++k) rank[order[k]] = (i + j) / 2.0 + 1;
    i = j + 1;
  }
  return rank;
}

}  // namespace

double spearman(const Array& a, const Array& b) {
  if (a.size() != b.size() || a.size() < 2)
    throw std::invalid_argument("spearman: needs two lists of the same size >= 2, got " +
                                std::to_string(a.size()) + " and " + std::to_string(b.size()));
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  const double mean = (static_cast<double>(a.size()) + 1) / 2;  // the mean of the ranks 1 .. n
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t i = 0; i < ra.size(); ++i) {
    ab += (ra[i] - mean) * (rb[i] - mean);
    aa += (ra[i] - mean) * (ra[i] - mean);
    bb += (rb[i] - mean) * (rb[i] - mean);
  }
  if (aa == 0 || bb == 0) return std::numeric_limits<double>::quiet_NaN();
  return ab / std::sqrt(aa * bb);
}

}  // namespace GLASS_PRECISION
}  // namespace glass
