#pragma once
// How big a model and a training step are, computed from the sizes alone (nothing allocated),
// so that absurd sizes (a typo such as --d-model 1000000000, a corrupt config.json) are refused
// with a clear message instead of exhausting the memory.

#include <cstddef>
#include <string>

#include "nn/config.hpp"

namespace glass {

/// Trainable parameters of a Decoder with this config: the same number as
/// Decoder::num_parameters(), without building the model. Returned as a double so that absurd
/// sizes do not overflow. Per layer: 2 RMSNorm gains (d_model each), wq and wo (d_model x
/// d_model), wk and wv (n_kv_heads * head_dim x d_model), SwiGLU w1, w2, w3 (ffn_hidden x
/// d_model each); plus tok_embeddings and output (vocab_size x d_model, not tied) and the final
/// norm (d_model).
double parameter_count(const ModelConfig& config);

/// A lower bound, in bytes, of the memory one training step of a (batch, context) batch needs:
/// float32 weights, gradients and the two AdamW moments (4 per parameter), plus the activations
/// kept for the backward pass that certainly exist: the logits, their softmax and gradient
/// (3 x B*T*V), and per layer at least 10 (B, T, d_model) tensors, 3 attention maps
/// (B, n_heads, T, T) and 4 (B, T, ffn_hidden) tensors. The real peak is higher. `replicas`
/// adds the model copies of a data-parallel step on several threads (train/data_parallel.hpp):
/// weights and gradients (2 per parameter) each; the activations are the same in total.
double training_memory_lower_bound(const ModelConfig& config, std::size_t batch,
                                   std::size_t context, std::size_t replicas = 0);

/// This machine's physical memory in bytes (sysconf), or 0 when unknown.
double physical_memory_bytes();

/// The memory a new allocation can get now without swapping: MemAvailable of /proc/meminfo
/// (free memory plus reclaimable caches, as the kernel estimates it), in bytes; the physical
/// memory when /proc/meminfo does not say; 0 when neither is known. Size checks compare with
/// this, not with the physical memory that other programs already use.
double available_memory_bytes();

/// "1.5 GB", "320 MB", "12 kB": a size for messages.
std::string format_bytes(double bytes);

}  // namespace glass
