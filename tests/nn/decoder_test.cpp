// Tests of the decoder in float: configuration, parameters and init, attention
// against a loop-by-loop reference, RoPE properties, the KV cache, the tracer, errors.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include "nn/decoder.hpp"
#include "fixtures.hpp"
#include "nn_test_util.hpp"

namespace {

using namespace glass;
using glass_test::random_ids;
using glass_test::random_tensor;
using glass_test::randomize;

/// The tests' small model (fixtures.hpp), vocab 11, 32 positions, with `n_heads` query heads
/// over `n_kv_heads` KV heads.
ModelConfig small_config(std::size_t n_heads = 4, std::size_t n_kv_heads = 2) {
  ModelConfig c = glass_test::small_config(11, 32);
  c.n_heads = n_heads;
  c.n_kv_heads = n_kv_heads;
  return c;
}

double max_abs_diff(const Array& a, const Array& b) {
  EXPECT_EQ(shape_of(a), shape_of(b));
  double worst = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    worst = std::max(worst, std::abs(double(a.data()[i]) - double(b.data()[i])));
  return worst;
}

// Element (i0, i1, ...) of a row-major array.
Scalar at(const Array& a, std::initializer_list<std::size_t> index) {
  std::size_t flat = 0, axis = 0;
  for (std::size_t i : index) flat = flat * a.shape()[axis++] + i;
  return a.data()[flat];
}

// ---- configuration -------------------------------------------------------------------------

TEST(ModelConfig, DefaultsAreTheProjectModel) {
  ModelConfig c;
  EXPECT_NO_THROW(c.validate());
  EXPECT_EQ(c.d_model, 128u);
  EXPECT_EQ(c.n_layers, 4u);
  EXPECT_EQ(c.n_heads, 4u);
  EXPECT_EQ(c.head_dim(), 32u);
  EXPECT_EQ(c.n_kv_heads, 2u);
  EXPECT_EQ(c.ffn_hidden, 344u);
  EXPECT_EQ(c.context_length, 256u);
  EXPECT_EQ(c.vocab_cap, 1024u);
  EXPECT_DOUBLE_EQ(c.norm_eps, 1e-5);
  EXPECT_DOUBLE_EQ(c.rope_base, 10000.0);
}

// Expects validate() to throw std::invalid_argument whose message contains `why`.
void expect_rejected(const ModelConfig& c, const std::string& why) {
  try {
    c.validate();
    ADD_FAILURE() << "config was accepted; expected an error mentioning \"" << why << "\"";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
}

TEST(ModelConfig, TwoSizesThatDoNotFitNameTheRuleTheFieldsAndTheirValues) {
  // What a front end needs to name the sizes in its own words (glass train: --d-model, ...).
  struct Case {
    std::size_t d_model, n_heads, n_kv_heads;
    SizeRule rule;
    const char *field, *other;
    std::size_t value, other_value;
  };
  for (const Case& k :
       {Case{32, 3, 1, SizeRule::heads_divide_d_model, "d_model", "n_heads", 32, 3},
        Case{32, 4, 3, SizeRule::kv_heads_divide_heads, "n_heads", "n_kv_heads", 4, 3},
        Case{12, 4, 2, SizeRule::even_head_dim, "d_model", "n_heads", 12, 4}}) {
    ModelConfig c;
    c.d_model = k.d_model, c.n_heads = k.n_heads, c.n_kv_heads = k.n_kv_heads;
    try {
      c.validate();
      ADD_FAILURE() << "accepted d_model " << k.d_model << ", n_heads " << k.n_heads;
    } catch (const ModelConfigError& e) {
      EXPECT_EQ(e.rule(), k.rule);
      EXPECT_EQ(e.field(), k.field);
      EXPECT_EQ(e.value(), k.value);
      EXPECT_EQ(e.other_field(), k.other);
      EXPECT_EQ(e.other_value(), k.other_value);
      EXPECT_EQ(std::string(e.what()).rfind("ModelConfig: ", 0), 0u) << e.what();
    }
  }
}

TEST(ModelConfig, InvalidConfigsAreRejectedWithTheReason) {
  ModelConfig c;
  c.d_model = 130;  // 130 / 4 heads is not an integer
  expect_rejected(c, "d_model 130 is not n_heads * head_dim");
  c = ModelConfig();
  c.n_kv_heads = 3;
  expect_rejected(c, "n_heads 4 is not a multiple of n_kv_heads 3");
  c = ModelConfig();
  c.d_model = 12;  // head_dim 3
  expect_rejected(c, "head_dim = d_model / n_heads = 3 is odd");
  for (auto field : {&ModelConfig::vocab_size, &ModelConfig::d_model, &ModelConfig::n_layers,
                     &ModelConfig::n_heads, &ModelConfig::n_kv_heads, &ModelConfig::ffn_hidden,
                     &ModelConfig::context_length}) {
    c = ModelConfig();
    c.*field = 0;
    expect_rejected(c, "must be at least 1");
  }
  c = ModelConfig();
  c.n_heads = 0;
  expect_rejected(c, "n_heads must be at least 1");
  c = ModelConfig();
  c.norm_eps = 0;
  expect_rejected(c, "norm_eps must be a finite number > 0");
  c = ModelConfig();
  c.rope_base = -1;
  expect_rejected(c, "rope_base");
  c = ModelConfig();
  c.vocab_size = 2000;
  expect_rejected(c, "exceeds vocab_cap 1024");
}

TEST(Decoder, ConstructorRejectsAnInvalidConfig) {
  ModelConfig c;
  c.n_kv_heads = 3;
  EXPECT_THROW(Decoder(c, 0), std::invalid_argument);
}

// ---- parameters and init -------------------------------------------------------------------

TEST(Decoder, ParameterCountOfTheDefaultModelIs742784) {
  // The same model in PyTorch (bench/torch_twin/model.py, ModelConfig(vocab_size=65))
  // reports num_params() = 742,784.
  ModelConfig c;
  c.vocab_size = 65;
  Decoder model(c, 0);
  EXPECT_EQ(model.num_parameters(), 742784u);
}

TEST(Decoder, ParameterNamesAndShapesFollowMetaLlama) {
  Decoder model(ModelConfig(), 0);  // default: 65 characters, d_model 128
  std::vector<std::pair<std::string, Shape>> expected = {{"tok_embeddings.weight", {65, 128}}};
  for (int i = 0; i < 4; ++i) {
    const std::string l = "layers." + std::to_string(i) + ".";
    expected.push_back({l + "attention_norm.weight", {128}});
    expected.push_back({l + "attention.wq.weight", {128, 128}});
    expected.push_back({l + "attention.wk.weight", {64, 128}});
    expected.push_back({l + "attention.wv.weight", {64, 128}});
    expected.push_back({l + "attention.wo.weight", {128, 128}});
    expected.push_back({l + "ffn_norm.weight", {128}});
    expected.push_back({l + "feed_forward.w1.weight", {344, 128}});
    expected.push_back({l + "feed_forward.w2.weight", {128, 344}});
    expected.push_back({l + "feed_forward.w3.weight", {344, 128}});
  }
  expected.push_back({"norm.weight", {128}});
  expected.push_back({"output.weight", {65, 128}});

  const auto params = model.named_parameters();
  ASSERT_EQ(params.size(), expected.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(params[i].first, expected[i].first);
    EXPECT_EQ(params[i].second.shape(), expected[i].second) << expected[i].first;
    EXPECT_EQ(params[i].second.name(), expected[i].first);  // full name set on the tensor
    EXPECT_TRUE(params[i].second.requires_grad());
  }
  // The members are the same tensors as the list.
  EXPECT_EQ(params[2].second.impl(), model.layers[0]->attention.wq.weight.impl());
  EXPECT_EQ(params.back().second.impl(), model.output.weight.impl());
}

double std_of(const Array& a) {
  double sum = 0, sum2 = 0;
  for (Scalar x : a) sum += x, sum2 += double(x) * x;
  const double mean = sum / a.size();
  return std::sqrt(sum2 / a.size() - mean * mean);
}

TEST(Decoder, InitIsNanoGptAndReproducible) {
  ModelConfig c;
  Decoder model(c, 1234), same(c, 1234), other(c, 99);
  const double resid_std = 0.02 / std::sqrt(2.0 * 4);
  for (auto& [name, p] : model.named_parameters()) {
    const bool gain = name.find("norm.weight") != std::string::npos;
    const bool resid =
        name.find("wo.weight") != std::string::npos || name.find("w2.weight") != std::string::npos;
    if (gain) {
      EXPECT_TRUE(std::all_of(p.value().begin(), p.value().end(), [](Scalar x) { return x == 1; }))
          << name;
    } else {
      const double expected = resid ? resid_std : 0.02;
      EXPECT_NEAR(std_of(p.value()), expected, 0.06 * expected) << name;
    }
  }
  const auto a = model.parameters(), b = same.parameters(), d = other.parameters();
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_EQ(max_abs_diff(a[i].value(), b[i].value()), 0.0);
  EXPECT_GT(max_abs_diff(a[0].value(), d[0].value()), 0.0);
}

TEST(Decoder, FreshModelLossOnUniformTokensIsLnV) {
  ModelConfig c;
  c.vocab_size = 65;
  Decoder model(c, 7);
  NoGradGuard no_grad;
  const Ids tokens = random_ids(4, 128, 65, 8);
  const Ids targets = random_ids(4, 128, 65, 9);
  const double loss = cross_entropy(model.forward(tokens), targets).item();
  EXPECT_NEAR(loss, std::log(65.0), 0.1);
}

TEST(Module, ZeroGradClearsEveryGradient) {
  Decoder model(small_config(), 3);
  cross_entropy(model.forward(random_ids(2, 5, 11, 4)), random_ids(2, 5, 11, 5)).backward();
  double total = 0;
  for (auto& p : model.parameters()) total += std::abs(double(xt::sum(p.grad())()));
  EXPECT_GT(total, 0.0);
  model.zero_grad();
  for (auto& [name, p] : model.named_parameters()) {
    EXPECT_TRUE(std::all_of(p.grad().begin(), p.grad().end(), [](Scalar g) { return g == 0; }))
        << name;
  }
}

// ---- attention against loops ---------------------------------------------------------------

// Attention computed from its definition with plain loops in double: projections, RoPE on
// interleaved pairs, scores / sqrt(D), causal mask, softmax, mix, W_O. Query head h uses KV
// head h / (H / H_kv). x (B, n, d_model) at positions 0..n-1 -> (B, n, d_model).
std::vector<double> loop_attention(const Attention& a, const Array& x) {
  const std::size_t B = x.shape()[0], n = x.shape()[1], d = x.shape()[2];
  const std::size_t H = a.n_heads, Hkv = a.n_kv_heads, D = a.head_dim, rep = H / Hkv;
  auto project = [&](const Array& W, std::size_t b, std::size_t t) {
    std::vector<double> y(W.shape()[0], 0.0);
    for (std::size_t o = 0; o < y.size(); ++o)
      for (std::size_t i = 0; i < d; ++i) y[o] += at(W, {o, i}) * at(x, {b, t, i});
    return y;
  };
  auto rotate = [&](std::vector<double>& v, std::size_t heads, std::size_t pos) {
    for (std::size_t h = 0; h < heads; ++h)
      for (std::size_t i = 0; i < D / 2; ++i) {
        const double angle = pos * std::pow(a.rope_base, -2.0 * i / D);
        double& x0 = v[h * D + 2 * i];
        double& x1 = v[h * D + 2 * i + 1];
        const double r0 = x0 * std::cos(angle) - x1 * std::sin(angle);
        const double r1 = x0 * std::sin(angle) + x1 * std::cos(angle);
        x0 = r0, x1 = r1;
      }
  };
  std::vector<double> out(B * n * d, 0.0);
  for (std::size_t b = 0; b < B; ++b) {
    std::vector<std::vector<double>> q(n), k(n), v(n);
    for (std::size_t t = 0; t < n; ++t) {
      q[t] = project(a.wq.weight.value(), b, t);
      k[t] = project(a.wk.weight.value(), b, t);
      v[t] = project(a.wv.weight.value(), b, t);
      rotate(q[t], H, t);
      rotate(k[t], Hkv, t);
    }
    for (std::size_t t = 0; t < n; ++t) {
      std::vector<double> concat(H * D, 0.0);
      for (std::size_t h = 0; h < H; ++h) {
        const std::size_t g = h / rep;  // KV head
        std::vector<double> w(t + 1);   // keys 0..t only: the causal mask
        double max = -1e300, total = 0;
        for (std::size_t j = 0; j <= t; ++j) {
          double s = 0;
          for (std::size_t e = 0; e < D; ++e) s += q[t][h * D + e] * k[j][g * D + e];
          w[j] = s / std::sqrt(double(D));
          max = std::max(max, w[j]);
        }
        for (auto& wj : w) total += (wj = std::exp(wj - max));
        for (std::size_t j = 0; j <= t; ++j)
          for (std::size_t e = 0; e < D; ++e) concat[h * D + e] += w[j] / total * v[j][g * D + e];
      }
      const Array& Wo = a.wo.weight.value();
      for (std::size_t o = 0; o < d; ++o)
        for (std::size_t i = 0; i < H * D; ++i)
          out[(b * n + t) * d + o] += at(Wo, {o, i}) * concat[i];
    }
  }
  return out;
}

void expect_attention_matches_loops(std::size_t n_heads, std::size_t n_kv_heads) {
  const ModelConfig c = small_config(n_heads, n_kv_heads);
  Rng rng(5);
  Attention attention(c, rng);
  randomize(attention, 0.3, 6);
  const Tensor x = random_tensor({2, 7, 16}, 1.0, 7);
  const Array y = attention.forward(x, nullptr, nullptr).value();
  const std::vector<double> expected = loop_attention(attention, x.value());
  ASSERT_EQ(y.size(), expected.size());
  for (std::size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y.data()[i], expected[i], 1e-5) << i;
}

TEST(Attention, WithAsManyKvHeadsAsQueryHeadsIsPlainMultiHeadAttention) {
  expect_attention_matches_loops(4, 4);
}
TEST(Attention, GroupedQueryAttentionSharesKvHeadHOverRep) { expect_attention_matches_loops(4, 2); }
TEST(Attention, MultiQueryAttentionWithOneKvHead) { expect_attention_matches_loops(4, 1); }

TEST(Attention, WorkedExampleThreePositionsHeadDim2) {
  // docs/atencao.md, "Exemplo numérico completo": Q = K, V given, printed weights and outputs.
  const Tensor Q = Tensor::from_vector({1, 0, 1, 1, 0, 1}, {3, 2});
  const Tensor V = Tensor::from_vector({2, 0, 0, 2, 2, 2}, {3, 2});
  Tensor scores = matmul(Q, transpose(Q, 0, 1)) / std::sqrt(Scalar(2));
  scores = masked_fill(scores, causal_mask(3, 3, 0), -std::numeric_limits<Scalar>::infinity());
  const Tensor weights = softmax(scores);
  const Tensor out = matmul(weights, V);
  const std::vector<double> w = {1, 0, 0, 0.330238, 0.669762, 0, 0.197776, 0.401112, 0.401112};
  const std::vector<double> y = {2, 0, 0.660477, 1.339523, 1.197776, 1.604448};
  for (std::size_t i = 0; i < 9; ++i) EXPECT_NEAR(weights.value().data()[i], w[i], 5e-7);
  for (std::size_t i = 0; i < 6; ++i) EXPECT_NEAR(out.value().data()[i], y[i], 5e-7);
}

// ---- RoPE ----------------------------------------------------------------------------------

TEST(RoPE, PositionZeroIsTheIdentity) {
  const Tensor x = random_tensor({1, 1, 4, 32}, 1.0, 1);
  EXPECT_EQ(max_abs_diff(rope(x, 0).value(), x.value()), 0.0);
}

TEST(RoPE, RotatesInterleavedPairsByPosTimesBasePower) {
  // x = (1, 0, 1, 0) at position 1, D = 4: pair 0 turns by 1 rad, pair 1 by 10000^(-2/4) = 0.01.
  const Tensor x = Tensor::from_vector({1, 0, 1, 0}, {1, 1, 1, 4});
  const Array y = rope(x, 1).value();
  EXPECT_NEAR(y(0, 0, 0, 0), std::cos(1.0), 1e-6);
  EXPECT_NEAR(y(0, 0, 0, 1), std::sin(1.0), 1e-6);
  EXPECT_NEAR(y(0, 0, 0, 2), std::cos(0.01), 1e-6);
  EXPECT_NEAR(y(0, 0, 0, 3), std::sin(0.01), 1e-6);
}

TEST(RoPE, KeepsTheNormOfEveryHeadVector) {
  const Tensor x = random_tensor({2, 9, 4, 32}, 1.0, 2);
  const Array y = rope(x, 37).value();
  for (std::size_t row = 0; row < 2 * 9 * 4; ++row) {
    double nx = 0, ny = 0;
    for (std::size_t e = 0; e < 32; ++e) {
      nx += double(x.value().data()[row * 32 + e]) * x.value().data()[row * 32 + e];
      ny += double(y.data()[row * 32 + e]) * y.data()[row * 32 + e];
    }
    EXPECT_NEAR(std::sqrt(ny), std::sqrt(nx), 1e-5 * std::sqrt(nx));
  }
}

TEST(RoPE, QueryKeyDotProductDependsOnlyOnThePositionDifference) {
  const Tensor q = random_tensor({1, 1, 1, 32}, 1.0, 3);
  const Tensor k = random_tensor({1, 1, 1, 32}, 1.0, 4);
  auto dot_at = [&](std::size_t pq, std::size_t pk) {
    const Array a = rope(q, pq).value(), b = rope(k, pk).value();
    double s = 0;
    for (std::size_t e = 0; e < 32; ++e) s += double(a.data()[e]) * b.data()[e];
    return s;
  };
  const double base = dot_at(5, 2);  // difference 3
  EXPECT_NEAR(dot_at(3, 0), base, 1e-4);
  EXPECT_NEAR(dot_at(103, 100), base, 1e-4);
  EXPECT_NEAR(dot_at(250, 247), base, 1e-4);
  EXPECT_GT(std::abs(dot_at(6, 2) - base), 1e-3);  // a different difference gives another value
}

// ---- KV cache ------------------------------------------------------------------------------

TEST(KVCache, OneTokenAtATimeGivesTheFullForwardLogits) {
  ModelConfig c;  // the default model
  Decoder model(c, 11);
  NoGradGuard no_grad;
  const Ids tokens = random_ids(2, 12, c.vocab_size, 12);
  const Array full = model.forward(tokens).value();  // (2, 12, V)

  KVCache cache(c, 2);
  for (std::size_t t = 0; t < 12; ++t) {
    Ids one = Ids::from_shape({2, 1});
    one(0, 0) = tokens(0, t);
    one(1, 0) = tokens(1, t);
    const Array step = model.forward(one, &cache).value();  // (2, 1, V)
    ASSERT_EQ(cache.length(), t + 1);
    double worst = 0;
    for (std::size_t b = 0; b < 2; ++b)
      for (std::size_t v = 0; v < c.vocab_size; ++v)
        worst = std::max(worst, double(std::abs(step(b, 0, v) - full(b, t, v))));
    EXPECT_LE(worst, 1e-5) << "position " << t;
  }
}

TEST(KVCache, ChunksWithStartAboveZeroGiveTheFullForwardLogits) {
  ModelConfig c;
  Decoder model(c, 13);
  NoGradGuard no_grad;
  const Ids tokens = random_ids(2, 12, c.vocab_size, 14);
  const Array full = model.forward(tokens).value();

  KVCache cache(c, 2);
  std::size_t start = 0;
  for (std::size_t chunk : {5, 4, 3}) {
    Ids part = Ids::from_shape({2, chunk});
    for (std::size_t b = 0; b < 2; ++b)
      for (std::size_t t = 0; t < chunk; ++t) part(b, t) = tokens(b, start + t);
    const Array logits = model.forward(part, &cache).value();
    double worst = 0;
    for (std::size_t b = 0; b < 2; ++b)
      for (std::size_t t = 0; t < chunk; ++t)
        for (std::size_t v = 0; v < c.vocab_size; ++v)
          worst = std::max(worst, double(std::abs(logits(b, t, v) - full(b, start + t, v))));
    EXPECT_LE(worst, 1e-5) << "chunk at start " << start;
    start += chunk;
  }
  EXPECT_EQ(cache.length(), 12u);
  cache.clear();
  EXPECT_EQ(cache.length(), 0u);
  EXPECT_LE(max_abs_diff(model.forward(tokens, &cache).value(), full), 1e-6);
}

TEST(KVCache, StoresPositionsBeforeHeadsAndReadsBackTheFirstM) {
  // Layout (B, capacity, n_kv_heads, head_dim): two appends of 3 and 2 positions, then
  // cached_keys/values(m) of one layer must be exactly the appended rows in order, (B, m, H_kv, D),
  // with nothing repeated for GQA (n_heads = 4 > n_kv_heads = 2 here).
  const ModelConfig c = small_config();  // head_dim 4, n_kv_heads 2
  KVCache cache(c, 2);
  ASSERT_EQ(shape_of(cache.layers[1].keys), (Shape{2, 32, 2, 4}));
  const Array k1 = random_tensor({2, 3, 2, 4}, 1.0, 41).value();
  const Array v1 = random_tensor({2, 3, 2, 4}, 1.0, 42).value();
  const Array k2 = random_tensor({2, 2, 2, 4}, 1.0, 43).value();
  const Array v2 = random_tensor({2, 2, 2, 4}, 1.0, 44).value();
  cache.layers[1].append(k1, v1);
  cache.advance(3);
  cache.layers[1].append(k2, v2);
  cache.advance(2);
  const Array keys = cache.layers[1].cached_keys(5), values = cache.layers[1].cached_values(5);
  ASSERT_EQ(shape_of(keys), (Shape{2, 5, 2, 4}));
  ASSERT_EQ(shape_of(values), (Shape{2, 5, 2, 4}));
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t t = 0; t < 5; ++t)
      for (std::size_t h = 0; h < 2; ++h)
        for (std::size_t i = 0; i < 4; ++i) {
          EXPECT_EQ(keys(b, t, h, i), t < 3 ? k1(b, t, h, i) : k2(b, t - 3, h, i));
          EXPECT_EQ(values(b, t, h, i), t < 3 ? v1(b, t, h, i) : v2(b, t - 3, h, i));
        }
  EXPECT_EQ(shape_of(cache.layers[1].cached_keys(2)), (Shape{2, 2, 2, 4}));  // a shorter prefix
  EXPECT_EQ(cache.layers[1].cached_keys(2)(1, 1, 1, 3), k1(1, 1, 1, 3));
}

TEST(KVCache, AppendRejectsWrongShapesAndOverflow) {
  const ModelConfig c = small_config();  // context 32, n_kv_heads 2, head_dim 4
  KVCache cache(c, 2);
  const Array heads_first = Array::from_shape({2, 2, 3, 4});  // (B, H_kv, n, D): the old layout
  try {
    cache.layers[0].append(heads_first, heads_first);
    ADD_FAILURE() << "no exception for keys of shape (2, 2, 3, 4)";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("expected keys and values of shape (2, n, 2, 4), got "
                                         "(2, 2, 3, 4)"),
              std::string::npos)
        << e.what();
  }
  Array too_many = Array::from_shape({2, 33, 2, 4});
  too_many.fill(0);
  try {
    cache.layers[0].append(too_many, too_many);
    ADD_FAILURE() << "no exception for 33 positions in a cache of 32";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("0 cached + 33 new positions exceed the capacity 32"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(cache.layers.at(2), std::out_of_range);  // only layers 0 and 1
}

TEST(KVCache, DropOldestMovesTheRestToTheFrontAndCountsAbsolutePositions) {
  const ModelConfig c = small_config();  // context 32, n_kv_heads 2, head_dim 4
  KVCache cache(c, 2);
  const Array k = random_tensor({2, 5, 2, 4}, 1.0, 51).value();
  const Array v = random_tensor({2, 5, 2, 4}, 1.0, 52).value();
  for (auto& layer : cache.layers) layer.append(k, v);
  cache.advance(5);
  EXPECT_EQ(cache.layers[0].next_position(), 5u);
  cache.drop_oldest(2);  // positions 2, 3, 4 stay, now in slots 0, 1, 2
  EXPECT_EQ(cache.length(), 3u);
  EXPECT_EQ(cache.first_position(), 2u);
  EXPECT_EQ(cache.layers[1].next_position(), 5u);  // the next token is still at position 5
  const Array keys = cache.layers[1].cached_keys(3), values = cache.layers[1].cached_values(3);
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t t = 0; t < 3; ++t)
      for (std::size_t h = 0; h < 2; ++h)
        for (std::size_t i = 0; i < 4; ++i) {
          EXPECT_EQ(keys(b, t, h, i), k(b, t + 2, h, i));
          EXPECT_EQ(values(b, t, h, i), v(b, t + 2, h, i));
        }
  try {
    cache.drop_oldest(4);
    ADD_FAILURE() << "no exception for dropping 4 of 3 positions";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("cannot drop 4 of 3 cached positions"), std::string::npos)
        << e.what();
  }
  cache.clear();
  EXPECT_EQ(cache.length(), 0u);
  EXPECT_EQ(cache.first_position(), 0u);
}

