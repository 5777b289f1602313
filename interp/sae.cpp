// The TopK sparse autoencoder (see sae.hpp): its forward pass as three ops, the decoder's
// unit-norm constraint, the losses and the geometric median.

#include "interp/sae.hpp"

#include <cmath>
#include <stdexcept>

#include <xtensor/xmath.hpp>
#include <xtensor/xreducer.hpp>
#include <xtensor/xview.hpp>

#include "autograd/ops.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

namespace {

std::size_t checked_k(std::size_t d_model, std::size_t n_latents, std::size_t k) {
  if (d_model == 0 || k == 0 || k >= n_latents) {
    throw std::invalid_argument(
        "SparseAutoencoder: k = " + std::to_string(k) + " must be at least 1 and less than the " +
        std::to_string(n_latents) + " latents (d_model " + std::to_string(d_model) + ")");
  }
  return k;
}

}  // namespace

SparseAutoencoder::SparseAutoencoder(std::size_t d_model, std::size_t n_latents, std::size_t k,
                                     Rng& rng)
    : d_model_(d_model), n_latents_(n_latents), k_(checked_k(d_model, n_latents, k)) {
  // A Gaussian vector scaled to unit norm is uniform on the sphere.
  W_dec = register_parameter("W_dec", Tensor::randn({n_latents, d_model}, 1.0, rng));
  normalize_decoder();
  W_enc = register_parameter("W_enc", Tensor(Array(W_dec.value())));
  b_enc = register_parameter("b_enc", Tensor::zeros({n_latents}));
  b_pre = register_parameter("b_pre", Tensor::zeros({d_model}));
}

Tensor SparseAutoencoder::pre_activations(const Tensor& x) const {
  return linear(x - b_pre, W_enc) + b_enc;  // (N, F)
}

Tensor SparseAutoencoder::encode(const Tensor& x) const {
  return topk_relu(pre_activations(x), k_);  // (N, F), at most k non-zero per row
}

Tensor SparseAutoencoder::decode(const Tensor& z) const {
  return matmul(z, W_dec) + b_pre;  // (N, F) @ (F, D) -> (N, D)
}

void SparseAutoencoder::normalize_decoder() {
  Array& w = W_dec.value();
  const Array norm = xt::sqrt(xt::sum(w * w, {1}, xt::keep_dims));  // (F, 1)
  w = xt::where(norm > 0, w / norm, Scalar(0));
}

void SparseAutoencoder::project_decoder_grad() {
  if (!W_dec.has_grad()) return;
  const Array& w = W_dec.value();
  Array& g = W_dec.grad();
  const Array along = xt::sum(g * w, {1}, xt::keep_dims);  // (F, 1) g_i . w_i
  g -= along * w;
}

Tensor normalized_mse(const Tensor& x_hat, const Array& x) {
  Array mean = xt::mean(x, {0});  // (D), then (1, D) to broadcast over the rows
  mean.reshape({1, x.shape(1)});
  const Array centred = x - mean;
  const Scalar variance = xt::sum(centred * centred)();
  const Tensor error = x_hat - Tensor(x);
  return sum(error * error) / (variance > 0 ? variance : Scalar(1));
}

Tensor auxk_loss(const SparseAutoencoder& sae, const Tensor& pre, const Array& error,
                 const std::vector<bool>& dead, std::size_t k_aux) {
  Mask alive = Mask::from_shape({1, sae.n_latents()});
  std::size_t n_dead = 0;
  for (std::size_t i = 0; i < sae.n_latents(); ++i) {
    alive(0, i) = !dead[i];
    n_dead += dead[i] ? 1 : 0;
  }
  if (n_dead == 0 || k_aux == 0) return Tensor::zeros({});
  const Scalar inf = std::numeric_limits<Scalar>::infinity();
  const Tensor z_dead = topk_relu(masked_fill(pre, alive, -inf), std::min(k_aux, n_dead));
  return normalized_mse(matmul(z_dead, sae.W_dec), error);  // no b_pre: it reconstructs e
}

Array geometric_median(const Array& x, int iterations) {
  if (x.dimension() != 2 || x.shape(0) == 0)
    throw std::invalid_argument("geometric_median: needs rows (N, D) with N >= 1");
  Array m = xt::mean(x, {0});  // (D)
  for (int it = 0; it < iterations; ++it) {
    // Weiszfeld: m <- sum(x_i / |x_i - m|) / sum(1 / |x_i - m|)
    const Array d = x - m;
    Array w = 1 / xt::maximum(xt::sqrt(xt::sum(d * d, {1})), Scalar(1e-8));  // (N)
    const Array weighted = xt::sum(x * xt::view(w, xt::all(), xt::newaxis()), {0});
    m = weighted / xt::sum(w)();
  }
  return m;
}

}  // namespace GLASS_PRECISION
}  // namespace glass
