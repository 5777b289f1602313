// Gradient checks (Scalar = double) of every module and of a whole tiny decoder: the gradients
// from backward() must match central finite differences (loss(w+h) - loss(w-h)) / 2h for every
// scalar of every parameter and input. Tolerance: |analytic - numeric| <= 1e-8 + 1e-6 |numeric|.

#include <gtest/gtest.h>

#include "nn/decoder.hpp"
#include "nn_test_util.hpp"

namespace {

using namespace glass;
using glass_test::numeric_gradcheck;
using glass_test::probe_loss;
using glass_test::random_ids;
using glass_test::random_tensor;
using glass_test::randomize;

static_assert(sizeof(Scalar) == sizeof(double), "gradient checks need Scalar = double");

// The tiny model of issue 3: d_model 16, 2 layers, 4 heads (head_dim 4), 2 KV heads, vocab 11.
ModelConfig tiny_config() {
  ModelConfig c;
  c.vocab_size = 11;
  c.d_model = 16;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.ffn_hidden = 24;
  c.context_length = 16;
  return c;
}

#define EXPECT_GRADCHECK(report)                                            \
  do {                                                                      \
    const auto& r_ = (report);                                              \
    EXPECT_GT(r_.checked, 0u);                                              \
    EXPECT_LE(r_.worst_error, 1.0) << "worst element: " << r_.worst_where; \
    ::testing::Test::RecordProperty("worst_error_ratio", std::to_string(r_.worst_error)); \
  } while (0)

TEST(ModuleGradcheck, Linear) {
  Rng rng(1);
  Linear layer(6, 5, 0.5, rng);
  Tensor x = random_tensor({2, 3, 6}, 1.0, 2, true);
  Tensor probe = random_tensor({2, 3, 5}, 1.0, 3);
  auto loss = [&] { return probe_loss(layer.forward(x), probe); };
  EXPECT_GRADCHECK(numeric_gradcheck(loss, {{"x", x}, {"weight", layer.weight}}));
}

TEST(ModuleGradcheck, Embedding) {
  Rng rng(1);
  Embedding emb(7, 4, 1.0, rng);
  Ids ids = {{1, 6, 1}, {0, 3, 6}};  // repeated ids: their gradients must add up
  Tensor probe = random_tensor({2, 3, 4}, 1.0, 3);
  auto loss = [&] { return probe_loss(emb.forward(ids), probe); };
  EXPECT_GRADCHECK(numeric_gradcheck(loss, {{"weight", emb.weight}}));
}

TEST(ModuleGradcheck, RMSNorm) {
  RMSNorm norm(8, 1e-5);
  norm.weight.value() = random_tensor({8}, 1.0, 4).value();
  Tensor x = random_tensor({3, 2, 8}, 1.0, 5, true);
  Tensor probe = random_tensor({3, 2, 8}, 1.0, 6);
  auto loss = [&] { return probe_loss(norm.forward(x), probe); };
  EXPECT_GRADCHECK(numeric_gradcheck(loss, {{"x", x}, {"weight", norm.weight}}));
}

TEST(ModuleGradcheck, SwiGLU) {
  Rng rng(7);
  SwiGLU ffn(tiny_config(), rng);
  randomize(ffn, 0.5, 8);
  Tensor x = random_tensor({2, 3, 16}, 1.0, 9, true);
  Tensor probe = random_tensor({2, 3, 16}, 1.0, 10);
  auto loss = [&] { return probe_loss(ffn.forward(x), probe); };
  auto inputs = ffn.named_parameters();
  inputs.emplace_back("x", x);
  EXPECT_GRADCHECK(numeric_gradcheck(loss, inputs));
}

TEST(ModuleGradcheck, AttentionWithGQA) {
  Rng rng(11);
  Attention attention(tiny_config(), rng);
  randomize(attention, 0.5, 12);
  Tensor x = random_tensor({2, 5, 16}, 1.0, 13, true);
  Tensor probe = random_tensor({2, 5, 16}, 1.0, 14);
  auto loss = [&] { return probe_loss(attention.forward(x, 0, nullptr, nullptr), probe); };
  auto inputs = attention.named_parameters();
  inputs.emplace_back("x", x);
  EXPECT_GRADCHECK(numeric_gradcheck(loss, inputs));
}

TEST(ModuleGradcheck, AttentionWithPrefilledCache) {
  // 3 positions already cached (constants), 2 new ones at positions 3, 4: the gradient flows to
  // the new queries, keys and values (Attention::forward does not advance the cache, so every
  // evaluation overwrites the same positions 3, 4).
  const ModelConfig config = tiny_config();
  Rng rng(15);
  Attention attention(config, rng);
  randomize(attention, 0.5, 16);
  KVCache cache(config, 2);
  {
    NoGradGuard no_grad;
    attention.forward(random_tensor({2, 3, 16}, 1.0, 17), 0, &cache, nullptr);
    cache.advance(3);
  }
  Tensor x = random_tensor({2, 2, 16}, 1.0, 18, true);
  Tensor probe = random_tensor({2, 2, 16}, 1.0, 19);
  auto loss = [&] { return probe_loss(attention.forward(x, 0, &cache, nullptr), probe); };
  auto inputs = attention.named_parameters();
  inputs.emplace_back("x", x);
  EXPECT_GRADCHECK(numeric_gradcheck(loss, inputs));
}

TEST(ModuleGradcheck, Block) {
  Rng rng(20);
  Block block(tiny_config(), rng);
  randomize(block, 0.5, 21);
  Tensor x = random_tensor({2, 5, 16}, 1.0, 22, true);
  Tensor probe = random_tensor({2, 5, 16}, 1.0, 23);
  auto loss = [&] { return probe_loss(block.forward(x, 0, nullptr, nullptr), probe); };
  auto inputs = block.named_parameters();
  inputs.emplace_back("x", x);
  EXPECT_GRADCHECK(numeric_gradcheck(loss, inputs));
}

TEST(ModuleGradcheck, WholeTinyDecoderEveryParameter) {
  // Cross-entropy of the next token, B = 2, T = 5, every parameter of the model.
  Decoder model(tiny_config(), 24);
  randomize(model, 0.4, 25);
  const Ids tokens = random_ids(2, 5, 11, 26);
  const Ids targets = random_ids(2, 5, 11, 27);
  auto loss = [&] { return cross_entropy(model.forward(tokens), targets); };
  const auto params = model.named_parameters();
  const auto report = numeric_gradcheck(loss, params);
  EXPECT_EQ(report.checked, model.num_parameters());
  EXPECT_GRADCHECK(report);
}

}  // namespace
