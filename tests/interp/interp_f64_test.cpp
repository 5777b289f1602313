// Exactness of the interpretability tools in double precision, on the twin's small fixed model:
// hooks that change nothing change nothing, the logit lens's last row is the model's logits,
// zero ablation is the model with W_O's columns zeroed, patching restores or keeps logits.

#include <gtest/gtest.h>

#include <cmath>

#include "interp_util.hpp"
#include "nn/recipe_options_reference.hpp"

namespace {

using namespace glass;
using interp_test::plain_logits;
using interp_test::twin_model;

// A prompt of the twin's vocabulary (11 ids).
const Tokens kPrompt = {1, 6, 0, 5, 10, 4, 9, 3};

void expect_bitwise_equal(const Array& a, const Array& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t i = 0; i < a.size(); ++i)
    ASSERT_EQ(a.data()[i], b.data()[i]) << what << " flat index " << i;
}

void expect_near(const Array& a, const Array& b, double tol, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a.data()[i], b.data()[i], tol) << what << " flat index " << i;
}

// ---- hook points ---------------------------------------------------------------------------

TEST(HookPoints, HooksThatChangeNothingLeaveTheLogitsBitForBit) {
  auto model = twin_model();
  const Ids tokens = glass_test::twin_tokens();
  Tracer tracer;
  std::vector<std::string> seen;
  tracer.add_hook("", [&](const std::string& name, Array&) { seen.push_back(name); });
  const Array hooked = run_with_hooks(*model, tokens, tracer);
  expect_bitwise_equal(hooked, plain_logits(*model, tokens), "logits");
  // Every documented hook point of both blocks, in forward order.
  const std::vector<std::string> expected = {
      "embeddings",        "layers.0.attn.softmax", "layers.0.attn.mix",
      "layers.0.attn.out", "layers.0.mid",          "layers.0.feed_forward.out",
      "layers.0.out",      "layers.1.attn.softmax", "layers.1.attn.mix",
      "layers.1.attn.out", "layers.1.mid",          "layers.1.feed_forward.out",
      "layers.1.out"};
  EXPECT_EQ(seen, expected);
  // Hook-only points record no snapshot.
  EXPECT_FALSE(tracer.has("layers.0.mid"));
  EXPECT_FALSE(tracer.has("layers.0.feed_forward.out"));
  EXPECT_TRUE(tracer.has("layers.0.attn.mix"));
}

TEST(HookPoints, AReplacedValueIsWhatTheModelGoesOnWith) {
  auto model = twin_model();
  const Ids tokens = glass_test::twin_tokens();
  // Zeroing the MLP output of the last block: the logits are then norm(layers.1.mid) @ output^T.
  Tracer tracer;
  Array mid;
  tracer.add_hook("layers.1.mid", [&](const std::string&, Array& v) { mid = v; });
  tracer.add_hook("layers.1.feed_forward.out", [](const std::string&, Array& v) { v.fill(0); });
  const Array logits = run_with_hooks(*model, tokens, tracer);
  NoGradGuard no_grad;
  const Array expected = model->output.forward(model->norm.forward(Tensor(mid), &tracer)).value();
  expect_near(logits, expected, 1e-12, "logits with the last MLP zeroed");
  // The snapshot of a replaced point shows the replaced value.
  Tracer t2;
  t2.add_hook("layers.0.attn.out", [](const std::string&, Array& v) { v.fill(0.5); });
  run_with_hooks(*model, tokens, t2);
  for (Scalar x : t2.get("layers.0.attn.out")) ASSERT_EQ(x, 0.5);
}

// Gradients of every parameter after one loss.backward(), in named_parameters() order.
std::vector<Array> gradients(Decoder& model, Tracer* tracer) {
  const Ids all = glass_test::twin_tokens();
  Ids inputs = Ids::from_shape({2, 6}), targets = Ids::from_shape({2, 6});
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t t = 0; t < 6; ++t) inputs(b, t) = all(b, t), targets(b, t) = all(b, t + 1);
  for (auto& [name, p] : model.named_parameters()) p.zero_grad();
  cross_entropy(model.forward(inputs, nullptr, tracer), targets).backward();
  std::vector<Array> grads;
  for (auto& [name, p] : model.named_parameters()) grads.push_back(p.grad());
  return grads;
}

