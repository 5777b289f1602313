#pragma once
// AdamW: Adam with decoupled weight decay (Loshchilov & Hutter 2019), as torch.optim.AdamW.

#include <string>
#include <utility>
#include <vector>

#include "autograd/tensor.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

/// Hyper-parameters of AdamW. Defaults: the nanoGPT shakespeare_char recipe.
struct AdamWConfig {
  double beta1 = 0.9;         ///< decay of the first moment (mean of gradients)
  double beta2 = 0.99;        ///< decay of the second moment (mean of squared gradients)
  double eps = 1e-8;          ///< added to sqrt(v_hat) to avoid division by zero
  double weight_decay = 0.1;  ///< decoupled decay, applied only to 2-D (and larger) weights
};

/// One parameter and its optimizer state.
struct AdamWParam {
  std::string name;  ///< e.g. "layers.0.attention.wq.weight"
  Tensor param;      ///< shares storage with the model's parameter
  Array m;           ///< first moment, same shape as the parameter
  Array v;           ///< second moment, same shape as the parameter
  bool decay;        ///< true for matrices/embeddings (dim >= 2), false for RMSNorm gains
};

/// AdamW, step for step as torch.optim.AdamW (foreach=False), per parameter p with gradient g
/// at step t = 1, 2, ...:
///
///   p <- p - lr * weight_decay * p          (only when decay; "decoupled" weight decay)
///   m <- beta1 * m + (1 - beta1) * g
///   v <- beta2 * v + (1 - beta2) * g^2
///   p <- p - (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
///
/// Parameters without a gradient (has_grad() false) are skipped, like PyTorch's p.grad None.
class AdamW {
 public:
  /// `params` as Module::named_parameters(); moments start at zero.
  AdamW(const std::vector<std::pair<std::string, Tensor>>& params, AdamWConfig config = {});

  /// One update of every parameter with learning rate `lr`, then step_count() += 1.
  void step(double lr);
  /// Sets every parameter's gradient to zero.
  void zero_grad();

  /// Steps taken so far (t of the bias correction).
  long step_count() const { return step_count_; }
  /// For restoring a checkpoint.
  void set_step_count(long t) { step_count_ = t; }
  const AdamWConfig& config() const { return config_; }
  /// Parameters and moments (the checkpoint saves m and v by parameter name).
  std::vector<AdamWParam>& params() { return params_; }
  const std::vector<AdamWParam>& params() const { return params_; }

 private:
  AdamWConfig config_;
  std::vector<AdamWParam> params_;
  long step_count_ = 0;
};

}  // namespace GLASS_PRECISION
}  // namespace glass
