// Browsing an SAE's latents (interp/sae_inspect.hpp) with SAEs built by hand whose latents are
// known directions: the top contexts are the tokens the direction reads, the histogram and the
// density count those tokens, the promoted tokens are W_dec g W_U worked by loops here, and a
// prompt's latents are those the encoder picks.

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>

#include <gtest/gtest.h>

#include "autograd/tape.hpp"
#include "interp/sae_inspect.hpp"
#include "interp_util.hpp"

namespace {

using namespace glass;

/// An SAE of `F` latents, k = 1, whose latent 0 reads the unit direction `u` (W_enc row 0 = u,
/// W_dec row 0 = u) and whose other latents read nothing (zero encoder rows, unit decoder rows
/// along axis i): latent 0 alone fires, with activation ReLU(u . x).
std::unique_ptr<SparseAutoencoder> one_direction_sae(const std::vector<double>& u, std::size_t F) {
  Rng rng(1);
  auto owned = std::make_unique<SparseAutoencoder>(u.size(), F, 1, rng);
  SparseAutoencoder& sae = *owned;
  sae.W_enc.value().fill(0);
  sae.W_dec.value().fill(0);
  for (std::size_t i = 0; i < u.size(); ++i) {
    sae.W_enc.value()(0, i) = static_cast<Scalar>(u[i]);
    sae.W_dec.value()(0, i) = static_cast<Scalar>(u[i]);
  }
  for (std::size_t f = 1; f < F; ++f) sae.W_dec.value()(f, f % u.size()) = 1;
  return owned;
}

std::vector<double> unit_embedding(const Decoder& model, std::int32_t token) {
  const Array& E = model.tok_embeddings.weight.value();
  std::vector<double> u(E.shape()[1]);
  double n2 = 0;
  for (std::size_t i = 0; i < u.size(); ++i) n2 += (u[i] = E(token, i)) * u[i];
  for (double& v : u) v /= std::sqrt(n2);
  return u;
}

/// A text of `n` tokens drawn from 1 .. V-1 by a fixed generator.
Tokens some_text(std::size_t n, std::size_t V) {
  std::mt19937 gen(7);
  Tokens t(n);
  for (auto& id : t) id = static_cast<std::int32_t>(1 + gen() % (V - 1));
  return t;
}

TEST(SaeInspect, ALatentAlongATokensEmbeddingRanksThatTokensPositionsFirst) {
  const auto model = interp_test::twin_model();
  const std::size_t V = model->config().vocab_size;
  // The token whose embedding its own direction reads hardest (u_j . E[j] = |E[j]|, but
  // another embedding may be longer along u_j): found here, so the test knows its contexts.
  const Array& E = model->tok_embeddings.weight.value();
  std::int32_t token = -1;
  for (std::int32_t j = 1; j < static_cast<std::int32_t>(V) && token < 0; ++j) {
    const std::vector<double> u = unit_embedding(*model, j);
    bool best = true;
    for (std::size_t o = 0; o < V; ++o) {
      double dot_o = 0, dot_j = 0;
      for (std::size_t i = 0; i < u.size(); ++i) dot_o += u[i] * E(o, i), dot_j += u[i] * E(j, i);
      if (o != static_cast<std::size_t>(j) && dot_o >= dot_j) best = false;
    }
    if (best) token = j;
  }
  ASSERT_GE(token, 1);
  const auto sae_owned = one_direction_sae(unit_embedding(*model, token), 6);
  const SparseAutoencoder& sae = *sae_owned;
  const Tokens text = some_text(100, V);
  std::vector<std::size_t> where;
  for (std::size_t t = 0; t < text.size(); ++t)
    if (text[t] == token) where.push_back(t);
  ASSERT_GE(where.size(), 3u);

  const SparseCodes codes = encode_text(*model, sae, 0, text, 16, 3);  // point "embeddings"
  EXPECT_EQ(codes.tokens, text.size());
  const LatentSummary s = summarize_latent(codes, 0, where.size(), 4);
  ASSERT_EQ(s.top.size(), where.size());
  // Every occurrence of the token ties at |E[token]|: ranked first, in text order.
  for (std::size_t j = 0; j < where.size(); ++j) EXPECT_EQ(s.top[j].position, where[j]) << j;
  double norm = 0;
  for (std::size_t i = 0; i < E.shape()[1]; ++i) norm += E(token, i) * E(token, i);
  EXPECT_NEAR(s.top[0].activation, std::sqrt(norm), 1e-5);
  EXPECT_NEAR(s.max_activation, std::sqrt(norm), 1e-5);
  // The histogram counts every token where it fired; the top bin holds the token's hits.
  std::size_t counted = 0;
  for (std::size_t c : s.histogram) counted += c;
  EXPECT_EQ(counted, s.fired);
  EXPECT_GE(s.histogram.back(), where.size());
  EXPECT_DOUBLE_EQ(s.density(), static_cast<double>(s.fired) / 100.0);
  // Latents 1.. never fire: their encoder rows are zero.
  EXPECT_EQ(summarize_latent(codes, 3).fired, 0u);
  EXPECT_EQ(firing_counts(codes)[0], s.fired);
  EXPECT_THROW(summarize_latent(codes, 6), std::invalid_argument);
}

TEST(SaeInspect, ALatentAfterABlockRanksTheTokensWhoseStreamItReadsHardest) {
  // At layers.0.out the stream depends on the context: the activations are checked against the
  // stream read here by a snapshot, window by window, and the ranking against a sort of them.
  const auto model = interp_test::twin_model();
  std::vector<double> u(16, 0.0);
  u[3] = 0.6, u[7] = -0.8;
  const auto sae_owned = one_direction_sae(u, 4);
  const SparseAutoencoder& sae = *sae_owned;
  const Tokens text = some_text(40, model->config().vocab_size);
  const std::size_t window = 16;
  std::vector<double> expected;
  for (std::size_t start = 0; start < text.size(); start += window) {
    const Tokens w(text.begin() + start, text.begin() + std::min(text.size(), start + window));
    Tracer tracer;
    run_with_hooks(*model, as_batch(w), tracer);
    const Array& x = tracer.get("layers.0.out");  // (T, d)
    for (std::size_t t = 0; t < w.size(); ++t) {
      double dot = 0;
      for (std::size_t i = 0; i < 16; ++i) dot += u[i] * x(t, i);
      expected.push_back(std::max(0.0, dot));
    }
  }
  const SparseCodes codes = encode_text(*model, sae, 1, text, window);
  const LatentSummary s = summarize_latent(codes, 0, 5);
  std::vector<std::size_t> order(text.size());
  for (std::size_t t = 0; t < order.size(); ++t) order[t] = t;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return expected[a] > expected[b]; });
  ASSERT_EQ(s.top.size(), 5u);
  for (std::size_t j = 0; j < 5; ++j) {
    EXPECT_EQ(s.top[j].position, order[j]) << j;
    EXPECT_NEAR(s.top[j].activation, expected[order[j]], 1e-5) << j;
  }
  const std::size_t positive =
      std::count_if(expected.begin(), expected.end(), [](double a) { return a > 0; });
  EXPECT_EQ(s.fired, positive);
}