TEST(HookPoints, HooksThatChangeNothingKeepTheGradientsAndAReplacedValueStopsThem) {
  auto model = twin_model();
  const std::vector<Array> plain = gradients(*model, nullptr);
  Tracer reading;
  reading.add_hook("", [](const std::string&, Array&) {});
  const std::vector<Array> read = gradients(*model, &reading);
  for (std::size_t i = 0; i < plain.size(); ++i)
    expect_bitwise_equal(read[i], plain[i], "gradient " + std::to_string(i));
  // Replacing the stream after block 0 makes it a constant: nothing flows into the embeddings
  // or block 0, while block 1 and the head still get their gradients.
  Tracer replacing;
  replacing.add_hook("layers.0.out", [](const std::string&, Array& v) { v *= 2; });
  const std::vector<Array> replaced = gradients(*model, &replacing);
  std::size_t i = 0;
  for (auto& [name, p] : model->named_parameters()) {
    double size = 0;
    for (Scalar g : replaced[i]) size += std::abs(g);
    const bool before = name.rfind("tok_embeddings", 0) == 0 || name.rfind("layers.0.", 0) == 0;
    if (before)
      EXPECT_EQ(size, 0.0) << name;
    else
      EXPECT_GT(size, 0.0) << name;
    ++i;
  }
}

TEST(HookPoints, AHookThatChangesTheShapeIsRefused) {
  auto model = twin_model();
  Tracer tracer;
  tracer.add_hook("layers.0.out", [](const std::string&, Array& v) {
    v = Array::from_shape({2, 2});
  });
  EXPECT_THROW(run_with_hooks(*model, glass_test::twin_tokens(), tracer), std::invalid_argument);
}

// ---- logit lens ----------------------------------------------------------------------------

TEST(LogitLens, TheLastLayerIsTheModelsLogitsBitForBit) {
  auto model = twin_model();
  const LogitLens lens = logit_lens(*model, kPrompt, 3);
  const std::size_t T = kPrompt.size(), V = 11;
  ASSERT_EQ(lens.points, (std::vector<std::string>{"embeddings", "layers.0.out", "layers.1.out"}));
  ASSERT_EQ(shape_of(lens.logits), (Shape{3, T, V}));
  const Array logits = plain_logits(*model, as_batch(kPrompt));  // (1, T, V)
  for (std::size_t i = 0; i < T * V; ++i)
    ASSERT_EQ(lens.logits.data()[2 * T * V + i], logits.data()[i]) << i;
  // The same through the fast path's forward (no tracer) to rounding.
  auto fast = twin_model();
  fast->set_ops_path(OpsPath::fast);
  const Array fast_logits = plain_logits(*fast, as_batch(kPrompt));
  for (std::size_t i = 0; i < T * V; ++i)
    ASSERT_NEAR(lens.logits.data()[2 * T * V + i], fast_logits.data()[i], 1e-12);
}

TEST(RecipeOptions, HooksAndTheLogitLensRunEachOption) {
  // With QK-norm, the ReLU² MLP or soft-capping on, the traced forward (reference path, hooks
  // that change nothing) gives the NumPy reference's logits, and the logit lens's last row is
  // the model's logits bit for bit: the lens soft-caps too.
  const std::vector<std::pair<void (*)(ModelConfig&), const std::vector<double>& (*)()>> cases = {
      {[](ModelConfig& c) { c.qk_norm = true; }, glass_test::recipe_qk_norm_logits},
      {[](ModelConfig& c) { c.mlp = Mlp::relu2; }, glass_test::recipe_relu2_logits},
      {[](ModelConfig& c) { c.logit_softcap = glass_test::kReferenceSoftcap; },
       glass_test::recipe_softcap_logits}};
  for (std::size_t k = 0; k < cases.size(); ++k) {
    ModelConfig config = glass_test::twin_config();
    cases[k].first(config);
    config.ops_path = OpsPath::reference;
    Decoder model(config, 0);
    glass_test::set_reference_weights(model);
    Tracer tracer;
    tracer.add_hook("", [](const std::string&, Array&) {});
    const Array hooked = run_with_hooks(model, glass_test::twin_tokens(), tracer);
    const std::vector<double>& expected = cases[k].second();
    ASSERT_EQ(hooked.size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i)
      ASSERT_NEAR(hooked.data()[i], expected[i], 1e-11) << "option " << k << " index " << i;
    const LogitLens lens = logit_lens(model, kPrompt, 3);
    const std::size_t T = kPrompt.size(), V = 11;
    const Array logits = plain_logits(model, as_batch(kPrompt));
    for (std::size_t i = 0; i < T * V; ++i)
      ASSERT_EQ(lens.logits.data()[2 * T * V + i], logits.data()[i]) << "option " << k;
  }
}

