#pragma once
// ModelConfig: every size of the decoder, and which code computes it (OpsPath).

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace glass {

/// Which code computes the model (like nanoGPT's `flash` switch). It changes no weight.
/// - reference: the primitive ops of autograd/ops.hpp, as the math is written: the nine
///   attention steps (matmul, masked_fill, softmax, repeat_kv; Attention::forward_reference),
///   linear, rms_norm, rope, reshape, add, silu(gate) * up. What the inspector, `glass gradcheck`
///   and the tutorials run; a tracer always runs it (its snapshots are those steps).
/// - fast: the fused kernels of autograd/kernels/ (fast_linear, fast_rms_norm, fast_rope,
///   fast_reshape, fast_add, silu_mul, causal_attention, attend_to_cache): the same numbers to
///   rounding, proven kernel by kernel by tests/autograd/fast_kernels_f64_test.cpp and for the
///   whole model by tests/nn/attention_paths_f64_test.cpp and tests/train/attention_paths_test.cpp.
///   The default of `glass train` and `glass sample`.
enum class OpsPath { reference, fast };

/// "reference" or "fast": the names the --ops flags and config.json's "attention" field use (the
/// field keeps the name it had when the switch covered only the attention, so that every save
/// reads and writes alike).
std::string to_string(OpsPath path);
/// The OpsPath named `text` ("reference" or "fast"); throws std::invalid_argument naming the
/// value and the two choices otherwise.
OpsPath parse_ops_path(const std::string& text);

/// The feed-forward of each block (ModelConfig::mlp).
/// - swiglu: w2(silu(w1 x) * w3 x), LLaMA's (Shazeer 2020); 3 * d_model * ffn_hidden weights.
/// - relu2: w2(relu(w3 x)^2), no gate matrix (So et al. 2021, "Primer"; modded-nanogpt and
///   nanochat); 2 * d_model * ffn_hidden weights, so ffn_hidden = 4 d_model matches SwiGLU's
///   8/3 d_model.
enum class Mlp { swiglu, relu2 };

/// "swiglu" or "relu2": the names of --mlp and config.json's "mlp".
std::string to_string(Mlp mlp);
/// The Mlp named `text`; throws std::invalid_argument naming the value and the two choices.
Mlp parse_mlp(const std::string& text);

/// Sizes and constants of the LLaMA-style decoder. The defaults give the project's model:
/// 742,784 parameters with a 65-character vocabulary.
struct ModelConfig {
  std::size_t vocab_size = 65;  ///< number of token ids (set from the tokenizer; id 0 = unknown)
  std::size_t d_model = 128;    ///< width of the residual stream
  std::size_t n_layers = 4;     ///< number of decoder blocks
  std::size_t n_heads = 4;      ///< query heads; head_dim = d_model / n_heads
  std::size_t n_kv_heads =
      2;  ///< key/value heads (GQA); query head h uses KV head h / (n_heads / n_kv_heads)
  std::size_t ffn_hidden =
      344;  ///< SwiGLU hidden width (LLaMA rule for d_model 128, multiple of 8)
  std::size_t context_length = 256;  ///< longest sequence (RoPE table and KV cache size)
  std::size_t vocab_cap = 1024;      ///< most characters a tokenizer may keep (most frequent first)
  double rope_base = 10000.0;        ///< RoPE theta: pair i turns by pos * base^(-2i/head_dim)
  double norm_eps = 1e-5;            ///< RMSNorm epsilon
  double init_std = 0.02;  ///< N(0, init_std) init; wo and w2 use init_std / sqrt(2 n_layers)
  /// Which code computes the model (see OpsPath); saved as config.json's "attention".
  OpsPath ops_path = OpsPath::fast;

  // Recipe options (modded-nanogpt, nanochat). Off by default: llama.cpp's `llama` architecture
  // and llama2.c's run.c compute none of them, so the exporters refuse a model that uses one
  // (recipe_options_in_use). config.json holds each only when it is on.
  /// QK-norm: each head's q and k divided by its RMS (parameter-free RMSNorm over head_dim)
  /// after the projections and before RoPE (nn/attention.cpp, step 1b).
  bool qk_norm = false;
  Mlp mlp = Mlp::swiglu;  ///< the feed-forward (see Mlp)
  /// Logit soft-capping (Gemma 2): logits <- c tanh(logits / c), so |logits| < c; 0 = off.
  double logit_softcap = 0.0;

  std::size_t head_dim() const { return d_model / n_heads; }
  /// Throws std::invalid_argument saying what is wrong: a zero size, d_model != n_heads * head_dim,
  /// n_heads not a multiple of n_kv_heads, an odd head_dim (RoPE needs pairs), eps <= 0, ...
  /// The rules between two sizes throw its subclass ModelConfigError.
  void validate() const;
};

/// The recipe options `config` uses that llama.cpp's `llama` architecture and llama2.c's run.c do
/// not compute, each as "<name> (config.json \"<field>\": <value>)", e.g.
/// "QK-norm (config.json \"qk_norm\": true)"; empty for a LLaMA-style model.
std::vector<std::string> recipe_options_in_use(const ModelConfig& config);

/// Which rule between two sizes of a ModelConfig failed.
enum class SizeRule {
  heads_divide_d_model,   ///< d_model % n_heads != 0 (head_dim = d_model / n_heads)
  kv_heads_divide_heads,  ///< n_heads % n_kv_heads != 0 (GQA groups)
  even_head_dim,          ///< d_model / n_heads is odd (RoPE rotates pairs)
};

/// ModelConfig::validate's error for two sizes that do not fit together, as facts: the rule, the
/// two fields as ModelConfig spells them ("d_model", "n_heads") and their values. Front ends
/// name the fields in their own words (glass train: --d-model, --n-heads); what() reads
/// "ModelConfig: d_model 130 is not n_heads * head_dim: ...".
class ModelConfigError : public std::invalid_argument {
 public:
  ModelConfigError(SizeRule rule, std::string field, std::size_t value, std::string other_field,
                   std::size_t other_value, const std::string& what);
  SizeRule rule() const { return rule_; }
  const std::string& field() const { return field_; }  ///< "d_model" or "n_heads"
  std::size_t value() const { return value_; }
  const std::string& other_field() const { return other_field_; }  ///< "n_heads" or "n_kv_heads"
  std::size_t other_value() const { return other_value_; }

 private:
  SizeRule rule_;
  std::string field_;
  std::size_t value_;
  std::string other_field_;
  std::size_t other_value_;
};

}  // namespace glass
