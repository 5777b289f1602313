// Direct logit attribution and attribution patching in float: the parts sum to the logit within
// 1e-4, the formula against literal values computed by NumPy, Spearman's rank correlation by
// hand, and bad input refused with a message.

#include <gtest/gtest.h>

#include <cmath>

#include "interp_util.hpp"

namespace {

using namespace glass;
using interp_test::twin_model;

const Tokens kPrompt = {1, 6, 0, 5, 10, 4, 9, 3};

TEST(DirectEffects, MatchesTheNumPyReference) {
  // tests/interp/reference/make_dla_reference.py: three parts of a stream of width 4.
  const Array parts = {{0.5, -1.0, 2.0, 0.25}, {1.5, 0.5, -0.75, 1.0}, {-0.25, 2.0, 0.5, -1.5}};
  const Array unembed = {0.3, -0.2, 0.7, 1.1};
  const Array gain = {1.0, 0.5, 2.0, 1.5};
  const Array x = xt::sum(parts, {0});
  const double scale = rms_scale(x, 1e-5);
  EXPECT_NEAR(scale, 0.6885287405929047, 1e-6);
  const Array effects = direct_effects(parts, unembed, gain, scale);
  EXPECT_NEAR(effects(0), 2.384030764302932, 1e-5);
  EXPECT_NEAR(effects(1), 0.688528740592905, 1e-5);
  EXPECT_NEAR(effects(2), -1.411483918215455, 1e-5);
  EXPECT_NEAR(effects(0) + effects(1) + effects(2), 1.6610755866803824, 1e-5);
  EXPECT_THROW(direct_effects(parts, Array({1.0, 2.0}), gain, scale), std::invalid_argument);
}

TEST(LogitAttribution, PartsSumToTheLogitWithin1e4) {
  // The twin, and a model of the default shape (d_model 128, 4 layers) with random weights.
  auto twin = twin_model();
  ModelConfig config;
  config.vocab_size = 83;
  Decoder wide(config, 3);
  Tokens long_prompt;
  for (int i = 0; i < 40; ++i) long_prompt.push_back((i * 37 + 5) % 83);
  for (const Decoder* model : {twin.get(), &wide}) {
    const Tokens& tokens = model == &wide ? long_prompt : kPrompt;
    for (std::size_t t : {std::size_t{0}, tokens.size() / 2, tokens.size() - 1}) {
      const LogitAttribution a = logit_attribution(*model, tokens, t);
      EXPECT_NEAR(a.total(), a.logit, 1e-4) << "position " << t;
      const LogitAttribution diff = logit_attribution(*model, tokens, t, 3, 1);
      EXPECT_NEAR(diff.total(), diff.logit, 1e-4) << "position " << t;
    }
  }
}

TEST(LogitAttribution, WithSoftCappingThePartsSumToTheLogitBeforeTheCap) {
  // A random model whose logits are capped at 2: its capped logits are far from the sum of the
  // parts, the logits before the cap (cap * atanh(logit / cap)) are not.
  ModelConfig config;
  config.vocab_size = 83;
  config.logit_softcap = 2.0;
  Decoder capped(config, 3);
  Tokens prompt;
  for (int i = 0; i < 24; ++i) prompt.push_back((i * 37 + 5) % 83);
  const Array logits = interp_test::plain_logits(capped, as_batch(prompt));
  const std::size_t t = prompt.size() - 1;
  const LogitAttribution a = logit_attribution(capped, prompt, t, 7);
  EXPECT_TRUE(a.capped);
  const double raw = static_cast<double>(logits(0, t, 7));
  EXPECT_LT(std::abs(raw), 2.0);
  EXPECT_NEAR(a.logit, 2.0 * std::atanh(raw / 2.0), 1e-6);
  EXPECT_NEAR(a.total(), a.logit, 1e-4);
  const LogitAttribution diff = logit_attribution(capped, prompt, t, 7, 11);
  EXPECT_NEAR(diff.total(), diff.logit, 1e-4);
  EXPECT_FALSE(logit_attribution(*interp_test::twin_model(), kPrompt).capped);
}

TEST(LogitAttribution, DefaultsToTheLastPositionAndTheTopToken) {
  auto model = twin_model();
  const LogitAttribution a = logit_attribution(*model, kPrompt);
  EXPECT_EQ(a.position, kPrompt.size() - 1);
  const Array logits = interp_test::plain_logits(*model, as_batch(kPrompt));
  const std::size_t V = 11, t = kPrompt.size() - 1;
  for (std::size_t v = 0; v < V; ++v) EXPECT_LE(logits(0, t, v), logits(0, t, a.target));
  EXPECT_NEAR(a.logit, logits(0, t, a.target), 1e-6);
  EXPECT_FALSE(a.other.has_value());
  EXPECT_EQ(a.heads.shape()[0], 2u);
  EXPECT_EQ(a.heads.shape()[1], 4u);
  EXPECT_EQ(a.mlps.size(), 2u);
}

TEST(LogitAttribution, RefusesBadInput) {
  auto model = twin_model();
  EXPECT_THROW(logit_attribution(*model, {}), std::invalid_argument);
  try {
    logit_attribution(*model, kPrompt, kPrompt.size());
    FAIL() << "a position past the prompt was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("position 8 is outside the prompt's 8 positions"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(logit_attribution(*model, kPrompt, std::nullopt, 11), std::invalid_argument);
  EXPECT_THROW(logit_attribution(*model, kPrompt, std::nullopt, -1), std::invalid_argument);
  EXPECT_THROW(logit_attribution(*model, kPrompt, std::nullopt, 2, 11), std::invalid_argument);
}

TEST(AttributionPatching, RefusesBadInput) {
  auto model = twin_model();
  const PatchMetric metric{PatchMetric::Kind::logit_diff, 3, 8};
  Tokens shorter = kPrompt;
  shorter.pop_back();
  try {
    attribution_patching(*model, kPrompt, shorter, metric);
    FAIL() << "prompts of different lengths were accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("same length"), std::string::npos) << e.what();
  }
  EXPECT_THROW(exact_patching(*model, kPrompt, shorter, metric), std::invalid_argument);
  EXPECT_THROW(attribution_patching(*model, {}, {}, metric), std::invalid_argument);
  EXPECT_THROW(attribution_patching(*model, kPrompt, kPrompt, {PatchMetric::Kind::log_prob, 11, 0}),
               std::invalid_argument);
}

TEST(AttributionPatching, SamePromptsGiveNoEffect) {
  auto model = twin_model();
  const PatchMetric metric{PatchMetric::Kind::log_prob, 4, 0};
  const AttributionPatching a = attribution_patching(*model, kPrompt, kPrompt, metric);
  EXPECT_EQ(a.total.clean, a.total.corrupted);
  for (Scalar v : a.head_positions) EXPECT_EQ(v, 0);
  for (Scalar v : a.mlp_positions) EXPECT_EQ(v, 0);
}

TEST(Spearman, RanksByHand) {
  // Ranks (1, 2, 3, 4) and (1, 3, 2, 4): sum of squared rank differences 2,
  // rho = 1 - 6 * 2 / (4 * 15) = 0.8.
  EXPECT_NEAR(spearman(Array({10.0, 20.0, 30.0, 40.0}), Array({-5.0, 7.0, 1.0, 9.0})), 0.8, 1e-12);
  EXPECT_NEAR(spearman(Array({1.0, 2.0, 3.0}), Array({30.0, 20.0, 10.0})), -1.0, 1e-12);
  // Ties get their mean rank: (1.5, 1.5, 3) against (1, 2, 3) -> rho = sqrt(3) / 2.
  EXPECT_NEAR(spearman(Array({5.0, 5.0, 9.0}), Array({1.0, 2.0, 3.0})), std::sqrt(3.0) / 2, 1e-12);
  EXPECT_TRUE(std::isnan(spearman(Array({1.0, 1.0}), Array({1.0, 2.0}))));
  EXPECT_THROW(spearman(Array({1.0}), Array({1.0})), std::invalid_argument);
  EXPECT_THROW(spearman(Array({1.0, 2.0}), Array({1.0, 2.0, 3.0})), std::invalid_argument);
}

TEST(TracerWatch, NamesWhatWasNotWatchedOrNotReached) {
  Tracer tracer;
  EXPECT_THROW(tracer.watched("layers.0.attn.mix"), std::out_of_range);
  tracer.watch("layers.9.attn.mix");
  auto model = twin_model();
  run_with_hooks(*model, as_batch(kPrompt), tracer);
  EXPECT_THROW(tracer.watched("layers.9.attn.mix"), std::out_of_range);
  // Under NoGradGuard (run_with_hooks) a watched tensor is kept as it went on: not a new leaf.
  tracer.watch("layers.1.out");
  run_with_hooks(*model, as_batch(kPrompt), tracer);
  EXPECT_FALSE(tracer.watched("layers.1.out").requires_grad());
  EXPECT_EQ(tracer.watched("layers.1.out").shape(), (Shape{1, kPrompt.size(), 16}));
}

}  // namespace