TEST(LogitLens, TheEmbeddingRowEqualsAHandComputedLens) {
  // Independent of the model's code: e = tok_embeddings[id], r = e / sqrt(mean(e^2) + eps) * g,
  // logits = output.weight @ r, computed here in plain loops.
  auto model = twin_model();
  const LogitLens lens = logit_lens(*model, kPrompt, 11);
  const std::size_t T = kPrompt.size(), V = 11, d = 16;
  const Array& E = model->tok_embeddings.weight.value();
  const Array& g = model->norm.weight.value();
  const Array& W = model->output.weight.value();
  for (std::size_t t = 0; t < T; ++t) {
    double ms = 0;
    for (std::size_t i = 0; i < d; ++i) ms += E(kPrompt[t], i) * E(kPrompt[t], i);
    const double inv = 1.0 / std::sqrt(ms / d + model->config().norm_eps);
    std::vector<double> logit(V, 0.0);
    double max = -1e300, total = 0;
    for (std::size_t v = 0; v < V; ++v) {
      for (std::size_t i = 0; i < d; ++i) logit[v] += W(v, i) * E(kPrompt[t], i) * inv * g(i);
      EXPECT_NEAR(lens.logits(0, t, v), logit[v], 1e-12) << t << ", " << v;
      max = std::max(max, logit[v]);
    }
    for (std::size_t v = 0; v < V; ++v) total += std::exp(logit[v] - max);
    if (t + 1 < T) {
      EXPECT_NEAR(lens.next_prob(0, t), std::exp(logit[kPrompt[t + 1]] - max) / total, 1e-12);
    }
  }
}

TEST(LogitLens, TopTokensAreSortedAndNextProbReadsTheTrueToken) {
  auto model = twin_model();
  const LogitLens lens = logit_lens(*model, kPrompt, 4);
  for (std::size_t s = 0; s < 3; ++s)
    for (std::size_t t = 0; t < kPrompt.size(); ++t) {
      for (std::size_t j = 0; j < 4; ++j) {
        EXPECT_EQ(lens.top_probs(s, t, j),
                  lens.probs(s, t, static_cast<std::size_t>(lens.top_ids(s, t, j))));
        if (j > 0) {
          EXPECT_GE(lens.top_probs(s, t, j - 1), lens.top_probs(s, t, j));
        }
      }
      // No token outside the top 4 is more probable than the 4th.
      for (std::size_t v = 0; v < 11; ++v) {
        bool in_top = false;
        for (std::size_t j = 0; j < 4; ++j)
          in_top = in_top || lens.top_ids(s, t, j) == static_cast<std::int32_t>(v);
        if (!in_top) {
          EXPECT_LE(lens.probs(s, t, v), lens.top_probs(s, t, 3));
        }
      }
      if (t + 1 < kPrompt.size()) {
        EXPECT_EQ(lens.next_prob(s, t), lens.probs(s, t, static_cast<std::size_t>(kPrompt[t + 1])));
      }
    }
  EXPECT_THROW(logit_lens(*model, kPrompt, 0), std::invalid_argument);
  EXPECT_THROW(logit_lens(*model, kPrompt, 12), std::invalid_argument);
  EXPECT_THROW(logit_lens(*model, {}, 3), std::invalid_argument);
  EXPECT_THROW(logit_lens(*model, {1, 11}, 3), std::invalid_argument);  // id outside the vocabulary
}