TEST(KVCache, AfterDroppingTheNewTokensGetTheirAbsolutePositions) {
  // A cache that held tokens 0 .. 9 and dropped the first 4 holds positions 4 .. 9 in slots
  // 0 .. 5; the next two tokens are at positions 10 and 11 and Decoder::forward must rotate them
  // there, not at their slots 6 and 7. With one layer a key depends only on its own token and
  // position, so their logits must equal those of tokens 4 .. 11 run afresh at positions 0 .. 7
  // (RoPE: only the distances between positions matter).
  ModelConfig c = small_config();
  c.n_layers = 1;
  c.init_std = 0.5;  // attention far from uniform
  Decoder model(c, 21);
  NoGradGuard no_grad;
  const Ids tokens = random_ids(1, 12, c.vocab_size, 22);
  KVCache cache(c, 1);
  Ids first = Ids::from_shape({1, 10});
  std::copy(tokens.data(), tokens.data() + 10, first.data());
  model.forward(first, &cache);
  cache.drop_oldest(4);
  Ids next = Ids::from_shape({1, 2});
  std::copy(tokens.data() + 10, tokens.data() + 12, next.data());
  const Array rolled = model.forward(next, &cache).value();  // (1, 2, V)
  EXPECT_EQ(cache.length(), 8u);
  EXPECT_EQ(cache.first_position(), 4u);

  Ids window = Ids::from_shape({1, 8});
  std::copy(tokens.data() + 4, tokens.data() + 12, window.data());
  const Array fresh = model.forward(window).value();  // (1, 8, V)
  double worst = 0, scale = 0;
  for (std::size_t t = 0; t < 2; ++t)
    for (std::size_t j = 0; j < c.vocab_size; ++j) {
      worst = std::max(worst, double(std::abs(rolled(0, t, j) - fresh(0, 6 + t, j))));
      scale = std::max(scale, double(std::abs(fresh(0, 6 + t, j))));
    }
  EXPECT_LE(worst, 1e-5 * std::max(1.0, scale));
  // And the dropped keys are really gone: the full forward (which sees them) differs.
  const Array full = model.forward(tokens).value();
  double from_full = 0;
  for (std::size_t j = 0; j < c.vocab_size; ++j)
    from_full = std::max(from_full, double(std::abs(rolled(0, 1, j) - full(0, 11, j))));
  EXPECT_GT(from_full, 1e-3);
}

