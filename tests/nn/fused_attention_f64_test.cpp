// Attention::forward has two recording paths: training (no tracer, no KV cache) runs steps 5-8
// as the fused causal_attention op; with a tracer they run step by step (attention_scores,
// masked_softmax, attention_mix), as written in nn/attention.cpp. Both must give the same
// logits and the same gradient for every parameter (double precision), at a length that makes
// several blocks of 32 query rows and a partial last block.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "autograd/kernels/kernels.hpp"
#include "nn/decoder.hpp"
#include "nn/tracer.hpp"
#include "fixtures.hpp"
#include "nn_test_util.hpp"

namespace {

using namespace glass;
using glass_test::random_ids;
using glass_test::randomize;

static_assert(sizeof(Scalar) == sizeof(double), "this comparison needs Scalar = double");

/// Small model, GQA (4 query heads, 2 KV heads), long enough context for T = 70.
ModelConfig config() {
  return glass_test::small_config(13, 80);  // fixtures.hpp
}

/// Logits and every parameter gradient of one forward + cross-entropy + backward, and whether the
/// fused op was recorded.
struct Step {
  Array logits;
  std::map<std::string, Array> grads;
  bool fused = false;
};

Step run_step(const Decoder& model, const Ids& tokens, const Ids& targets, bool with_tracer) {
  Tracer tracer;
  Step step;
  tape().clear();
  const Tensor logits = model.forward(tokens, nullptr, with_tracer ? &tracer : nullptr);
  const auto& records = tape().records();
  step.fused = std::any_of(records.begin(), records.end(),
                           [](const TapeRecord& r) { return r.op == "causal_attention"; });
  step.logits = logits.value();
  cross_entropy(logits, targets).backward();
  for (const auto& [name, p] : model.named_parameters()) step.grads[name] = p.grad();
  return step;
}

TEST(FusedAttentionPath, SameLogitsAndGradientsAsTheStepByStepPath) {
  for (const std::size_t T : {5, 40, 70}) {
    Decoder model(config(), 3);
    randomize(model, 0.3, 17);  // weights large enough that attention is far from uniform
    const Ids tokens = random_ids(2, T, 13, 21), targets = random_ids(2, T, 13, 22);

    model.zero_grad();
    const Step fused = run_step(model, tokens, targets, false);
    model.zero_grad();
    const Step steps = run_step(model, tokens, targets, true);
    EXPECT_TRUE(fused.fused) << "training without a tracer should record causal_attention";
    EXPECT_FALSE(steps.fused) << "a tracer should force the step-by-step path";

    ASSERT_EQ(shape_of(fused.logits), shape_of(steps.logits));
    for (std::size_t i = 0; i < fused.logits.size(); ++i)
      ASSERT_NEAR(fused.logits.data()[i], steps.logits.data()[i], 1e-12) << "T " << T << " logit " << i;
    ASSERT_EQ(fused.grads.size(), steps.grads.size());
    for (const auto& [name, g] : fused.grads) {
      const Array& ref = steps.grads.at(name);
      ASSERT_EQ(shape_of(g), shape_of(ref)) << name;
      double largest = 0;
      for (std::size_t i = 0; i < g.size(); ++i) {
        EXPECT_NEAR(g.data()[i], ref.data()[i], 1e-12) << "T " << T << " " << name << " at " << i;
        largest = std::max(largest, std::abs(ref.data()[i]));
      }
      EXPECT_GT(largest, 0.0) << name << ": the comparison needs a non-zero gradient";
    }
  }
}

}  // namespace
