// The TopK sparse autoencoder's pieces (interp/sae.hpp), in double precision: the gradient of
// the whole loss (normalised MSE + AuxK) against finite differences, the decoder's unit-norm
// rows and the gradient projection that keeps them there, the losses on values worked by hand,
// and the geometric median.

#include <cmath>

#include <gtest/gtest.h>
#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include "autograd/gradcheck.hpp"
#include "autograd/ops.hpp"
#include "autograd/tape.hpp"
#include "interp/sae.hpp"

namespace {

using namespace glass;

TEST(SparseAutoencoder, StartsWithUnitDecoderRowsAndTheEncoderAsItsTranspose) {
  Rng rng(3);
  const SparseAutoencoder sae(5, 12, 3, rng);
  for (std::size_t i = 0; i < 12; ++i) {
    double norm = 0;
    for (std::size_t j = 0; j < 5; ++j) norm += sae.W_dec.value()(i, j) * sae.W_dec.value()(i, j);
    EXPECT_NEAR(norm, 1.0, 1e-12) << i;
  }
  EXPECT_EQ(sae.W_enc.value(), sae.W_dec.value());  // W_enc (F, D) = W_dec: encoder = W_dec^T
  EXPECT_EQ(sae.named_parameters().size(), 4u);
}

TEST(SparseAutoencoder, RefusesKOfAtLeastTheLatents) {
  Rng rng(3);
  EXPECT_THROW(SparseAutoencoder(4, 8, 8, rng), std::invalid_argument);
  EXPECT_THROW(SparseAutoencoder(4, 8, 0, rng), std::invalid_argument);
}

TEST(SparseAutoencoder, EncodesAtMostKLatentsAndDecodesWithTheBias) {
  Rng rng(5);
  SparseAutoencoder sae(4, 10, 2, rng);
  sae.b_pre.value() = Tensor::from_vector({1, -1, 0.5, 2}, {4}).value();
  const Tensor x = Tensor::randn({6, 4}, 1.0, rng);
  const Array z = sae.encode(x).value();
  for (std::size_t r = 0; r < 6; ++r) {
    int active = 0;
    for (std::size_t i = 0; i < 10; ++i) active += z(r, i) != 0 ? 1 : 0;
    EXPECT_LE(active, 2);
  }
  // No latent active: the reconstruction is b_pre.
  const Array x_hat = sae.decode(Tensor::zeros({1, 10})).value();
  for (std::size_t j = 0; j < 4; ++j) EXPECT_EQ(x_hat(0, j), sae.b_pre.value()(j));
}

TEST(SparseAutoencoder, LossGradientMatchesFiniteDifferences) {
  // The training loss of one step, every parameter checked: the TopK set is fixed under the
  // small finite-difference steps, so the loss is smooth there. Latents 0-2 are marked dead.
  Rng rng(11);
  SparseAutoencoder sae(4, 9, 3, rng);
  sae.b_pre.value() = Tensor::from_vector({0.1, -0.2, 0.3, 0.0}, {4}).value();
  const Array x = Tensor::randn({5, 4}, 1.0, rng).value();
  const std::vector<bool> dead = {true, true, true, false, false, false, false, false, false};
  std::vector<Tensor> params;
  for (const auto& [name, p] : sae.named_parameters()) params.push_back(p);
  // AuxK's target, the main reconstruction's error, is a constant (detached, as Gao et al.).
  const Array error = x - sae.decode(sae.encode(Tensor(x))).value();
  const auto loss = [&](const std::vector<Tensor>&) {
    const Tensor pre = sae.pre_activations(Tensor(x));
    const Tensor x_hat = sae.decode(topk_relu(pre, sae.k()));
    return normalized_mse(x_hat, x) + auxk_loss(sae, pre, error, dead, 2) * 0.5;
  };
  const GradcheckReport report = gradcheck(loss, params);
  EXPECT_TRUE(report.passed) << report.max_abs_error << " " << report.max_rel_error;
  for (const auto& input : report.inputs)
    EXPECT_TRUE(input.passed) << input.index << " " << input.max_abs_error;
}

TEST(SparseAutoencoder, ProjectedGradientIsOrthogonalToEachDecoderRow) {
  Rng rng(2);
  SparseAutoencoder sae(6, 8, 2, rng);
  sae.W_dec.grad() = Tensor::randn({8, 6}, 1.0, rng).value();
  sae.project_decoder_grad();
  const Array dot = xt::sum(sae.W_dec.grad() * sae.W_dec.value(), {1});
  for (std::size_t i = 0; i < 8; ++i) EXPECT_NEAR(dot(i), 0, 1e-12);
  // A step along it, renormalised, keeps every row of unit norm.
  sae.W_dec.value() += 0.1 * sae.W_dec.grad();
  sae.normalize_decoder();
  const Array norm = xt::sqrt(xt::sum(xt::square(sae.W_dec.value()), {1}));
  for (std::size_t i = 0; i < 8; ++i) EXPECT_NEAR(norm(i), 1, 1e-12);
}

TEST(SparseAutoencoder, NormalizedMseIsTheFractionOfVarianceUnexplained) {
  // x = [[0, 0], [2, 2]]: mean (1, 1), sum |x - mean|^2 = 4. x_hat = [[1, 0], [2, 2]]:
  // sum |x_hat - x|^2 = 1, so 1/4.
  const Array x = Tensor::from_vector({0, 0, 2, 2}, {2, 2}).value();
  const Tensor x_hat = Tensor::from_vector({1, 0, 2, 2}, {2, 2});
  EXPECT_DOUBLE_EQ(normalized_mse(x_hat, x).item(), 0.25);
  // The mean itself explains nothing: FVU 1.
  EXPECT_DOUBLE_EQ(normalized_mse(Tensor::from_vector({1, 1, 1, 1}, {2, 2}), x).item(), 1.0);
}

TEST(SparseAutoencoder, AuxKIsZeroWithoutDeadLatents) {
  Rng rng(1);
  SparseAutoencoder sae(3, 6, 2, rng);
  const Tensor pre = Tensor::randn({4, 6}, 1.0, rng);
  const Array error = Tensor::randn({4, 3}, 1.0, rng).value();
  EXPECT_EQ(auxk_loss(sae, pre, error, std::vector<bool>(6, false), 2).item(), 0.0);
  // With every latent dead it reconstructs the error: at most 1 (the zero reconstruction
  // leaves sum |e|^2, which is >= sum |e - mean e|^2) plus what a bad pick adds.
  EXPECT_GT(auxk_loss(sae, pre, error, std::vector<bool>(6, true), 2).item(), 0.0);
}

TEST(GeometricMedian, IsTheMiddlePointOnALineAndIgnoresAnOutlier) {
  // On a line the geometric median is the median: 1 for {0, 1, 100}, where the mean is 33.7.
  const Array x = Tensor::from_vector({0, 1, 100}, {3, 1}).value();
  EXPECT_NEAR(geometric_median(x, 200)(0), 1.0, 1e-3);
  // Four corners of a square: the centre.
  const Array square = Tensor::from_vector({0, 0, 2, 0, 0, 2, 2, 2}, {4, 2}).value();
  const Array m = geometric_median(square);
  EXPECT_NEAR(m(0), 1.0, 1e-9);
  EXPECT_NEAR(m(1), 1.0, 1e-9);
  EXPECT_THROW(geometric_median(Array::from_shape({0, 2})), std::invalid_argument);
}

}  // namespace