// ---- errors --------------------------------------------------------------------------------

template <class F>
void expect_invalid_argument(F f, const std::string& why) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected one mentioning \"" << why << "\"";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
}

TEST(Decoder, BadInputIsRejectedWithAClearMessage) {
  const ModelConfig c = small_config();  // context 32, vocab 11
  Decoder model(c, 1);
  NoGradGuard no_grad;
  expect_invalid_argument([&] { model.forward(random_ids(1, 33, 11, 1)); },
                          "0 cached + 33 new positions exceed context_length 32");
  KVCache cache(c, 1);
  model.forward(random_ids(1, 30, 11, 2), &cache);
  expect_invalid_argument([&] { model.forward(random_ids(1, 3, 11, 3), &cache); },
                          "30 cached + 3 new positions exceed context_length 32");
  EXPECT_EQ(cache.length(), 30u);  // a rejected call leaves the cache as it was
  expect_invalid_argument([&] { model.forward(random_ids(2, 1, 11, 3), &cache); },
                          "batch size 1, tokens have 2");
  Tracer tracer(1);
  expect_invalid_argument([&] { model.forward(random_ids(1, 3, 11, 3), nullptr, &tracer); },
                          "the tracer keeps batch element 1, but the batch has 1");
  Ids bad = {{1, 2, 11}};
  expect_invalid_argument([&] { model.forward(bad); },
                          "token id 11 at (0, 2) is outside the vocabulary [0, 11)");
  bad = {{-1, 2}};
  expect_invalid_argument([&] { model.forward(bad); }, "token id -1 at (0, 0)");
  Ids flat = {1, 2, 3};
  expect_invalid_argument([&] { model.forward(flat); }, "tokens must have shape (B, T), got (3,)");
  Ids empty = Ids::from_shape({1, 0});
  expect_invalid_argument([&] { model.forward(empty); }, "empty input");
}

