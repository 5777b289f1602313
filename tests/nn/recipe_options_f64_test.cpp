// The recipe options of ModelConfig (QK-norm, the ReLU² MLP, logit soft-capping) in double
// precision: the logits of the twin's small fixed model with each option on match a NumPy
// computation written apart from this code (recipe_options_reference.hpp), on both ops paths;
// KV-cache generation, in chunks and token by token, gives the full forward's logits; the
// options change the parameters only as documented.

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "nn/decoder.hpp"
#include "recipe_options_reference.hpp"
#include "twin_reference.hpp"

namespace {

using namespace glass;

struct Option {
  std::string name;
  std::function<void(ModelConfig&)> set;
  const std::vector<double>& (*expected)();
};

const std::vector<Option>& options() {
  static const std::vector<Option> all = {
      {"qk_norm", [](ModelConfig& c) { c.qk_norm = true; }, glass_test::recipe_qk_norm_logits},
      {"relu2", [](ModelConfig& c) { c.mlp = Mlp::relu2; }, glass_test::recipe_relu2_logits},
      {"softcap", [](ModelConfig& c) { c.logit_softcap = glass_test::kReferenceSoftcap; },
       glass_test::recipe_softcap_logits}};
  return all;
}

/// The twin's model with `option` on, the reference weights, on `path`.
std::unique_ptr<Decoder> model_with(const Option& option, OpsPath path) {
  ModelConfig config = glass_test::twin_config();
  option.set(config);
  config.ops_path = path;
  auto model = std::make_unique<Decoder>(config, 0);
  glass_test::set_reference_weights(*model);
  return model;
}

TEST(RecipeOptions, LogitsMatchNumPyOnBothPaths) {
  for (const Option& option : options())
    for (const OpsPath path : {OpsPath::reference, OpsPath::fast}) {
      const auto model = model_with(option, path);
      NoGradGuard no_grad;
      const Array logits = model->forward(glass_test::twin_tokens()).value();
      const std::vector<double>& expected = option.expected();
      ASSERT_EQ(logits.size(), expected.size());
      for (std::size_t i = 0; i < expected.size(); ++i)
        ASSERT_NEAR(logits.data()[i], expected[i], 1e-11)
            << option.name << " " << to_string(path) << " flat index " << i;
    }
}

TEST(RecipeOptions, EachOptionChangesTheLogits) {
  // The reference values are not the plain model's: each option is really on.
  for (const Option& option : options()) {
    double largest = 0;
    for (std::size_t i = 0; i < option.expected().size(); ++i)
      largest = std::max(largest, std::abs(option.expected()[i] - glass_test::twin_logits()[i]));
    EXPECT_GT(largest, 0.05) << option.name;
  }
  // Soft-capping keeps every logit inside (-c, c) and is c tanh(z / c) of the plain logits.
  for (std::size_t i = 0; i < glass_test::twin_logits().size(); ++i) {
    const double c = glass_test::kReferenceSoftcap, z = glass_test::twin_logits()[i];
    EXPECT_LT(std::abs(glass_test::recipe_softcap_logits()[i]), c);
    EXPECT_NEAR(glass_test::recipe_softcap_logits()[i], c * std::tanh(z / c), 1e-11);
  }
}

TEST(RecipeOptions, CachedGenerationGivesTheFullForwardsLogits) {
  // Prefill 3 positions, then one token at a time (the sampler's pattern), on both paths: each
  // step's logits equal the full forward's at that position.
  const Ids tokens = glass_test::twin_tokens();  // (2, 7)
  for (const Option& option : options())
    for (const OpsPath path : {OpsPath::reference, OpsPath::fast}) {
      const auto model = model_with(option, path);
      NoGradGuard no_grad;
      const Array full = model->forward(tokens).value();  // (2, 7, 11)
      KVCache cache(model->config(), 2);
      std::size_t t = 0;
      for (const std::size_t n : {3, 1, 1, 1, 1}) {
        Ids chunk = Ids::from_shape({2, n});
        for (std::size_t b = 0; b < 2; ++b)
          for (std::size_t j = 0; j < n; ++j) chunk(b, j) = tokens(b, t + j);
        const Array step = model->forward(chunk, &cache).value();  // (2, n, 11)
        for (std::size_t b = 0; b < 2; ++b)
          for (std::size_t j = 0; j < n; ++j)
            for (std::size_t v = 0; v < 11; ++v)
              ASSERT_NEAR(step(b, j, v), full(b, t + j, v), 1e-12)
                  << option.name << " " << to_string(path) << " position " << t + j;
        t += n;
      }
      EXPECT_EQ(cache.length(), 7u);
    }
}

TEST(RecipeOptions, TheParametersAreThoseOfEachOption) {
  const ModelConfig plain = glass_test::twin_config();  // d_model 16, ffn_hidden 24, 2 layers
  const std::size_t swiglu_params = Decoder(plain, 0).num_parameters();
  // QK-norm and soft-capping add no weight.
  ModelConfig qk = plain;
  qk.qk_norm = true;
  EXPECT_EQ(Decoder(qk, 0).num_parameters(), swiglu_params);
  ModelConfig capped = plain;
  capped.logit_softcap = 30;
  EXPECT_EQ(Decoder(capped, 0).num_parameters(), swiglu_params);
  // ReLU² has no gate: 2 * d_model * ffn_hidden per layer instead of 3 *.
  ModelConfig relu2 = plain;
  relu2.mlp = Mlp::relu2;
  const Decoder model(relu2, 0);
  EXPECT_EQ(model.num_parameters(), swiglu_params - 2 * 16 * 24);
  std::vector<std::string> ffn;
  for (const auto& [name, tensor] : model.named_parameters())
    if (name.rfind("layers.0.feed_forward.", 0) == 0) ffn.push_back(name);
  EXPECT_EQ(ffn, (std::vector<std::string>{"layers.0.feed_forward.w2.weight",
                                           "layers.0.feed_forward.w3.weight"}));
  EXPECT_THROW(model.layers[0]->swiglu(), std::logic_error);
  EXPECT_NO_THROW(Decoder(plain, 0).layers[0]->swiglu());
}

TEST(RecipeOptions, ABadSoftcapOrMlpNameIsRefused) {
  ModelConfig c = glass_test::twin_config();
  c.logit_softcap = -1;
  EXPECT_THROW(c.validate(), std::invalid_argument);
  c.logit_softcap = std::nan("");
  EXPECT_THROW(c.validate(), std::invalid_argument);
  c.logit_softcap = 0;
  EXPECT_NO_THROW(c.validate());
  EXPECT_EQ(parse_mlp("relu2"), Mlp::relu2);
  EXPECT_EQ(to_string(Mlp::swiglu), "swiglu");
  try {
    parse_mlp("gelu");
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("\"swiglu\" or \"relu2\""), std::string::npos);
  }
  EXPECT_TRUE(recipe_options_in_use(glass_test::twin_config()).empty());
}

}  // namespace
