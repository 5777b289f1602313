#include "nn/config.hpp"

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace glass {

namespace {

void require(bool ok, const std::string& why) {
  if (!ok) throw std::invalid_argument("ModelConfig: " + why);
}

/// The rule `rule` between `field` and `other_field`; the error names both with their values.
void require(bool ok, SizeRule rule, const char* field, std::size_t value, const char* other_field,
             std::size_t other_value, const std::string& why) {
  if (!ok)
    throw ModelConfigError(rule, field, value, other_field, other_value, "ModelConfig: " + why);
}

void require_positive(std::size_t value, const char* field) {
  require(value > 0, std::string(field) + " must be at least 1 (got 0)");
}

}  // namespace

ModelConfigError::ModelConfigError(SizeRule rule, std::string field, std::size_t value,
                                   std::string other_field, std::size_t other_value,
                                   const std::string& what)
    : std::invalid_argument(what),
      rule_(rule),
      field_(std::move(field)),
      value_(value),
      other_field_(std::move(other_field)),
      other_value_(other_value) {}

std::string to_string(OpsPath path) { return path == OpsPath::fast ? "fast" : "reference"; }

OpsPath parse_ops_path(const std::string& text) {
  if (text == "reference") return OpsPath::reference;
  if (text == "fast") return OpsPath::fast;
  throw std::invalid_argument("the ops path must be \"reference\" or \"fast\" (got \"" + text +
                              "\")");
}

std::string to_string(Mlp mlp) { return mlp == Mlp::relu2 ? "relu2" : "swiglu"; }

Mlp parse_mlp(const std::string& text) {
  if (text == "swiglu") return Mlp::swiglu;
  if (text == "relu2") return Mlp::relu2;
  throw std::invalid_argument("the MLP must be \"swiglu\" or \"relu2\" (got \"" + text + "\")");
}

std::vector<std::string> recipe_options_in_use(const ModelConfig& config) {
  std::vector<std::string> used;
  if (config.qk_norm) used.push_back("QK-norm (config.json \"qk_norm\": true)");
  if (config.mlp == Mlp::relu2) used.push_back("the ReLU² MLP (config.json \"mlp\": \"relu2\")");
  if (config.logit_softcap > 0) {
    std::ostringstream c;  // 30, 15.5: the shortest form, as config.json writes it
    c << config.logit_softcap;
    used.push_back("logit soft-capping (config.json \"logit_softcap\": " + c.str() + ")");
  }
  return used;
}

void ModelConfig::validate() const {
  // Zero sizes first: every other rule divides by one of these.
  require_positive(vocab_size, "vocab_size");
  require_positive(d_model, "d_model");
  require_positive(n_layers, "n_layers");
  require_positive(n_heads, "n_heads");
  require_positive(n_kv_heads, "n_kv_heads");
  require_positive(ffn_hidden, "ffn_hidden");
  require_positive(context_length, "context_length");
  require_positive(vocab_cap, "vocab_cap");

  require(vocab_size <= vocab_cap, "vocab_size " + std::to_string(vocab_size) +
                                       " exceeds vocab_cap " + std::to_string(vocab_cap) +
                                       " (the tokenizer keeps at most vocab_cap characters)");

  // The heads split the residual stream: d_model = n_heads * head_dim.
  require(d_model % n_heads == 0, SizeRule::heads_divide_d_model, "d_model", d_model, "n_heads",
          n_heads,
          "d_model " + std::to_string(d_model) + " is not n_heads * head_dim: " +
              std::to_string(n_heads) + " heads do not divide it evenly");

  // GQA: every KV head serves the same number of query heads.
  require(n_heads % n_kv_heads == 0, SizeRule::kv_heads_divide_heads, "n_heads", n_heads,
          "n_kv_heads", n_kv_heads,
          "n_heads " + std::to_string(n_heads) + " is not a multiple of n_kv_heads " +
              std::to_string(n_kv_heads) +
              " (each KV head must serve n_heads / n_kv_heads query heads)");

  // RoPE rotates pairs (x[2i], x[2i+1]).
  require(head_dim() % 2 == 0, SizeRule::even_head_dim, "d_model", d_model, "n_heads", n_heads,
          "head_dim = d_model / n_heads = " + std::to_string(head_dim()) +
              " is odd; RoPE rotates pairs of coordinates, so it must be even");

  require(std::isfinite(rope_base) && rope_base > 1.0,
          "rope_base must be a finite number > 1 (got " + std::to_string(rope_base) + ")");
  require(std::isfinite(norm_eps) && norm_eps > 0.0,
          "norm_eps must be a finite number > 0 (got " + std::to_string(norm_eps) + ")");
  require(std::isfinite(init_std) && init_std >= 0.0,
          "init_std must be a finite number >= 0 (got " + std::to_string(init_std) + ")");
  require(std::isfinite(logit_softcap) && logit_softcap >= 0.0,
          "logit_softcap must be a finite number >= 0, 0 = off (got " +
              std::to_string(logit_softcap) + ")");
}

}  // namespace glass
