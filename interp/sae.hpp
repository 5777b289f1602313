#pragma once
// A TopK sparse autoencoder (Gao et al. 2024, "Scaling and evaluating sparse autoencoders"):
// a dictionary of n_latents directions in the residual stream, of which k at most describe each
// activation. For an activation x (d_model):
//
//   z     = ReLU(TopK(W_enc (x - b_pre) + b_enc))   (n_latents)  the latents, at most k non-zero
//   x_hat = W_dec^T z + b_pre                        (d_model)    the reconstruction
//
// Each row of W_dec (one latent's direction) has unit norm: the trainer renormalises the rows
// after every step and removes from each row's gradient its component along the row (as Gao et
// al. and SAELens do), so that a latent's size lives in z alone. The loss is the normalised MSE
// (the fraction of variance unexplained), plus AuxK for dead latents.
//
// Shapes: N activations (rows), D = d_model, F = n_latents. Parameter names follow SAELens
// (W_enc, b_enc, W_dec; b_pre is SAELens's b_dec); W_enc is stored (F, D) like W_dec, so the
// encoder is linear(x, W_enc).

#include <cstddef>
#include <string>

#include "autograd/tensor.hpp"
#include "nn/module.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

/// The SAE's parameters and its forward pass. Throws std::invalid_argument unless
/// d_model >= 1 and 1 <= k < n_latents.
class SparseAutoencoder : public Module {
 public:
  /// W_dec rows drawn uniformly on the unit sphere from `rng`, W_enc = W_dec (so the encoder
  /// starts as the decoder's transpose), b_enc = 0, b_pre = 0 (set it with set_b_pre).
  SparseAutoencoder(std::size_t d_model, std::size_t n_latents, std::size_t k, Rng& rng);

  /// x (N, D) -> (N, F): W_enc (x - b_pre) + b_enc, before TopK.
  Tensor pre_activations(const Tensor& x) const;
  /// x (N, D) -> z (N, F): topk_relu of the pre-activations.
  Tensor encode(const Tensor& x) const;
  /// z (N, F) -> x_hat (N, D): z W_dec + b_pre.
  Tensor decode(const Tensor& z) const;

  /// Scales every row of W_dec to unit norm (a zero row stays zero).
  void normalize_decoder();
  /// Removes from each row of W_dec's gradient its component along the row: g_i -= (g_i . w_i)
  /// w_i (w_i of unit norm), so that a step moves the row along the unit sphere. Nothing when
  /// W_dec has no gradient.
  void project_decoder_grad();

  std::size_t d_model() const { return d_model_; }
  std::size_t n_latents() const { return n_latents_; }
  std::size_t k() const { return k_; }

  Tensor W_enc;  ///< (F, D)
  Tensor b_enc;  ///< (F)
  Tensor W_dec;  ///< (F, D), unit-norm rows
  Tensor b_pre;  ///< (D) subtracted before the encoder, added after the decoder

 private:
  std::size_t d_model_, n_latents_, k_;
};

/// The normalised MSE of Gao et al.: sum((x_hat - x)^2) / sum((x - mean(x))^2), the mean taken
/// over the N rows: the fraction of the batch's variance the reconstruction leaves unexplained
/// (FVU; 0 perfect, 1 no better than the mean). x_hat (N, D) on the tape, x (N, D) a constant.
/// Returns a scalar.
Tensor normalized_mse(const Tensor& x_hat, const Array& x);

/// The AuxK loss (Gao et al. section A.2): the top `k_aux` pre-activations among the dead
/// latents (dead[i] true) reconstruct the main reconstruction's error e = x - x_hat:
///   normalized_mse(W_dec^T TopK_dead(pre), e)
/// so that dead latents receive gradient towards what the live ones miss. pre (N, F) on the tape;
/// error (N, D) a constant. Returns 0 (constant) when no latent is dead; k_aux is capped at the
/// number of dead latents.
Tensor auxk_loss(const SparseAutoencoder& sae, const Tensor& pre, const Array& error,
                 const std::vector<bool>& dead, std::size_t k_aux);

/// The geometric median of the rows of x (N, D) by Weiszfeld's iteration (`iterations` steps from
/// the mean): the point minimising the sum of Euclidean distances to the rows, Gao et al.'s
/// initial b_pre. std::invalid_argument for N = 0.
Array geometric_median(const Array& x, int iterations = 30);

}  // namespace GLASS_PRECISION
}  // namespace glass