TEST(SaeInspect, PromotedTokensAreTheDecoderRowThroughTheFinalGainAndTheOutputMatrix) {
  auto model = interp_test::twin_model();
  // A gain that is not all ones, so that leaving it out would show.
  for (std::size_t i = 0; i < 16; ++i) model->norm.weight.value()(i) = 0.5 + 0.1 * i;
  Rng rng(4);
  const SparseAutoencoder sae(16, 8, 2, rng);
  const std::size_t latent = 5;
  const LogitEffects e = latent_logit_effects(*model, sae, latent, 3);
  const Array& W_U = model->output.weight.value();
  std::vector<double> hand(11, 0.0);
  for (std::size_t v = 0; v < 11; ++v)
    for (std::size_t i = 0; i < 16; ++i)
      hand[v] += sae.W_dec.value()(latent, i) * model->norm.weight.value()(i) * W_U(v, i);
  for (std::size_t v = 0; v < 11; ++v) EXPECT_NEAR(e.effect[v], hand[v], 1e-5) << v;
  const auto top = std::max_element(hand.begin(), hand.end()) - hand.begin();
  const auto bottom = std::min_element(hand.begin(), hand.end()) - hand.begin();
  ASSERT_EQ(e.promoted.size(), 3u);
  EXPECT_EQ(e.promoted[0].token, top);
  EXPECT_EQ(e.suppressed[0].token, bottom);
  EXPECT_GE(e.promoted[0].score, e.promoted[1].score);
  EXPECT_LE(e.suppressed[0].score, e.suppressed[1].score);
  EXPECT_THROW(latent_logit_effects(*model, sae, 8), std::invalid_argument);
}

TEST(SaeInspect, APromptsLatentsAreThoseTheEncoderKeeps) {
  const auto model = interp_test::twin_model();
  Rng rng(9);
  const SparseAutoencoder sae(16, 12, 3, rng);
  const Tokens prompt = {1, 4, 2, 8, 5};
  const auto per_position = prompt_latents(*model, sae, 2, prompt, 2);
  ASSERT_EQ(per_position.size(), prompt.size());
  Tracer tracer;
  run_with_hooks(*model, as_batch(prompt), tracer);
  NoGradGuard no_grad;
  const Array z = sae.encode(Tensor(Array(tracer.get("layers.1.out")))).value();  // (T, F)
  for (std::size_t t = 0; t < prompt.size(); ++t) {
    ASSERT_LE(per_position[t].size(), 2u);
    double best = 0;
    for (std::size_t f = 0; f < 12; ++f) best = std::max(best, static_cast<double>(z(t, f)));
    if (best > 0) {
      ASSERT_FALSE(per_position[t].empty());
      EXPECT_EQ(per_position[t][0].activation, best);
      EXPECT_EQ(z(t, per_position[t][0].latent), best);
    }
  }
}

TEST(SaeInspect, AHitsContextStaysInsideItsWindow) {
  const Tokens text = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  auto decode = [](const Tokens& t) {
    std::string s;
    for (auto id : t) s += static_cast<char>('a' + id);
    return s;
  };
  const HitContext c = hit_context(text, {5, 2.5}, 4, 3, 3, decode);  // window [4, 8)
  EXPECT_EQ(c.before, "f");
  EXPECT_EQ(c.token, "g");
  EXPECT_EQ(c.after, "hi");
  EXPECT_EQ(c.activation, 2.5);
}

TEST(SaeInspect, RefusesAnSaeOfAnotherWidthAndAnUnknownPoint) {
  const auto model = interp_test::twin_model();
  Rng rng(2);
  const SparseAutoencoder narrow(8, 4, 1, rng);
  EXPECT_THROW(encode_text(*model, narrow, 0, {1, 2}, 4), std::invalid_argument);
  EXPECT_THROW(residual_point_index(*model, "layers.7.out"), std::invalid_argument);
  EXPECT_EQ(residual_point_index(*model, "layers.1.out"), 2u);
}

}  // namespace