// ---- tracer --------------------------------------------------------------------------------

TEST(Tracer, SnapshotsOfTheDefaultModelHaveTheDocumentedShapes) {
  ModelConfig c;  // vocab 65
  Decoder model(c, 21);
  const Ids tokens = random_ids(2, 10, c.vocab_size, 22);
  Tracer tracer(1);  // batch element 1
  NoGradGuard no_grad;
  const Array logits = model.forward(tokens, nullptr, &tracer).value();
  const std::size_t n = 10;

  std::vector<std::pair<std::string, Shape>> expected = {{"embeddings", {n, 128}}};
  for (int L = 0; L < 4; ++L) {
    const std::string p = "layers." + std::to_string(L) + ".";
    const std::vector<std::pair<std::string, Shape>> layer = {
        {"attn.q", {4, n, 32}},      {"attn.k", {2, n, 32}},      {"attn.v", {2, n, 32}},
        {"attn.rope_q", {4, n, 32}}, {"attn.rope_k", {2, n, 32}}, {"attn.scores", {4, n, n}},
        {"attn.mask", {n, n}},       {"attn.softmax", {4, n, n}}, {"attn.mix", {4, n, 32}},
        {"attn.out", {n, 128}}};
    for (std::size_t s = 0; s < layer.size(); ++s) {
      EXPECT_EQ(layer[s].first, Tracer::attention_snapshots()[s]);  // the order of the nine steps
      expected.push_back({p + layer[s].first, layer[s].second});
    }
    expected.push_back({p + "out", {n, 128}});
  }
  expected.push_back({"logits", {n, 65}});
  expected.push_back({"probs", {n, 65}});

  ASSERT_EQ(tracer.names().size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(tracer.names()[i], expected[i].first);
    EXPECT_EQ(shape_of(tracer.get(expected[i].first)), expected[i].second) << expected[i].first;
  }
  // The batch axis removed keeps element 1.
  for (std::size_t t = 0; t < n; ++t)
    for (std::size_t v = 0; v < 65; ++v)
      EXPECT_EQ(at(tracer.get("logits"), {t, v}), logits(1, t, v));
  // Next-token probabilities: softmax of the logits, rows sum to 1.
  for (std::size_t t = 0; t < n; ++t) {
    double total = 0;
    for (std::size_t v = 0; v < 65; ++v) total += at(tracer.get("probs"), {t, v});
    EXPECT_NEAR(total, 1.0, 1e-5);
  }
  // RoPE at position 0 leaves the first query unchanged.
  for (std::size_t e = 0; e < 32; ++e)
    EXPECT_EQ(at(tracer.get("layers.0.attn.rope_q"), {1, 0, e}),
              at(tracer.get("layers.0.attn.q"), {1, 0, e}));
  // A traced forward runs the reference path: exactly the logits of an untraced reference
  // forward, and those of the fast path to rounding.
  EXPECT_LE(max_abs_diff(model.forward(tokens).value(), logits), 1e-5);
  model.set_ops_path(OpsPath::reference);
  EXPECT_EQ(max_abs_diff(model.forward(tokens).value(), logits), 0.0);
  EXPECT_THROW(tracer.get("layers.9.attn.q"), std::out_of_range);
}

