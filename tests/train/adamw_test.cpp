// AdamW (train/adamw.hpp): one step by hand, three steps against PyTorch, parameters without
// a gradient.
#include <cmath>

#include <gtest/gtest.h>

#include "train/adamw.hpp"

using namespace glass;

namespace {
struct TwoParams {
  Tensor W = Tensor::from_vector({0.5f, -0.25f, 1.0f, 2.0f}, {2, 2}, true);  // decayed (2-D)
  Tensor gain = Tensor::from_vector({1.0f, -2.0f, 0.5f}, {3}, true);         // not decayed (1-D)
  std::vector<std::pair<std::string, Tensor>> named() { return {{"W", W}, {"gain", gain}}; }
};
void set_grad(Tensor& t, const std::vector<float>& g) {
  t.grad() = Tensor::from_vector(g, t.shape()).value();
}
}  // namespace

TEST(AdamW, FirstStepByHand) {
  // Step 1: m_hat = g, v_hat = g^2, so the update is lr * g / (|g| + eps) ~ lr * sign(g).
  // W[0] = 0.5 * (1 - 0.01 * 0.1) - 0.01 * 0.1 / (0.1 + 1e-8) = 0.4995 - 0.0099999990 = 0.4895000010
  TwoParams p;
  AdamW opt(p.named(), AdamWConfig{0.9, 0.99, 1e-8, 0.1});
  EXPECT_TRUE(opt.params()[0].decay);
  EXPECT_FALSE(opt.params()[1].decay);
  set_grad(p.W, {0.1f, -0.2f, 0.3f, 0.0f});
  set_grad(p.gain, {0.01f, 0.02f, -0.03f});
  opt.step(1e-2);
  EXPECT_EQ(opt.step_count(), 1);
  EXPECT_NEAR(p.W.value()(0, 0), 0.4895000010, 1e-6);
  EXPECT_NEAR(p.W.value()(1, 1), 2.0 * (1 - 1e-3), 1e-6);  // zero gradient: only the decay moves it
  EXPECT_NEAR(p.gain.value()(0), 1.0 - 0.01, 1e-6);        // no decay on the gain
  EXPECT_NEAR(p.gain.value()(2), 0.5 + 0.01, 1e-6);
}

TEST(AdamW, ThreeStepsMatchTorch) {
  // Reference: torch.optim.AdamW (torch 1.13, float64), param groups [W] with weight_decay 0.1
  // and [gain] with 0, betas (0.9, 0.99), eps 1e-8, the gradients and lrs below; printed with
  // /usr/bin/python3 and pasted here.
  TwoParams p;
  AdamW opt(p.named(), AdamWConfig{0.9, 0.99, 1e-8, 0.1});
  const std::vector<std::vector<float>> gW = {
      {0.1f, -0.2f, 0.3f, 0.0f}, {-0.5f, 0.25f, 1.0f, -1.0f}, {0.2f, 0.2f, -0.1f, 0.4f}};
  const std::vector<std::vector<float>> gg = {
      {0.01f, 0.02f, -0.03f}, {1.0f, -1.0f, 0.5f}, {-0.2f, 0.0f, 0.3f}};
  const double lrs[] = {1e-2, 5e-2, 2e-2};
  for (int s = 0; s < 3; ++s) {
    set_grad(p.W, gW[s]);
    set_grad(p.gain, gg[s]);
    opt.step(lrs[s]);
  }
  const double W_ref[] = {0.5198163013442235, -0.2550962139241227, 0.9242840241493537,
                          2.0270128953002247};
  const double g_ref[] = {0.9436711333405756, -1.9622571646843006, 0.45907688676478603};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(p.W.value().data()[i], W_ref[i], 2e-6) << i;
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(p.gain.value().data()[i], g_ref[i], 2e-6) << i;
}

TEST(AdamW, SkipsParametersWithoutGradient) {
  TwoParams p;
  AdamW opt(p.named());
  set_grad(p.W, {1, 1, 1, 1});
  opt.step(1e-3);
  EXPECT_FALSE(p.gain.has_grad());
  EXPECT_FLOAT_EQ(p.gain.value()(1), -2.0f);
  opt.zero_grad();
  EXPECT_FLOAT_EQ(p.W.grad()(0, 0), 0.0f);
}
