// The logit lens and two head ablations of the twin's small fixed model agree with an
// independent computation by the PyTorch twin in float64 (tests/interp/interp_reference.hpp,
// made by tests/interp/reference/make_interp_reference.py) to 1e-9.

#include <gtest/gtest.h>

#include "interp_reference.hpp"
#include "interp_util.hpp"

namespace {

using namespace glass;

void expect_matches(const Array& got, const std::vector<double>& expected,
                    const std::string& what) {
  ASSERT_EQ(got.size(), expected.size()) << what;
  for (std::size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(got.data()[i], expected[i], 1e-9) << what << " flat index " << i;
}

TEST(PyTorchTwinInterp, LogitLensMatches) {
  auto model = interp_test::twin_model();
  const Ids tokens = glass_test::twin_tokens();
  Tokens row0;
  for (std::size_t t = 0; t < tokens.shape()[1]; ++t) row0.push_back(tokens(0, t));
  expect_matches(logit_lens(*model, row0, 3).logits, interp_reference::lens_logits(), "lens");
}

TEST(PyTorchTwinInterp, ZeroAblationMatches) {
  auto model = interp_test::twin_model();
  expect_matches(ablated_logits(*model, glass_test::twin_tokens(), {{1, 2}}, AblationMode::zero),
                 interp_reference::zero_ablation_logits(), "zero ablation of (1, 2)");
}

TEST(PyTorchTwinInterp, MeanAblationMatches) {
  auto model = interp_test::twin_model();
  const Ids tokens = glass_test::twin_tokens();
  const HeadMeans means = head_means(*model, tokens);
  expect_matches(ablated_logits(*model, tokens, {{0, 1}}, AblationMode::mean, &means),
                 interp_reference::mean_ablation_logits(), "mean ablation of (0, 1)");
}

}  // namespace