// ---- head ablation -------------------------------------------------------------------------

// The model with W_O's columns of `heads` zeroed: the reference ablation.
Array logits_with_wo_columns_zeroed(const std::vector<HeadRef>& heads, const Ids& tokens) {
  auto model = twin_model();
  const std::size_t hd = model->config().head_dim();
  for (const HeadRef& h : heads) {
    Array& wo =
        model->layers[h.layer]->attention.wo.weight.value();  // (d_model, n_heads * head_dim)
    for (std::size_t r = 0; r < wo.shape()[0]; ++r)
      for (std::size_t c = h.head * hd; c < (h.head + 1) * hd; ++c) wo(r, c) = 0;
  }
  return plain_logits(*model, tokens);
}

TEST(HeadAblation, ZeroAblationIsTheModelWithThoseColumnsOfWoZeroed) {
  auto model = twin_model();
  const Ids tokens = glass_test::twin_tokens();
  for (const std::vector<HeadRef>& heads :
       std::vector<std::vector<HeadRef>>{{{1, 2}}, {{0, 0}}, {{0, 1}, {1, 3}, {1, 0}}}) {
    const Array ablated = ablated_logits(*model, tokens, heads, AblationMode::zero);
    const Array reference = logits_with_wo_columns_zeroed(heads, tokens);
    expect_near(ablated, reference, 1e-12, "zero ablation");
    // ... and it does change the logits.
    double change = 0;
    const Array plain = plain_logits(*model, tokens);
    for (std::size_t i = 0; i < plain.size(); ++i)
      change = std::max(change, std::abs(plain.data()[i] - ablated.data()[i]));
    EXPECT_GT(change, 1e-3);
  }
}

TEST(HeadAblation, TheLossTableIsTheLossOfEachAblatedModel) {
  auto model = twin_model();
  const Ids all = glass_test::twin_tokens();  // (2, 7): inputs = first 6, targets = last 6
  Ids inputs = Ids::from_shape({2, 6}), targets = Ids::from_shape({2, 6});
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t t = 0; t < 6; ++t) inputs(b, t) = all(b, t), targets(b, t) = all(b, t + 1);
  const AblationTable table = ablation_table(*model, inputs, targets, AblationMode::zero);
  ASSERT_EQ(shape_of(table.delta_loss), (Shape{2, 4}));
  NoGradGuard no_grad;
  const double base = cross_entropy(Tensor(plain_logits(*model, inputs)), targets).value()();
  EXPECT_NEAR(table.base_loss, base, 1e-12);
  for (std::size_t L = 0; L < 2; ++L)
    for (std::size_t h = 0; h < 4; ++h) {
      const double loss =
          cross_entropy(Tensor(logits_with_wo_columns_zeroed({{L, h}}, inputs)), targets).value()();
      EXPECT_NEAR(table.delta_loss(L, h), loss - base, 1e-12) << L << ", " << h;
    }
}

TEST(HeadAblation, HeadMeansAreTheMeanOverBatchAndPositions) {
  auto model = twin_model();
  const Ids tokens = glass_test::twin_tokens();  // (2, 7)
  const HeadMeans means = head_means(*model, tokens);
  ASSERT_EQ(means.size(), 2u);
  for (std::size_t L = 0; L < 2; ++L) {
    ASSERT_EQ(shape_of(means[L]), (Shape{4, 4}));
    std::vector<double> sum(16, 0.0);
    for (std::size_t b = 0; b < 2; ++b) {
      Tracer tracer(b);
      run_with_hooks(*model, tokens, tracer);
      const Array& mix = tracer.get(attention_point(L, "mix"));  // (4, 7, 4)
      for (std::size_t h = 0; h < 4; ++h)
        for (std::size_t t = 0; t < 7; ++t)
          for (std::size_t i = 0; i < 4; ++i) sum[h * 4 + i] += mix(h, t, i);
    }
    for (std::size_t j = 0; j < 16; ++j) EXPECT_NEAR(means[L].data()[j], sum[j] / 14.0, 1e-14);
  }
}

