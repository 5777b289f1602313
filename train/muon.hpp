#pragma once
// Muon: momentum orthogonalized by Newton-Schulz (Keller Jordan 2024, github.com/KellerJordan/Muon,
// muon.py: zeropower_via_newtonschulz5 and muon_update), for the 2-D hidden weights of the
// decoder. Embeddings, the output head and the RMSNorm gains stay on AdamW (split_for_muon).

#include <string>
#include <utility>
#include <vector>

#include <xtensor/xarray.hpp>

#include "autograd/tensor.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

/// A row-major matrix of T (float in training, double in the tests).
template <typename T>
using Matrix = xt::xarray<T, xt::layout_type::row_major>;

/// Hyper-parameters of Muon. Defaults: Keller Jordan's Muon (muon.py). No weight decay (Muon's
/// default; the matrices on Muon are not decayed, AdamW still decays the embeddings and head).
struct MuonConfig {
  double momentum = 0.95;  ///< beta of the Nesterov momentum
  int ns_steps = 5;        ///< Newton-Schulz iterations
  double eps = 1e-7;       ///< added to the Frobenius norm before dividing by it
};

/// The coefficients (a, b, c) of Muon's quintic Newton-Schulz iteration X <- aX + (bA + cA^2)X,
/// A = X X^T. They are tuned to push every singular value in (0, 1] quickly into a band around 1
/// (0.68 to 1.14 after 5 steps, for every singular value of G / ||G||_F from 0.01 to 1), not
/// to converge: faster than the cubic 1.5X - 0.5 X X^T X.
inline constexpr double kNewtonSchulzA = 3.4445, kNewtonSchulzB = -4.7750, kNewtonSchulzC = 2.0315;

/// Orthogonalizes G (rows, cols): an approximation of U V^T from the SVD G = U S V^T, computed as
/// muon.py's zeropower_via_newtonschulz5:
///
///   X <- G / (||G||_F + eps)            (every singular value <= 1)
///   steps times:  A <- X X^T;  X <- a X + (b A + c A^2) X
///
/// on G^T when G has more rows than columns (so that A is the smaller of the two Gram matrices),
/// transposed back at the end. Throws std::invalid_argument when G is not 2-D.
template <typename T>
Matrix<T> newton_schulz5(const Matrix<T>& G, int steps = 5, double eps = 1e-7);

/// One Muon update of one matrix `param` (rows, cols) with gradient `grad` and momentum buffer
/// `momentum` (same shape), learning rate `lr`:
///
///   buf    <- momentum * buf + g                  (buf is `momentum`)
///   update <- g + momentum * buf                  (Nesterov)
///   O      <- newton_schulz5(update)
///   param  <- param - lr * sqrt(max(1, rows / cols)) * O
///
/// muon.py keeps buf as an average instead (buf <- lerp(buf, g, 1 - beta), update <- lerp(g,
/// buf, beta)): that buf and update are (1 - beta) times these, the same update once divided by
/// its norm. rows / cols is PyTorch's (out, in), which is also our Linear's layout
/// (nn/layers.cpp: weight (out_features, in_features)): a tall matrix (out > in, such as the
/// FFN's w1 and w3) takes the larger step. Throws std::invalid_argument for shapes that differ
/// or are not 2-D.
template <typename T>
void muon_update(Matrix<T>& param, const Matrix<T>& grad, Matrix<T>& momentum, double lr,
                 const MuonConfig& config = {});

/// One parameter and its momentum buffer.
struct MuonParam {
  std::string name;  ///< e.g. "layers.0.attention.wq.weight"
  Tensor param;      ///< shares storage with the model's parameter; 2-D (out, in)
  Array momentum;    ///< buf, same shape as the parameter, zero at the start
};

/// Muon over a set of matrices: step(lr) applies muon_update to each parameter with a gradient
/// (has_grad() false: skipped, as AdamW does).
class Muon {
 public:
  /// `params` as split_for_muon's `muon`; buffers start at zero. Throws std::invalid_argument
  /// naming a parameter that is not 2-D (Muon orthogonalizes matrices; gains belong to AdamW).
  Muon(const std::vector<std::pair<std::string, Tensor>>& params, MuonConfig config = {});

  /// One update of every parameter with learning rate `lr`, then step_count() += 1. The matrices
  /// are shared among num_threads() threads, each orthogonalized on one thread with a
  /// single-threaded BLAS: the same bits for any thread count.
  void step(double lr);

  long step_count() const { return step_count_; }
  /// For restoring a checkpoint.
  void set_step_count(long t) { step_count_ = t; }
  const MuonConfig& config() const { return config_; }
  /// Parameters and buffers (the checkpoint saves the buffers by parameter name).
  std::vector<MuonParam>& params() { return params_; }
  const std::vector<MuonParam>& params() const { return params_; }

 private:
  MuonConfig config_;
  std::vector<MuonParam> params_;
  long step_count_ = 0;
};

/// Which parameters Muon takes: the 2-D weights inside the decoder blocks ("layers.<i>." names:
/// attention wq, wk, wv, wo and the FFN's w1, w2, w3). Not the token embeddings, not the output
/// head (their rows are per-token vectors, not a linear map between hidden states) and not the
/// RMSNorm gains (1-D).
bool is_muon_param(const std::string& name, const Tensor& param);

/// The model's parameters split between the two optimizers, each list in the model's order.
struct MuonSplit {
  std::vector<std::pair<std::string, Tensor>> muon, adamw;
};
MuonSplit split_for_muon(const std::vector<std::pair<std::string, Tensor>>& params);

}  // namespace GLASS_PRECISION
}  // namespace glass
