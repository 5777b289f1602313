// Exactness of direct logit attribution and attribution patching in double precision, on the
// twin's small fixed model: the parts sum to the logit, the tape's gradient at a watched hook
// point matches central differences, and in the linear limit (clean and corrupted a tiny eps
// apart) the attribution estimate equals exact patching up to O(eps^2).

#include <gtest/gtest.h>

#include <cmath>

#include <xtensor/xview.hpp>

#include "interp_util.hpp"

namespace {

using namespace glass;
using interp_test::twin_model;

const Tokens kPrompt = {1, 6, 0, 5, 10, 4, 9, 3};

TEST(LogitAttributionF64, PartsSumToTheLogitWithin1e10) {
  auto model = twin_model();
  for (std::size_t t : {std::size_t{0}, std::size_t{3}, kPrompt.size() - 1}) {
    for (std::int32_t target : {0, 4, 10}) {
      const LogitAttribution a = logit_attribution(*model, kPrompt, t, target);
      EXPECT_NEAR(a.total(), a.logit, 1e-10) << "position " << t << " target " << target;
      const LogitAttribution diff = logit_attribution(*model, kPrompt, t, target, 7);
      EXPECT_NEAR(diff.total(), diff.logit, 1e-10) << "position " << t << " target " << target;
      EXPECT_NEAR(diff.logit, a.logit - logit_attribution(*model, kPrompt, t, 7).logit, 1e-12);
    }
  }
}

TEST(LogitAttributionF64, EachLayersHeadsSumToTheAttentionOutputsPart) {
  // The heads' parts, read through their slices of W_O, add up to the direct effect of the whole
  // attention output "layers.L.attn.out" (the mix projected by all of W_O at once).
  auto model = twin_model();
  const std::size_t t = 5;
  const LogitAttribution a = logit_attribution(*model, kPrompt, t, 2);
  Tracer tracer;
  run_with_hooks(*model, as_batch(kPrompt), tracer);
  const Array& W_U = model->output.weight.value();
  const std::size_t d = model->config().d_model;
  Array unembed = Array::from_shape({d});
  for (std::size_t i = 0; i < d; ++i) unembed(i) = W_U(2, i);
  for (std::size_t L = 0; L < 2; ++L) {
    const Array& out = tracer.get(attention_point(L, "out"));  // (T, d)
    Array part = Array::from_shape({1, d});
    std::copy(out.data() + t * d, out.data() + (t + 1) * d, part.data());
    const double whole = direct_effects(part, unembed, model->norm.weight.value(), a.scale)(0);
    double heads = 0;
    for (std::size_t h = 0; h < 4; ++h) heads += a.heads(L, h);
    EXPECT_NEAR(heads, whole, 1e-12) << "layer " << L;
  }
}

// The metric of the prompt with `delta` added at hook point `point` (full batch shape).
double metric_with(const Decoder& model, const std::string& point, const Array& delta,
                   const PatchMetric& metric) {
  Tracer tracer;
  tracer.set_recording(false);
  tracer.add_hook(point, [&](const std::string&, Array& value) { value += delta; });
  return patch_metric(Tensor(run_with_hooks(model, as_batch(kPrompt), tracer)), metric).item();
}

TEST(AttributionPatchingF64, WatchedGradientsMatchCentralDifferences) {
  auto model = twin_model();
  Rng rng(7);
  for (const PatchMetric metric : {PatchMetric{PatchMetric::Kind::logit_diff, 3, 8},
                                   PatchMetric{PatchMetric::Kind::log_prob, 5, 0}}) {
    for (const std::string point : {"layers.0.attn.mix", "layers.1.attn.mix",
                                    "layers.0.feed_forward.out", "layers.1.feed_forward.out"}) {
      Tracer tracer;
      tracer.set_recording(false);
      tracer.watch(point);
      const Tensor m = patch_metric(model->forward(as_batch(kPrompt), nullptr, &tracer), metric);
      m.backward();
      const Tensor& a = tracer.watched(point);
      const Array direction = Tensor::randn(a.shape(), 1.0, rng).value();
      const double analytic = xt::sum(a.grad() * direction)();
      const double h = 1e-5;
      const double numeric = (metric_with(*model, point, h * direction, metric) -
                              metric_with(*model, point, -h * direction, metric)) /
                             (2 * h);
      EXPECT_NEAR(analytic, numeric, 1e-7 * std::max(1.0, std::abs(numeric)))
          << point << " " << to_string(metric.kind);
      EXPECT_GT(std::abs(analytic), 1e-6) << point;  // a gradient that is there
    }
  }
}

// Largest |attribution - exact| over heads and MLPs, with the clean prompt's first token an
// embedding eps away from the corrupted one's.
double linear_limit_error(double eps, PatchMetric metric, double* largest_effect) {
  auto model = twin_model();
  const std::size_t d = model->config().d_model;
  Tokens clean = kPrompt, corrupted = kPrompt;
  clean[2] = 7;  // token 7's embedding becomes token 0's plus eps times a fixed direction
  Array& E = model->tok_embeddings.weight.value();
  for (std::size_t i = 0; i < d; ++i)
    E(7, i) = E(0, i) + eps * std::cos(1.0 + 0.7 * static_cast<double>(i));
  const AttributionPatching estimate = attribution_patching(*model, clean, corrupted, metric);
  const PatchingEffects exact = exact_patching(*model, clean, corrupted, metric);
  double error = 0, largest = 0;
  for (std::size_t i = 0; i < exact.heads.size(); ++i) {
    error = std::max(error, std::abs(estimate.total.heads.data()[i] - exact.heads.data()[i]));
    largest = std::max(largest, std::abs(exact.heads.data()[i]));
  }
  for (std::size_t i = 0; i < exact.mlps.size(); ++i)
    error = std::max(error, std::abs(estimate.total.mlps.data()[i] - exact.mlps.data()[i]));
  EXPECT_NEAR(estimate.total.clean, exact.clean, 1e-12);
  EXPECT_NEAR(estimate.total.corrupted, exact.corrupted, 1e-12);
  *largest_effect = largest;
  return error;
}

TEST(AttributionPatchingF64, EqualsExactPatchingInTheLinearLimit) {
  for (const PatchMetric metric : {PatchMetric{PatchMetric::Kind::logit_diff, 3, 8},
                                   PatchMetric{PatchMetric::Kind::log_prob, 5, 0}}) {
    double effect_big = 0, effect_small = 0;
    const double big = linear_limit_error(1e-2, metric, &effect_big);
    const double small = linear_limit_error(1e-3, metric, &effect_small);
    // The effects themselves are first order in eps; the error is second order: ten times
    // smaller eps, a hundred times smaller error (a first-order error would shrink tenfold).
    EXPECT_GT(effect_small, 1e-6) << to_string(metric.kind);
    EXPECT_LT(small, 1e-3 * effect_small) << to_string(metric.kind);
    EXPECT_GT(big / small, 50.0) << to_string(metric.kind) << ": errors " << big << ", " << small;
    EXPECT_LT(big / small, 200.0) << to_string(metric.kind) << ": errors " << big << ", " << small;
  }
}

TEST(AttributionPatchingF64, PerPositionEstimatesSumToTheTotals) {
  auto model = twin_model();
  Tokens corrupted = kPrompt;
  corrupted[4] = 2;
  const PatchMetric metric{PatchMetric::Kind::logit_diff, 3, 8};
  const AttributionPatching a = attribution_patching(*model, kPrompt, corrupted, metric);
  // Positions before the changed token have identical activations: zero estimates there. In
  // the last block only the last position reaches the metric: zero gradient elsewhere.
  for (std::size_t L = 0; L < 2; ++L) {
    for (std::size_t t = 0; t < 4; ++t) {
      EXPECT_EQ(a.mlp_positions(L, t), 0.0);
      for (std::size_t h = 0; h < 4; ++h) EXPECT_EQ(a.head_positions(L, h, t), 0.0);
    }
  }
  for (std::size_t t = 4; t + 1 < kPrompt.size(); ++t) {
    EXPECT_EQ(a.mlp_positions(1, t), 0.0);
    for (std::size_t h = 0; h < 4; ++h) EXPECT_EQ(a.head_positions(1, h, t), 0.0);
  }
  EXPECT_NE(a.mlp_positions(0, 4), 0.0);
  EXPECT_NE(a.mlp_positions(1, kPrompt.size() - 1), 0.0);
  EXPECT_NEAR(a.total.heads(1, 2), xt::sum(xt::view(a.head_positions, 1, 2, xt::all()))(), 1e-14);
  // The weights were frozen for the pass and are trainable again, their gradients untouched.
  for (const auto& [name, p] : model->named_parameters()) {
    EXPECT_TRUE(p.requires_grad()) << name;
    EXPECT_FALSE(p.has_grad()) << name;
  }
}

}  // namespace