// Checks mask (n, m) == [j > start + i], every softmax row sums to 1 with exact zeros where masked.
void expect_causal_snapshots(const Tracer& tracer, std::size_t layers, std::size_t n, std::size_t m,
                             std::size_t start) {
  for (std::size_t L = 0; L < layers; ++L) {
    const std::string p = "layers." + std::to_string(L) + ".attn.";
    const Array& mask = tracer.get(p + "mask");
    const Array& weights = tracer.get(p + "softmax");
    ASSERT_EQ(shape_of(mask), (Shape{n, m}));
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < m; ++j) EXPECT_EQ(at(mask, {i, j}), j > start + i ? 1 : 0);
    for (std::size_t h = 0; h < weights.shape()[0]; ++h)
      for (std::size_t i = 0; i < n; ++i) {
        double total = 0;
        for (std::size_t j = 0; j < m; ++j) {
          const Scalar w = at(weights, {h, i, j});
          total += w;
          if (j > start + i)
            EXPECT_EQ(w, 0) << p << " head " << h << " (" << i << ", " << j << ")";
          else
            EXPECT_GT(w, 0);
        }
        EXPECT_NEAR(total, 1.0, 1e-5);
      }
  }
}

TEST(Tracer, AttentionWeightsAreCausalAndRowsSumToOne) {
  ModelConfig c;
  Decoder model(c, 31);
  Tracer tracer;
  NoGradGuard no_grad;
  model.forward(random_ids(1, 9, c.vocab_size, 32), nullptr, &tracer);
  expect_causal_snapshots(tracer, 4, 9, 9, 0);  // the lower triangle (with the diagonal) is allowed
}

