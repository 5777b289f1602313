// The logits of a small fixed model agree with the PyTorch twin (bench/torch_twin/model.py) run
// on the same weights and tokens; how the literals were produced is in twin_reference.hpp.
// double: agreement to 1e-11 (only rounding differences).

#include <gtest/gtest.h>

#include <cmath>

#include "nn/decoder.hpp"
#include "twin_reference.hpp"

namespace {

using namespace glass;

TEST(PyTorchTwin, LogitsOfASmallFixedModelMatch) {
  Decoder model(glass_test::twin_config(), 0);
  glass_test::set_reference_weights(model);
  NoGradGuard no_grad;
  const Array logits = model.forward(glass_test::twin_tokens()).value();
  const std::vector<double>& expected = glass_test::twin_logits();
  ASSERT_EQ(logits.size(), expected.size());
  ASSERT_EQ(shape_of(logits), (Shape{2, 7, 11}));
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(logits.data()[i], expected[i], 1e-11) << "flat index " << i;
  }
}

TEST(PyTorchTwin, CachedChunksMatchTheTwinToo) {
  Decoder model(glass_test::twin_config(), 0);
  glass_test::set_reference_weights(model);
  NoGradGuard no_grad;
  const Ids tokens = glass_test::twin_tokens();
  KVCache cache(model.config(), 2);
  Ids first = Ids::from_shape({2, 4}), second = Ids::from_shape({2, 3});
  for (std::size_t b = 0; b < 2; ++b) {
    for (std::size_t t = 0; t < 4; ++t) first(b, t) = tokens(b, t);
    for (std::size_t t = 0; t < 3; ++t) second(b, t) = tokens(b, 4 + t);
  }
  const Array a = model.forward(first, &cache).value();   // positions 0..3
  const Array b = model.forward(second, &cache).value();  // positions 4..6, start = 4
  const std::vector<double>& expected = glass_test::twin_logits();
  for (std::size_t batch = 0; batch < 2; ++batch)
    for (std::size_t t = 0; t < 7; ++t)
      for (std::size_t v = 0; v < 11; ++v) {
        const double got = t < 4 ? a(batch, t, v) : b(batch, t - 4, v);
        EXPECT_NEAR(got, expected[(batch * 7 + t) * 11 + v], 1e-11)
            << batch << ", " << t << ", " << v;
      }
}

}  // namespace
