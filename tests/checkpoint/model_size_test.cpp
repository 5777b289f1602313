// parameter_count and the memory lower bound (checkpoint/model_size.hpp) against the real model.
#include <gtest/gtest.h>

#include "nn/decoder.hpp"
#include "checkpoint/model_size.hpp"

using namespace glass;

// The count from the sizes alone must equal Decoder::num_parameters() (which counts the
// allocated tensors), including GQA (n_kv_heads < n_heads) and an odd vocabulary.
TEST(ModelSize, ParameterCountMatchesTheBuiltDecoder) {
  ModelConfig defaults;  // 742,784 parameters with 65 characters (nn/config.hpp)
  EXPECT_EQ(parameter_count(defaults), 742784.0);
  ModelConfig small;
  small.vocab_size = 78;
  small.d_model = 32;
  small.n_layers = 2;
  small.n_heads = 4;
  small.n_kv_heads = 1;
  small.ffn_hidden = 40;
  ModelConfig relu2 = small;  // the ReLU² MLP: no gate matrix
  relu2.mlp = glass::Mlp::relu2;
  relu2.qk_norm = true;  // no weights
  for (const ModelConfig& c : {defaults, small, relu2}) {
    const Decoder model(c, 1);
    EXPECT_EQ(parameter_count(c), static_cast<double>(model.num_parameters()));
  }
}

TEST(ModelSize, MemoryBoundGrowsWithTheBatchAndRefusesAbsurdSizes) {
  ModelConfig c;
  const double one = training_memory_lower_bound(c, 12, 64);
  EXPECT_GT(one, 16 * parameter_count(c));  // weights, grads, two moments, plus activations
  EXPECT_GT(training_memory_lower_bound(c, 24, 64), one);
  EXPECT_LT(one, 1e9);  // the default recipe is small
  // Each replica of a data-parallel step adds its weights and gradients: 2 x 4 bytes a parameter.
  EXPECT_DOUBLE_EQ(training_memory_lower_bound(c, 12, 64, 3) - one, 3 * 8 * parameter_count(c));
  c.d_model = 1000000000;  // a typo: 10^18 parameters, far beyond any machine
  EXPECT_GT(training_memory_lower_bound(c, 12, 64), 1e18);
  EXPECT_GT(physical_memory_bytes(), 0.0);
  EXPECT_EQ(format_bytes(1.5e9), "1.5 GB");
}