TEST(Tracer, ScoresSnapshotShowsEveryScoreBeforeTheMask) {
  // The model's product skips the masked scores (they are -inf at once), but the snapshot
  // attn.scores is Q K^T / sqrt(head_dim) at every (i, j), the future ones included.
  ModelConfig c;  // 4 query heads, 2 KV heads, head_dim 32
  Decoder model(c, 36);
  Tracer tracer;
  NoGradGuard no_grad;
  model.forward(random_ids(1, 9, c.vocab_size, 37), nullptr, &tracer);
  for (std::size_t L = 0; L < 4; ++L) {
    const std::string p = "layers." + std::to_string(L) + ".attn.";
    const Array& q = tracer.get(p + "rope_q");  // (4, 9, 32)
    const Array& k = tracer.get(p + "rope_k");  // (2, 9, 32)
    const Array& scores = tracer.get(p + "scores");
    for (std::size_t h = 0; h < 4; ++h)
      for (std::size_t i = 0; i < 9; ++i)
        for (std::size_t j = 0; j < 9; ++j) {
          double dot = 0;
          for (std::size_t e = 0; e < 32; ++e) dot += at(q, {h, i, e}) * at(k, {h / 2, j, e});
          EXPECT_NEAR(at(scores, {h, i, j}), dot / std::sqrt(32.0), 1e-5)
              << p << h << " " << i << " " << j;
        }
  }
}

