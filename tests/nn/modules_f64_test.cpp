// Gradient checks (Scalar = double) of every module and of a whole tiny decoder, with the
// project's gradcheck (autograd/gradcheck.hpp): the gradients from backward() must match central
// finite differences (L(w+eps) - L(w-eps)) / 2eps for every scalar of every parameter and input,
// |analytic - numeric| <= 1e-6 + 1e-5 |numeric|. Non-scalar outputs are reduced by gradcheck to
// sum(out * R) with a fixed random R, so every output element matters.

#include <gtest/gtest.h>

#include <string>

#include <sstream>

#include "autograd/gradcheck.hpp"
#include "nn/decoder.hpp"
#include "fixtures.hpp"
#include "nn_test_util.hpp"

namespace {

using namespace glass;
using glass_test::random_ids;
using glass_test::random_tensor;
using glass_test::randomize;

static_assert(sizeof(Scalar) == sizeof(double), "gradient checks need Scalar = double");

// The tests' small model (fixtures.hpp: d_model 16, 2 layers, 4 heads of head_dim 4, 2 KV
// heads), vocab 11, 16 positions.
ModelConfig tiny_config() { return glass_test::small_config(11, 16); }

// Runs gradcheck on `forward` with respect to every parameter of `module` plus `extra` inputs
// (e.g. the module's input x). The closure reads the tensors through the module's members:
// gradcheck perturbs the same storage in place.
testing::AssertionResult gradients_match(const std::function<Tensor()>& forward,
                                         const Module& module, std::vector<Tensor> extra = {}) {
  std::vector<Tensor> inputs = module.parameters();
  inputs.insert(inputs.end(), extra.begin(), extra.end());
  std::size_t scalars = 0;
  for (const auto& t : inputs) scalars += t.size();
  const GradcheckReport report =
      gradcheck([&](const std::vector<Tensor>&) { return forward(); }, inputs);
  std::ostringstream os;
  os << scalars << " scalars in " << report.inputs.size() << " tensors, max abs error "
     << report.max_abs_error << ", max rel error " << report.max_rel_error;
  for (const auto& in : report.inputs) {
    if (!in.passed)
      os << "\n  FAILED " << (in.name.empty() ? "input" : in.name) << " #" << in.index << ": abs "
         << in.max_abs_error << ", rel " << in.max_rel_error;
  }
  if (report.inputs.size() != inputs.size())
    return testing::AssertionFailure() << "not every input was checked; " << os.str();
  return (report.passed ? testing::AssertionSuccess() : testing::AssertionFailure()) << os.str();
}

TEST(ModuleGradcheck, Linear) {
  Rng rng(1);
  Linear layer(6, 5, 0.5, rng);
  Tensor x = random_tensor({2, 3, 6}, 1.0, 2, true);
  EXPECT_TRUE(gradients_match([&] { return layer.forward(x); }, layer, {x}));
}

TEST(ModuleGradcheck, Embedding) {
  Rng rng(1);
  Embedding emb(7, 4, 1.0, rng);
  const Ids ids = {{1, 6, 1}, {0, 3, 6}};  // repeated ids: their gradients must add up
  EXPECT_TRUE(gradients_match([&] { return emb.forward(ids); }, emb));
}

TEST(ModuleGradcheck, RMSNorm) {
  RMSNorm norm(8, 1e-5);
  norm.weight.value() = random_tensor({8}, 1.0, 4).value();
  Tensor x = random_tensor({3, 2, 8}, 1.0, 5, true);
  EXPECT_TRUE(gradients_match([&] { return norm.forward(x); }, norm, {x}));
}

TEST(ModuleGradcheck, SwiGLU) {
  Rng rng(7);
  SwiGLU ffn(tiny_config(), rng);
  randomize(ffn, 0.5, 8);
  Tensor x = random_tensor({2, 3, 16}, 1.0, 9, true);
  EXPECT_TRUE(gradients_match([&] { return ffn.forward(x); }, ffn, {x}));
}

TEST(ModuleGradcheck,
     AttentionWithGQA) {  // the default (fast) path; the decoder test below runs both
  Rng rng(11);
  Attention attention(tiny_config(), rng);
  randomize(attention, 0.5, 12);
  Tensor x = random_tensor({2, 5, 16}, 1.0, 13, true);
  EXPECT_TRUE(
      gradients_match([&] { return attention.forward(x, nullptr, nullptr); }, attention, {x}));
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
    attention.forward(random_tensor({2, 3, 16}, 1.0, 17), &cache.layers[0], nullptr);
    cache.advance(3);
  }
  Tensor x = random_tensor({2, 2, 16}, 1.0, 18, true);
  EXPECT_TRUE(gradients_match([&] { return attention.forward(x, &cache.layers[0], nullptr); },
                              attention, {x}));
}

TEST(ModuleGradcheck, Block) {
  Rng rng(20);
  Block block(tiny_config(), rng);
  randomize(block, 0.5, 21);
  Tensor x = random_tensor({2, 5, 16}, 1.0, 22, true);
  EXPECT_TRUE(gradients_match([&] { return block.forward(x, nullptr, nullptr); }, block, {x}));
}

TEST(ModuleGradcheck, WholeTinyDecoderEveryParameter) {
  // Cross-entropy of the next token, B = 2, T = 5, every parameter of the model (4,272 scalars),
  // on both paths (ModelConfig::ops_path).
  for (const std::string path : {"reference", "fast"}) {
    ModelConfig config = tiny_config();
    config.ops_path = parse_ops_path(path);
    Decoder model(config, 24);
    randomize(model, 0.4, 25);
    const Ids tokens = random_ids(2, 5, 11, 26);
    const Ids targets = random_ids(2, 5, 11, 27);
    EXPECT_TRUE(
        gradients_match([&] { return cross_entropy(model.forward(tokens), targets); }, model))
        << path;
  }
}

TEST(ModuleGradcheck, ReLUSquared) {
  Rng rng(30);
  ReLUSquared ffn(tiny_config(), rng);
  randomize(ffn, 0.5, 31);
  Tensor x = random_tensor({2, 3, 16}, 1.0, 32, true);
  EXPECT_TRUE(gradients_match([&] { return ffn.forward(x); }, ffn, {x}));
}

TEST(ModuleGradcheck, WholeTinyDecoderWithEachRecipeOption) {
  // As above, with QK-norm, the ReLU² MLP and logit soft-capping (c = 2, where tanh bends the
  // randomized model's logits): each alone on the reference path, all three together on the
  // fast path.
  for (int option = 0; option < 4; ++option) {
    ModelConfig config = tiny_config();
    config.ops_path = option == 3 ? OpsPath::fast : OpsPath::reference;
    config.qk_norm = option == 0 || option == 3;
    if (option == 1 || option == 3) config.mlp = Mlp::relu2;
    if (option == 2 || option == 3) config.logit_softcap = 2;
    Decoder model(config, 40);
    randomize(model, 0.4, 41);
    const Ids tokens = random_ids(2, 5, 11, 42);
    const Ids targets = random_ids(2, 5, 11, 43);
    EXPECT_TRUE(
        gradients_match([&] { return cross_entropy(model.forward(tokens), targets); }, model))
        << "option " << option;
  }
}

}  // namespace
