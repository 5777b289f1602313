// quantize_weights (export/quantize_model.hpp): the weights a model computes with after
// --quantize are the values the exported file holds, tensor by tensor, with the exporter's rules:
// norm gains unchanged, blockable matrices in the asked type, other matrices (rows not a
// multiple of 32 long) in F16.

#include <vector>

#include <gtest/gtest.h>

#include "export/quantize_model.hpp"

namespace {

using glass::WeightType;

/// d_model 32 (blockable rows) with ffn_hidden 40: w2's rows are 40 long, as the default model's
/// w2 rows (344) are not a multiple of 32 either.
glass::ModelConfig config() {
  glass::ModelConfig c;
  c.vocab_size = 11;
  c.d_model = 32;
  c.n_layers = 1;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.ffn_hidden = 40;
  c.context_length = 16;
  return c;
}

std::vector<float> flat(const glass::Array& a) { return {a.data(), a.data() + a.size()}; }

TEST(QuantizeWeights, EachTensorHoldsWhatTheExportedFileHolds) {
  for (WeightType type : {WeightType::q8_0, WeightType::q4_0, WeightType::f16}) {
    glass::Decoder original(config(), 3), quantized(config(), 3);
    const glass::WeightCount count = glass::quantize_weights(quantized, type);
    const auto before = original.named_parameters();
    const auto after = quantized.named_parameters();
    ASSERT_EQ(before.size(), after.size());
    std::size_t changed = 0;
    for (std::size_t i = 0; i < before.size(); ++i) {
      const glass::Array& w = before[i].second.value();
      const std::vector<std::size_t> shape(w.shape().begin(), w.shape().end());
      const WeightType stored = glass::tensor_type(type, shape);
      const std::vector<float> want =
          glass::dequantize(stored, glass::quantize(stored, w.data(), w.size()), w.size());
      EXPECT_EQ(flat(after[i].second.value()), want) << before[i].first;
      if (want != flat(w)) ++changed;
      if (before[i].first.find("w2") != std::string::npos)  // rows of 40: F16 whatever is asked
        EXPECT_EQ(stored, WeightType::f16) << before[i].first;
      if (shape.size() == 1) EXPECT_EQ(flat(after[i].second.value()), flat(w)) << before[i].first;
    }
    EXPECT_GT(changed, 0u);
    // Weights in each type: w2 (32 x 40) in F16 for the blocked types, the gains in F32.
    const std::size_t gains = 3 * 32, w2 = 32 * 40;
    EXPECT_EQ(count.weights[0], gains);
    EXPECT_EQ(count.total(), original.num_parameters());
    if (type != WeightType::f16) {
      EXPECT_EQ(count.weights[1], w2);
      EXPECT_EQ(count.weights[static_cast<int>(type)], original.num_parameters() - gains - w2);
    }
  }
}

TEST(QuantizeWeights, F32ChangesNothing) {
  glass::Decoder original(config(), 3), same(config(), 3);
  const glass::WeightCount count = glass::quantize_weights(same, WeightType::f32);
  EXPECT_DOUBLE_EQ(count.bits_per_weight(), 32.0);
  for (std::size_t i = 0; i < original.named_parameters().size(); ++i)
    EXPECT_EQ(flat(original.named_parameters()[i].second.value()),
              flat(same.named_parameters()[i].second.value()));
}

}  // namespace