TEST(Tracer, WithACacheTheMaskCoversAllCachedKeys) {
  ModelConfig c;
  Decoder model(c, 33);
  KVCache cache(c, 1);
  NoGradGuard no_grad;
  model.forward(random_ids(1, 6, c.vocab_size, 34), &cache);
  Tracer tracer;
  model.forward(random_ids(1, 3, c.vocab_size, 35), &cache, &tracer);
  EXPECT_EQ(shape_of(tracer.get("layers.2.attn.k")), (Shape{2, 3, 32}));      // new keys only
  EXPECT_EQ(shape_of(tracer.get("layers.2.attn.scores")), (Shape{4, 3, 9}));  // all m = 9 keys
  expect_causal_snapshots(tracer, 4, 3, 9, 6);
}

TEST(Tracer, AttnOutIsTheConcatenatedMixTimesWo) {
  const ModelConfig c = small_config();
  Decoder model(c, 41);
  Tracer tracer;
  NoGradGuard no_grad;
  model.forward(random_ids(1, 4, 11, 42), nullptr, &tracer);
  const Array& mix = tracer.get("layers.1.attn.mix");  // (H, n, D)
  const Array& out = tracer.get("layers.1.attn.out");  // (n, d_model)
  const Array& Wo = model.layers[1]->attention.wo.weight.value();
  for (std::size_t t = 0; t < 4; ++t)
    for (std::size_t o = 0; o < 16; ++o) {
      double y = 0;
      for (std::size_t h = 0; h < 4; ++h)
        for (std::size_t e = 0; e < 4; ++e) y += at(Wo, {o, h * 4 + e}) * at(mix, {h, t, e});
      EXPECT_NEAR(at(out, {t, o}), y, 1e-6);
    }
}

}  // namespace
