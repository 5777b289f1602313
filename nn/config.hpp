#pragma once
// ModelConfig: every size of the decoder, and which attention code runs it.

#include <cstddef>
#include <string>

namespace glass {

/// Sizes and constants of the LLaMA-style decoder. The defaults give the project's model:
/// 742,784 parameters with a 65-character vocabulary.
struct ModelConfig {
  std::size_t vocab_size = 65;        ///< number of token ids (set from the tokenizer; id 0 = unknown)
  std::size_t d_model = 128;          ///< width of the residual stream
  std::size_t n_layers = 4;           ///< number of decoder blocks
  std::size_t n_heads = 4;            ///< query heads; head_dim = d_model / n_heads
  std::size_t n_kv_heads = 2;         ///< key/value heads (GQA); query head h uses KV head h / (n_heads / n_kv_heads)
  std::size_t ffn_hidden = 344;       ///< SwiGLU hidden width (LLaMA rule for d_model 128, multiple of 8)
  std::size_t context_length = 256;   ///< longest sequence (RoPE table and KV cache size)
  std::size_t vocab_cap = 1024;       ///< most characters a tokenizer may keep (most frequent first)
  double rope_base = 10000.0;         ///< RoPE theta: pair i turns by pos * base^(-2i/head_dim)
  double norm_eps = 1e-5;             ///< RMSNorm epsilon
  double init_std = 0.02;             ///< N(0, init_std) init; wo and w2 use init_std / sqrt(2 n_layers)
  /// Which code computes the model (like nanoGPT's `flash` switch): "reference" = the nine
  /// attention steps on the primitive ops (matmul, masked_fill, softmax, repeat_kv;
  /// Attention::forward_reference) and the reference linear, rms_norm, rope, reshape and add;
  /// "fast" = the fused kernels of autograd/kernels/ and their fast_* ops (the same
  /// numbers to rounding, proven by tests/nn/attention_paths_f64_test.cpp and
  /// tests/train/attention_paths_test.cpp). Not a size: it changes no weight. A tracer always runs the reference path (its snapshots are those steps).
  std::string attention = "fast";

  std::size_t head_dim() const { return d_model / n_heads; }
  /// Throws std::invalid_argument saying what is wrong: a zero size, d_model != n_heads * head_dim,
  /// n_heads not a multiple of n_kv_heads, an odd head_dim (RoPE needs pairs), eps <= 0,
  /// attention neither "reference" nor "fast", ...
  void validate() const;
};

}  // namespace glass
