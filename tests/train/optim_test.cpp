// The optimizer pieces: LR schedule, AdamW, global-norm clipping.
#include <cmath>

#include <gtest/gtest.h>

#include "train/adamw.hpp"
#include "train/clip.hpp"
#include "train/schedule.hpp"

using namespace glass;

// ---- schedule: values computed by hand from the nanoGPT formula (README, "Conventions") -----
TEST(LrSchedule, WarmupThenCosineThenFloor) {
  LrSchedule s{1e-3, 1e-4, 100, 2000};
  EXPECT_NEAR(s.at(0), 1e-3 * 1.0 / 101.0, 1e-15);     // 9.90099e-6
  EXPECT_NEAR(s.at(49), 1e-3 * 50.0 / 101.0, 1e-15);
  EXPECT_NEAR(s.at(99), 1e-3 * 100.0 / 101.0, 1e-15);  // last warmup step, still below lr_max
  EXPECT_NEAR(s.at(100), 1e-3, 1e-15);                 // ratio 0: cos(0) = 1 -> lr_max
  // ratio 0.25: 1e-4 + 0.5 * (1 + cos(pi/4)) * 9e-4 = 1e-4 + 0.5 * 1.7071067812 * 9e-4
  EXPECT_NEAR(s.at(575), 8.6819805153e-4, 1e-13);
  EXPECT_NEAR(s.at(1050), 5.5e-4, 1e-15);              // ratio 0.5: halfway between the ends
  // ratio 0.75: 1e-4 + 0.5 * (1 - cos(pi/4)) * 9e-4 = 1e-4 + 1.3180194847e-4
  EXPECT_NEAR(s.at(1525), 2.3180194847e-4, 1e-13);
  EXPECT_NEAR(s.at(2000), 1e-4, 1e-15);                // horizon reached: min_lr
  EXPECT_NEAR(s.at(5000), 1e-4, 1e-15);                // and stays there
}

TEST(LrSchedule, NoWarmupAndWarmupPastHorizon) {
  LrSchedule s{2e-3, 2e-4, 0, 10};
  EXPECT_NEAR(s.at(0), 2e-3, 1e-15);
  EXPECT_NEAR(s.at(5), 1.1e-3, 1e-15);  // ratio 0.5
  LrSchedule w{1e-3, 1e-4, 10, 10};      // warmup == horizon: no division by zero
  EXPECT_NEAR(w.at(9), 1e-3 * 10.0 / 11.0, 1e-15);
  EXPECT_NEAR(w.at(10), 1e-4, 1e-15);
}

// ---- AdamW --------------------------------------------------------------------------------
namespace {
struct TwoParams {
  Tensor W = Tensor::from_vector({0.5f, -0.25f, 1.0f, 2.0f}, {2, 2}, true);  // decayed (2-D)
  Tensor gain = Tensor::from_vector({1.0f, -2.0f, 0.5f}, {3}, true);          // not decayed (1-D)
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
  EXPECT_NEAR(p.gain.value()(0), 1.0 - 0.01, 1e-6);         // no decay on the gain
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

// ---- clipping -----------------------------------------------------------------------------
TEST(Clip, GlobalNormScalesAllGradientsTogether) {
  // Gradients (3, 4) and (12): global norm sqrt(9 + 16 + 144) = 13; scale 1 / (13 + 1e-6).
  // torch.nn.utils.clip_grad_norm_ gives a.grad = [0.230769213, 0.307692284], b.grad = 0.923076852.
  Tensor a = Tensor::from_vector({0, 0}, {2}, true);
  Tensor b = Tensor::from_vector({0}, {1, 1}, true);
  a.grad() = Tensor::from_vector({3, 4}, {2}).value();
  b.grad() = Tensor::from_vector({12}, {1, 1}).value();
  const double norm = clip_grad_norm({a, b}, 1.0);
  EXPECT_NEAR(norm, 13.0, 1e-9);
  EXPECT_NEAR(a.grad()(0), 0.23076921301775288, 1e-7);
  EXPECT_NEAR(a.grad()(1), 0.3076922840236705, 1e-7);
  EXPECT_NEAR(b.grad()(0, 0), 0.9230768520710115, 1e-7);
  EXPECT_NEAR(global_grad_norm({a, b}), 1.0, 1e-6);
}

TEST(Clip, HugeAndTinyGradientsGiveTheRightNorm) {
  // Squares of these overflow (2e19^2 = 4e38 > float max 3.4e38) or vanish (1e-23^2 = 1e-46 <
  // float's smallest 1.4e-45) in float; the norm is accumulated in double, so it is exact to
  // float rounding of the inputs: sqrt(2 * 2e19^2) and sqrt(1000 * 1e-23^2) (by hand).
  Tensor big = Tensor::from_vector({0, 0}, {2}, true);
  big.grad() = Tensor::from_vector({2e19f, -2e19f}, {2}).value();
  EXPECT_NEAR(global_grad_norm({big}) / (std::sqrt(2.0) * double(2e19f)), 1.0, 1e-6);
  const double norm = clip_grad_norm({big}, 1.0);
  EXPECT_TRUE(std::isfinite(norm));
  EXPECT_NEAR(global_grad_norm({big}), 1.0, 1e-5);  // clipped to 1
  Tensor tiny = Tensor::zeros({1000}, true);
  tiny.grad().fill(1e-23f);
  EXPECT_NEAR(global_grad_norm({tiny}) / (std::sqrt(1000.0) * double(1e-23f)), 1.0, 1e-6);
}

TEST(Clip, SmallNormUntouchedAndNonFiniteReported) {
  Tensor a = Tensor::from_vector({0, 0}, {2}, true);
  a.grad() = Tensor::from_vector({0.3f, 0.4f}, {2}).value();
  EXPECT_NEAR(clip_grad_norm({a}, 1.0), 0.5, 1e-7);
  EXPECT_FLOAT_EQ(a.grad()(0), 0.3f);
  EXPECT_NEAR(clip_grad_norm({a}, 0.0), 0.5, 1e-7);  // 0 = clipping off
  a.grad()(1) = std::nanf("");
  EXPECT_TRUE(std::isnan(clip_grad_norm({a}, 1.0)));
  EXPECT_FLOAT_EQ(a.grad()(0), 0.3f);  // left alone for the caller to report
}
