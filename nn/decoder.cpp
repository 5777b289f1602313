// The decoder block (pre-norm residual) and the whole model: tokens -> embeddings -> blocks ->
// final RMSNorm -> LM head -> logits. The layers are in layers.cpp, attention in attention.cpp.

#include "nn/decoder.hpp"

#include "autograd/kernels/kernels.hpp"

#include <stdexcept>
#include <string>

namespace glass {
inline namespace GLASS_PRECISION {

// ---- Block ---------------------------------------------------------------------------------

Block::Block(const ModelConfig& config, Rng& rng)
    : attention_norm(config.d_model, config.norm_eps),
      attention(config, rng),
      ffn_norm(config.d_model, config.norm_eps),
      feed_forward(make_feed_forward(config, rng)) {
  register_module("attention_norm", attention_norm);
  register_module("attention", attention);
  register_module("ffn_norm", ffn_norm);
  register_module("feed_forward", *feed_forward);
  set_ops_path(config.ops_path);
}

const SwiGLU& Block::swiglu() const {
  const auto* ffn = dynamic_cast<const SwiGLU*>(feed_forward.get());
  if (!ffn) throw std::logic_error("Block::swiglu: " + path() + "'s feed-forward is not SwiGLU");
  return *ffn;
}

Tensor Block::forward(const Tensor& x, LayerKVCache* cache, Tracer* tracer) const {
  // Pre-norm residual: each sub-layer reads a normalised copy and adds its result to the stream.
  // (The fast path's fast_add hands the gradient buffer on instead of copying it.)
  const bool fast = ops_path() == OpsPath::fast;
  const auto residual = [fast](const Tensor& a, const Tensor& b) {
    return fast ? fast_add(a, b) : a + b;
  };
  // Hook points without a snapshot (nn/tracer.hpp): the stream after the attention add, and
  // the MLP output.
  Tensor h = residual(x, attention.forward(attention_norm.forward(x, tracer), cache, tracer));
  h = hook_point(tracer, path() + ".mid", h, false);
  const Tensor mlp = hook_point(tracer, path() + ".feed_forward.out",
                                feed_forward->forward(ffn_norm.forward(h, tracer)), false);
  return residual(h, mlp);
}

// ---- Decoder -------------------------------------------------------------------------------

namespace {

ModelConfig validated(const ModelConfig& config) {
  config.validate();
  return config;
}

std::vector<std::unique_ptr<Block>> make_layers(const ModelConfig& config, Rng& rng) {
  std::vector<std::unique_ptr<Block>> layers;
  for (std::size_t i = 0; i < config.n_layers; ++i)
    layers.push_back(std::make_unique<Block>(config, rng));
  return layers;
}

}  // namespace

Decoder::Decoder(const ModelConfig& config, std::uint64_t seed)
    : config_(validated(config)),
      init_rng_(seed),
      tok_embeddings(config_.vocab_size, config_.d_model, config_.init_std, init_rng_),
      layers(make_layers(config_, init_rng_)),
      norm(config_.d_model, config_.norm_eps),
      output(config_.d_model, config_.vocab_size, config_.init_std, init_rng_) {
  register_module("tok_embeddings", tok_embeddings);
  for (std::size_t i = 0; i < layers.size(); ++i) {
    register_module("layers." + std::to_string(i), *layers[i]);
  }
  register_module("norm", norm);
  register_module("output", output);
  Module::set_ops_path(config_.ops_path);
  // Give every parameter its full name, so printed tensors say where they live.
  for (auto& [name, tensor] : named_parameters()) tensor.set_name(name);
}

Tensor Decoder::forward(const Ids& tokens, KVCache* cache, Tracer* tracer) const {
  if (tokens.dimension() != 2) {
    throw std::invalid_argument("Decoder::forward: tokens must have shape (B, T), got " +
                                shape_str(shape_of(tokens)));
  }
  const std::size_t B = tokens.shape()[0], T = tokens.shape()[1];
  if (B == 0 || T == 0) {
    throw std::invalid_argument("Decoder::forward: empty input of shape " +
                                shape_str(shape_of(tokens)));
  }
  const std::size_t start = cache ? cache->length() : 0;
  if (start + T > config_.context_length) {
    throw std::invalid_argument("Decoder::forward: " + std::to_string(start) + " cached + " +
                                std::to_string(T) + " new positions exceed context_length " +
                                std::to_string(config_.context_length));
  }
  if (cache && cache->batch_size() != B) {
    throw std::invalid_argument("Decoder::forward: the KV cache was made for batch size " +
                                std::to_string(cache->batch_size()) + ", tokens have " +
                                std::to_string(B));
  }
  if (tracer && tracer->batch_index() >= B) {
    throw std::invalid_argument("Decoder::forward: the tracer keeps batch element " +
                                std::to_string(tracer->batch_index()) + ", but the batch has " +
                                std::to_string(B));
  }
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const std::int32_t id = tokens.data()[i];
    if (id < 0 || static_cast<std::size_t>(id) >= config_.vocab_size) {
      throw std::invalid_argument("Decoder::forward: token id " + std::to_string(id) + " at (" +
                                  std::to_string(i / T) + ", " + std::to_string(i % T) +
                                  ") is outside the vocabulary [0, " +
                                  std::to_string(config_.vocab_size) + ")");
    }
  }

  // Hook points (nn/tracer.hpp): the residual stream before the first block and after each.
  Tensor x = hook_point(tracer, "embeddings", tok_embeddings.forward(tokens));  // (B, T, d_model)
  for (std::size_t i = 0; i < layers.size(); ++i) {
    x = layers[i]->forward(x, cache ? &cache->layers[i] : nullptr, tracer);
    x = hook_point(tracer, layers[i]->path() + ".out", x);
  }
  Tensor logits = logits_of(x, tracer);  // (B, T, vocab_size)
  if (tracer) {
    tracer->record("logits", logits.value());
    tracer->record("probs", softmax(Tensor(logits.value())).value());
  }
  if (cache) cache->advance(T);
  return logits;
}

Tensor Decoder::logits_of(const Tensor& x, const Tracer* tracer) const {
  const Tensor logits = output.forward(norm.forward(x, tracer));
  const double c = config_.logit_softcap;
  if (c <= 0) return logits;
  // Soft-capping (Gemma 2; modded-nanogpt): near 0 the logits pass unchanged, and none
  // reaches c. The loss and the sampler both read these capped logits.
  return static_cast<Scalar>(c) * tanh(logits / static_cast<Scalar>(c));
}

void Decoder::set_ops_path(OpsPath path) {
  config_.ops_path = path;
  Module::set_ops_path(path);
}

}  // namespace GLASS_PRECISION
}  // namespace glass