TEST(HeadAblation, MeanAblationOnItsOwnSinglePositionChangesNothing) {
  // With a reference batch of one token, the mean output of every head is its output there:
  // mean-ablating any head on that token leaves the logits as they were.
  auto model = twin_model();
  const Ids one = as_batch({7});
  const HeadMeans means = head_means(*model, one);
  const Array ablated = ablated_logits(*model, one, {{0, 1}, {1, 2}}, AblationMode::mean, &means);
  expect_near(ablated, plain_logits(*model, one), 1e-14, "mean ablation on its own reference");
  EXPECT_THROW(ablated_logits(*model, one, {{0, 1}}, AblationMode::mean), std::invalid_argument);
  EXPECT_THROW(ablated_logits(*model, one, {{2, 0}}, AblationMode::zero), std::invalid_argument);
  EXPECT_THROW(ablated_logits(*model, one, {{0, 4}}, AblationMode::zero), std::invalid_argument);
}

TEST(HeadAblation, NextTokenShiftComparesTheLastPositionsDistributions) {
  auto model = twin_model();
  const NextTokenShift shift = next_token_shift(*model, kPrompt, {{1, 1}}, AblationMode::zero);
  const LogitLens lens = logit_lens(*model, kPrompt, 1);
  const Array ablated = logits_with_wo_columns_zeroed({{1, 1}}, as_batch(kPrompt));
  double kl = 0, max = -1e300, total = 0;
  const std::size_t T = kPrompt.size();
  for (std::size_t v = 0; v < 11; ++v)
    max = std::max(max, static_cast<double>(ablated(0, T - 1, v)));
  for (std::size_t v = 0; v < 11; ++v) total += std::exp(ablated(0, T - 1, v) - max);
  for (std::size_t v = 0; v < 11; ++v) {
    const double q = std::exp(ablated(0, T - 1, v) - max) / total, p = lens.probs(2, T - 1, v);
    EXPECT_NEAR(shift.before(v), p, 1e-14);
    EXPECT_NEAR(shift.after(v), q, 1e-12);
    kl += p * std::log(p / q);
  }
  EXPECT_NEAR(shift.kl_divergence, kl, 1e-12);
  EXPECT_GT(shift.kl_divergence, 0.0);
}

// ---- activation patching -------------------------------------------------------------------

// Clean and corrupted prompts differ at position 2 only.
const Tokens kClean = {1, 6, 0, 5, 10, 4};
const Tokens kCorrupted = {1, 6, 8, 5, 10, 4};

TEST(ActivationPatching, PatchingTheWholeLastLayerRestoresTheCleanLogits) {
  auto model = twin_model();
  Tracer clean_run;
  const Array clean = run_with_hooks(*model, as_batch(kClean), clean_run);  // (1, T, V)
  const Array patched =
      patched_logits(*model, kCorrupted, "layers.1.out", clean_run.get("layers.1.out"));
  expect_bitwise_equal(patched, clean, "patched logits");
  // Patching the embeddings at the one position where the prompts differ does too.
  expect_bitwise_equal(
      patched_logits(*model, kCorrupted, "embeddings", clean_run.get("embeddings"), 2), clean,
      "patched at the differing token");
  EXPECT_THROW(patched_logits(*model, kCorrupted, "layers.9.out", clean_run.get("layers.1.out")),
               std::invalid_argument);
  EXPECT_THROW(patched_logits(*model, kCorrupted, "layers.1.out", clean_run.get("layers.1.out"), 6),
               std::invalid_argument);
  EXPECT_THROW(
      patched_logits(*model, kCorrupted, "layers.1.out", clean_run.get("layers.1.out"), 0, 1),
      std::invalid_argument);
}

TEST(ActivationPatching, PatchingNothingLeavesTheCorruptedLogits) {
  auto model = twin_model();
  const Array corrupted = plain_logits(*model, as_batch(kCorrupted));
  Tracer corrupted_run;
  run_with_hooks(*model, as_batch(kCorrupted), corrupted_run);
  // Patching the corrupted run with its own values is patching nothing.
  expect_bitwise_equal(
      patched_logits(*model, kCorrupted, "layers.0.out", corrupted_run.get("layers.0.out")),
      corrupted, "self-patched");
}

