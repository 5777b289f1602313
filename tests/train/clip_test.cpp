// Global-norm gradient clipping (train/clip.hpp), against torch.nn.utils.clip_grad_norm_.
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "autograd/threads.hpp"
#include "train/clip.hpp"

using namespace glass;

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

TEST(Clip, AnyThreadCountGivesTheSameBits) {
  // 37 parameters of different sizes, shared out among the threads: the norm and the clipped
  // gradients are the same bits with 1, 2 and 3 threads.
  std::mt19937_64 rng(21);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<std::vector<float>> grads;
  for (int k = 0; k < 37; ++k) {
    grads.emplace_back(static_cast<std::size_t>(1 + 97 * k));
    for (float& g : grads.back()) g = normal(rng);
  }
  std::vector<double> norms;
  std::vector<std::vector<float>> clipped;
  for (std::size_t threads : {1u, 2u, 3u}) {
    set_num_threads(threads);
    std::vector<Tensor> params;
    for (const std::vector<float>& g : grads) {
      Tensor p = Tensor::zeros({g.size()}, true);
      std::copy(g.begin(), g.end(), p.grad().data());
      params.push_back(p);
    }
    norms.push_back(clip_grad_norm(params, 1.0));
    std::vector<float> all;
    for (const Tensor& p : params)
      all.insert(all.end(), p.grad().data(), p.grad().data() + p.size());
    clipped.push_back(all);
  }
  set_num_threads(1);
  EXPECT_GT(norms[0], 1.0);  // so the gradients were scaled
  EXPECT_EQ(norms[1], norms[0]);
  EXPECT_EQ(norms[2], norms[0]);
  EXPECT_EQ(clipped[1], clipped[0]);
  EXPECT_EQ(clipped[2], clipped[0]);
}
