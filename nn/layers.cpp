// The simple layers of the decoder: Linear, Embedding, RMSNorm and the feed-forwards (SwiGLU,
// ReLU²).

#include "nn/decoder.hpp"

#include "autograd/kernels/kernels.hpp"

#include <cmath>

namespace glass {
inline namespace GLASS_PRECISION {

// ---- Linear, Embedding, RMSNorm ----------------------------------------------------------

Linear::Linear(std::size_t in_features, std::size_t out_features, double init_std, Rng& rng) {
  weight = register_parameter(
      "weight", Tensor::randn({out_features, in_features}, static_cast<Scalar>(init_std), rng));
}

// The fast path's fast_linear writes the gradients into existing ones (autograd/kernels/linear.cpp).
Tensor Linear::forward(const Tensor& x) const {
  return ops_path() == OpsPath::fast ? fast_linear(x, weight) : linear(x, weight);
}

Embedding::Embedding(std::size_t vocab_size, std::size_t d_model, double init_std, Rng& rng) {
  weight = register_parameter(
      "weight", Tensor::randn({vocab_size, d_model}, static_cast<Scalar>(init_std), rng));
}

Tensor Embedding::forward(const Ids& ids) const { return embedding(weight, ids); }

RMSNorm::RMSNorm(std::size_t d, double eps) : eps(eps) {
  weight = register_parameter("weight", Tensor::ones({d}));  // gains start at 1
}

Tensor RMSNorm::forward(const Tensor& x, const Tracer* tracer) const {
  const Scalar e = static_cast<Scalar>(eps);
  return ops_path() == OpsPath::fast && !tracer ? fast_rms_norm(x, weight, e)
                                                : rms_norm(x, weight, e);
}

// SwiGLU (Shazeer 2020, "GLU Variants Improve Transformer"): w1 is the gate, w3 the up
// projection, w2 the down projection.
SwiGLU::SwiGLU(const ModelConfig& config, Rng& rng)
    : w1(config.d_model, config.ffn_hidden, config.init_std, rng),
      // nanoGPT: residual output projections get std / sqrt(2 * n_layers)
      w2(config.ffn_hidden, config.d_model,
         config.init_std / std::sqrt(2.0 * static_cast<double>(config.n_layers)), rng),
      w3(config.d_model, config.ffn_hidden, config.init_std, rng) {
  register_module("w1", w1);
  register_module("w2", w2);
  register_module("w3", w3);
  set_ops_path(config.ops_path);
}

Tensor SwiGLU::forward(const Tensor& x) const {
  // The gate silu(w1 x) times the up projection w3 x, then down with w2. The fast path fuses the
  // gate into one pass over memory (silu_mul, autograd/kernels/silu_mul.cpp).
  if (ops_path() == OpsPath::fast) return w2.forward(silu_mul(w1.forward(x), w3.forward(x)));
  return w2.forward(silu(w1.forward(x)) * w3.forward(x));
}

// ReLU² (So et al. 2021, "Primer"): up with w3, relu, square, down with w2. No fused kernel:
// relu and pow are cheap next to the two matrix products.
ReLUSquared::ReLUSquared(const ModelConfig& config, Rng& rng)
    : w2(config.ffn_hidden, config.d_model,
         config.init_std / std::sqrt(2.0 * static_cast<double>(config.n_layers)), rng),
      w3(config.d_model, config.ffn_hidden, config.init_std, rng) {
  register_module("w2", w2);
  register_module("w3", w3);
  set_ops_path(config.ops_path);
}

Tensor ReLUSquared::forward(const Tensor& x) const {
  return w2.forward(pow(relu(w3.forward(x)), 2));
}

std::unique_ptr<FeedForward> make_feed_forward(const ModelConfig& config, Rng& rng) {
  if (config.mlp == Mlp::relu2) return std::make_unique<ReLUSquared>(config, rng);
  return std::make_unique<SwiGLU>(config, rng);
}

}  // namespace GLASS_PRECISION
}  // namespace glass