TEST(ActivationPatching, TheResidualSweepRecoversAllAtTheLastPositionOfTheLastLayer) {
  auto model = twin_model();
  const PatchingResult r = patch_residual_stream(*model, kClean, kCorrupted, 3, 7);
  const std::size_t T = kClean.size();
  ASSERT_EQ(shape_of(r.recovered), (Shape{3, T}));
  const Array clean = plain_logits(*model, as_batch(kClean)),
              corrupted = plain_logits(*model, as_batch(kCorrupted));
  EXPECT_EQ(r.clean_diff, clean(0, T - 1, 3) - clean(0, T - 1, 7));
  EXPECT_EQ(r.corrupted_diff, corrupted(0, T - 1, 3) - corrupted(0, T - 1, 7));
  ASSERT_NE(r.clean_diff, r.corrupted_diff);
  // The last layer at the last position: the final norm and head act per position, so the
  // clean logits come back exactly.
  EXPECT_EQ(r.recovered(2, T - 1), 1.0);
  EXPECT_EQ(r.patched_diff(2, T - 1), r.clean_diff);
  // At the embeddings, only the differing position carries anything, and all of it.
  for (std::size_t t = 0; t < T; ++t) EXPECT_EQ(r.recovered(0, t), t == 2 ? 1.0 : 0.0) << t;
  // Before position 2 the prompts agree at every layer: nothing to recover.
  for (std::size_t s = 0; s < 3; ++s)
    for (std::size_t t = 0; t < 2; ++t) EXPECT_EQ(r.recovered(s, t), 0.0) << s << ", " << t;
  // The recovered fraction is the formula on the patched difference.
  for (std::size_t s = 0; s < 3; ++s)
    for (std::size_t t = 0; t < T; ++t)
      EXPECT_NEAR(r.recovered(s, t),
                  (r.patched_diff(s, t) - r.corrupted_diff) / (r.clean_diff - r.corrupted_diff),
                  1e-15);
  EXPECT_THROW(patch_residual_stream(*model, kClean, {1, 2}, 3, 7), std::invalid_argument);
  EXPECT_THROW(patch_residual_stream(*model, kClean, kCorrupted, 11, 7), std::invalid_argument);
}

TEST(ActivationPatching, PatchingEveryHeadOfTheLastLayerGivesItsCleanOutput) {
  auto model = twin_model();
  Tracer clean_run;
  run_with_hooks(*model, as_batch(kClean), clean_run);
  // Patching each head of layer 1 one after another, through one tracer, is patching all of
  // "layers.1.attn.mix": the same logits as the corrupted run with the clean layer-1 attention
  // output, computed here by replacing "layers.1.attn.out".
  Tracer all_heads;
  all_heads.set_recording(false);
  const Array& mix = clean_run.get("layers.1.attn.mix");
  all_heads.add_hook("layers.1.attn.mix", [&](const std::string&, Array& v) {
    std::copy(mix.begin(), mix.end(), v.begin());
  });
  const Array a = run_with_hooks(*model, as_batch(kCorrupted), all_heads);
  Tracer out_patch;
  const Array& out = clean_run.get("layers.1.attn.out");
  out_patch.add_hook("layers.1.attn.out", [&](const std::string&, Array& v) {
    std::copy(out.begin(), out.end(), v.begin());
  });
  expect_bitwise_equal(a, run_with_hooks(*model, as_batch(kCorrupted), out_patch),
                       "all heads vs attn.out");

  const PatchingResult r = patch_head_outputs(*model, kClean, kCorrupted, 3, 7);
  ASSERT_EQ(shape_of(r.recovered), (Shape{2, 4}));
  EXPECT_EQ(r.rows, (std::vector<std::string>{"layers.0", "layers.1"}));
  for (std::size_t L = 0; L < 2; ++L)
    for (std::size_t h = 0; h < 4; ++h) {
      const Array p = patched_logits(*model, kCorrupted, attention_point(L, "mix"),
                                     clean_run.get(attention_point(L, "mix")), std::nullopt, h);
      EXPECT_EQ(r.patched_diff(L, h), p(kClean.size() - 1, 3) - p(kClean.size() - 1, 7));
    }
}

}  // namespace
