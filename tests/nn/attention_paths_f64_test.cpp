// The model's two paths (ModelConfig::ops_path) in double precision:
// - the worked example of docs/atencao.md (3 positions, head dim 2) through the reference Attention steps,
//   weights and outputs to 6 decimals;
// - reference and fast give the same logits and parameter gradients (the fast path recording the
//   fused causal_attention, unless a tracer asks for the steps), and the same logits when
//   generating through the KV cache;
// - a NaN reaching the scores gives NaN on both paths (as PyTorch), never a silent zero.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "nn/decoder.hpp"
#include "nn/tracer.hpp"
#include "fixtures.hpp"
#include "nn_test_util.hpp"

namespace {

using namespace glass;
using glass_test::random_ids;
using glass_test::random_tensor;
using glass_test::randomize;

static_assert(sizeof(Scalar) == sizeof(double), "these comparisons need Scalar = double");

/// The tests' small model (fixtures.hpp), 13 characters and 80 positions, on one attention path.
ModelConfig small_config(const std::string& attention) {
  // T = 70: two blocks of 32 query rows and a partial one.
  ModelConfig c = glass_test::small_config(13, 80);
  c.ops_path = parse_ops_path(attention);
  return c;
}

// ---- the worked example of the attention chapter -------------------------------------------
//
// Q = K = [[1, 0], [1, 1], [0, 1]], V = [[2, 0], [0, 2], [2, 2]], one head of dimension 2,
// weights = softmax(masked_fill(Q K^T / sqrt(2), causal, -inf)), out = weights V. Expected
// values from NumPy (docs/atencao.md, "Exemplo numérico completo"):
//   weights [[1, 0, 0], [0.330238, 0.669762, 0], [0.197776, 0.401112, 0.401112]]
//   out     [[2, 0], [0.660477, 1.339523], [1.197776, 1.604448]]
// The example starts after the projections and RoPE, so the Attention module is set up to make
// them reproduce it: d_model 4 = two query heads of dimension 2 sharing one KV head (GQA, so
// repeat_kv runs), x_p = [R(-p) q_p, v_p] where R(-p) undoes the RoPE rotation of position p
// (pair 0 turns by p radians), wq copies x[0:2] into both query heads, wk copies x[0:2], wv
// copies x[2:4]. After RoPE both Q heads and K equal the example's Q, and V its V.
TEST(AttentionReference, SpecExampleWeightsAndOutputsTo6Decimals) {
  ModelConfig c;
  c.vocab_size = 5;
  c.d_model = 4;
  c.n_layers = 1;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.ffn_hidden = 8;
  c.context_length = 8;
  c.ops_path = OpsPath::reference;
  Rng rng(0);
  Attention attention(c, rng);
  attention.wq.weight.value() = Array{{1, 0, 0, 0}, {0, 1, 0, 0}, {1, 0, 0, 0}, {0, 1, 0, 0}};
  attention.wk.weight.value() = Array{{1, 0, 0, 0}, {0, 1, 0, 0}};
  attention.wv.weight.value() = Array{{0, 0, 1, 0}, {0, 0, 0, 1}};
  const double Q[3][2] = {{1, 0}, {1, 1}, {0, 1}}, V[3][2] = {{2, 0}, {0, 2}, {2, 2}};
  Array x = Array::from_shape({1, 3, 4});
  for (std::size_t p = 0; p < 3; ++p) {
    const double cs = std::cos(double(p)), sn = std::sin(double(p));
    x(0, p, 0) = Q[p][0] * cs + Q[p][1] * sn;  // R(-p) q_p
    x(0, p, 1) = -Q[p][0] * sn + Q[p][1] * cs;
    x(0, p, 2) = V[p][0];
    x(0, p, 3) = V[p][1];
  }
  Tracer tracer;
  attention.forward(Tensor(x), nullptr, &tracer);

  const Array& rope_q = tracer.get("attn.rope_q");  // (2 heads, 3, 2)
  for (std::size_t h = 0; h < 2; ++h)
    for (std::size_t p = 0; p < 3; ++p)
      for (std::size_t e = 0; e < 2; ++e) ASSERT_NEAR(rope_q(h, p, e), Q[p][e], 1e-12);

  const double weights[3][3] = {{1, 0, 0}, {0.330238, 0.669762, 0}, {0.197776, 0.401112, 0.401112}};
  const double out[3][2] = {{2, 0}, {0.660477, 1.339523}, {1.197776, 1.604448}};
  const Array& w = tracer.get("attn.softmax");  // (2, 3, 3)
  const Array& mix = tracer.get("attn.mix");    // (2, 3, 2)
  for (std::size_t h = 0; h < 2; ++h)
    for (std::size_t i = 0; i < 3; ++i) {
      for (std::size_t j = 0; j < 3; ++j)
        EXPECT_NEAR(w(h, i, j), weights[i][j], 5e-7) << h << i << j;
      for (std::size_t e = 0; e < 2; ++e) EXPECT_NEAR(mix(h, i, e), out[i][e], 5e-7) << h << i << e;
    }
  EXPECT_EQ(w(0, 0, 1), 0.0);  // the future gets weight exactly 0
}

// ---- reference == fast ------------------------------------------------------------------------

struct Step {
  Array logits;
  std::map<std::string, Array> grads;
  bool fused = false;  ///< causal_attention was recorded
};

Step train_step(const std::string& attention, std::size_t T, bool with_tracer = false) {
  Decoder model(small_config(attention), 3);
  randomize(model, 0.3, 17);  // far from uniform attention
  const Ids tokens = random_ids(2, T, 13, 21), targets = random_ids(2, T, 13, 22);
  Step step;
  Tracer tracer;
  tape().clear();
  const Tensor logits = model.forward(tokens, nullptr, with_tracer ? &tracer : nullptr);
  for (const TapeRecord& r : tape().records())
    step.fused = step.fused || r.op == "causal_attention";
  step.logits = logits.value();
  cross_entropy(logits, targets).backward();
  for (const auto& [name, p] : model.named_parameters()) step.grads[name] = p.grad();
  return step;
}

TEST(AttentionPaths, SameLogitsAndEveryParameterGradient) {
  // 45: one full block of 32 query rows and a partial one; 70: two and a partial one
  for (const std::size_t T : {1, 7, 45, 70}) {
    const Step ref = train_step("reference", T), fast = train_step("fast", T);
    EXPECT_TRUE(fast.fused) << "the fast path should record causal_attention";
    EXPECT_FALSE(ref.fused);
    EXPECT_FALSE(train_step("fast", T, true).fused)
        << "a tracer should force the step-by-step path";
    for (std::size_t i = 0; i < ref.logits.size(); ++i)
      ASSERT_NEAR(ref.logits.data()[i], fast.logits.data()[i], 1e-12) << "T " << T;
    ASSERT_EQ(ref.grads.size(), fast.grads.size());
    for (const auto& [name, g] : ref.grads)
      for (std::size_t i = 0; i < g.size(); ++i)
        ASSERT_NEAR(g.data()[i], fast.grads.at(name).data()[i], 1e-12) << name << " T " << T;
  }
}

TEST(AttentionPaths, GenerationThroughTheCacheGivesTheReferenceLogits) {
  // Fast path with a cache (attend_to_cache over the cache's storage), fed in chunks of 3, 1, 1
  // and 4 tokens, against one reference forward over all 9 tokens.
  Decoder fast(small_config("fast"), 5), ref(small_config("reference"), 5);
  randomize(fast, 0.3, 18);
  randomize(ref, 0.3, 18);
  const Ids tokens = random_ids(2, 9, 13, 23);
  NoGradGuard no_grad;
  const Array full = ref.forward(tokens).value();  // (2, 9, 13)
  KVCache cache(fast.config(), 2);
  std::size_t start = 0;
  for (const std::size_t n : {3, 1, 1, 4}) {
    Ids part = Ids::from_shape({2, n});
    for (std::size_t b = 0; b < 2; ++b)
      for (std::size_t t = 0; t < n; ++t) part(b, t) = tokens(b, start + t);
    const Array logits = fast.forward(part, &cache).value();
    for (std::size_t b = 0; b < 2; ++b)
      for (std::size_t t = 0; t < n; ++t)
        for (std::size_t v = 0; v < 13; ++v)
          ASSERT_NEAR(logits(b, t, v), full(b, start + t, v), 1e-12) << "position " << start + t;
    start += n;
  }
  EXPECT_EQ(cache.length(), 9u);
}

TEST(AttentionPaths, TheSwitchIsExplicitAndValidated) {
  Decoder model(small_config("reference"), 1);
  EXPECT_EQ(model.layers[0]->attention.ops_path(), OpsPath::reference);
  model.set_ops_path(OpsPath::fast);
  EXPECT_EQ(model.layers[1]->attention.ops_path(), OpsPath::fast);
  EXPECT_EQ(model.layers[1]->swiglu().w2.ops_path(), OpsPath::fast);
  EXPECT_EQ(model.output.ops_path(), OpsPath::fast);
  EXPECT_EQ(model.config().ops_path, OpsPath::fast);
  EXPECT_EQ(ModelConfig().ops_path, OpsPath::fast);  // the default
  // The names config.json and --ops use, and a clear refusal of any other.
  EXPECT_EQ(to_string(OpsPath::reference), "reference");
  EXPECT_EQ(parse_ops_path("fast"), OpsPath::fast);
  try {
    parse_ops_path("flash");
    ADD_FAILURE() << "\"flash\" was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("\"reference\" or \"fast\""), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(model.layers[1]->attention.path(), "layers.1.attention");
  EXPECT_EQ(model.layers[1]->attention.snapshot_name("q"), "layers.1.attn.q");
}

// ---- NaN propagates -----------------------------------------------------------------------------

TEST(AttentionPaths, ANaNScoreGivesNaNOnBothPathsNotZeros) {
  // A NaN in wq makes every score of query head 0 NaN. PyTorch then gives NaN weights, a NaN
  // head output and, through W_O, NaN everywhere; a softmax that took "no finite score" for a
  // fully masked row would give zeros there and a finite, wrong output instead.
  for (const std::string path : {"reference", "fast"}) {
    for (const bool with_cache : {false, true}) {
      Rng rng(4);
      Attention attention(small_config(path), rng);
      attention.wq.weight.value()(0, 0) = std::numeric_limits<double>::quiet_NaN();
      const Tensor x = random_tensor({1, 5, 16}, 1.0, 9);
      KVCache cache(small_config(path), 1);
      NoGradGuard no_grad;
      const Array y = attention.forward(x, with_cache ? &cache.layers[0] : nullptr).value();
      for (std::size_t i = 0; i < y.size(); ++i)
        ASSERT_TRUE(std::isnan(y.data()[i]))
            << path << (with_cache ? " with cache" : "") << " at " << i;
    }
  }
}

}  // namespace
