#pragma once
// Direct logit attribution (Elhage et al. 2021, "A Mathematical Framework for Transformer
// Circuits"; TransformerLens's decompose_resid and apply_ln_to_stack): the residual stream
// entering the final RMSNorm is a sum of parts,
//   x = embeddings + sum_L sum_h head_{L,h} + sum_L mlp_L,
// with head_{L,h} = mix_{L,h} W_O[:, h*head_dim .. (h+1)*head_dim)^T, head h's output through its
// slice of W_O. With the norm's scale r = 1 / sqrt(mean(x^2) + eps) frozen at the real run's
// value, the logit of a token is linear in x:
//   logit[target] = sum_i W_U[target, i] g_i r x_i,
// so each part's direct effect is part . u with u = W_U[target] * g * r, and the parts sum to
// the logit. With a second token `other`, u = (W_U[target] - W_U[other]) * g * r and the parts
// sum to the logit difference logit[target] - logit[other]. A model that soft-caps its logits
// (cap * tanh(z / cap), Gemma 2) is linear in z: the parts sum to z, the logit before the cap.
//
// Shapes: T prompt tokens, d = d_model, V = vocab_size, L = n_layers, H = n_heads.

#include <cstdint>
#include <optional>

#include "interp/run.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

/// The direct effect of every part of the residual stream on one logit (or logit difference).
struct LogitAttribution {
  std::size_t position = 0;           ///< the position read (0 .. T-1)
  std::int32_t target = 0;            ///< the token whose logit is split
  std::optional<std::int32_t> other;  ///< when given, the parts split logit[target] - logit[other]
  double logit = 0;       ///< the model's logit[target] (minus logit[other]) at the position;
                          ///< with soft-capping, the logits before the cap (see `capped`)
  bool capped = false;    ///< the model soft-caps its logits, cap * tanh(z / cap): the parts
                          ///< split z = cap * atanh(logit / cap), the logit before the cap
  double scale = 0;       ///< r = 1 / sqrt(mean(x^2) + eps) of the final norm, frozen
  double embeddings = 0;  ///< the token embedding's part
  Array heads;            ///< (L, H) each head's part
  Array mlps;             ///< (L) each MLP's part
  /// The sum of the parts (= logit up to rounding), in double.
  double total() const;
};

/// The direct effect of parts (P, d) through the final RMSNorm with its scale frozen:
/// parts . (unembed * gain * scale), (P). The formula of logit_attribution on its own, for tests
/// and for other readers of the residual stream. std::invalid_argument on a shape mismatch.
Array direct_effects(const Array& parts, const Array& unembed, const Array& gain, double scale);

/// The scale r = 1 / sqrt(mean(x^2) + eps) of RMSNorm for one stream vector x (d).
double rms_scale(const Array& x, double eps);

/// Splits logit[target] (minus logit[other] when given) at `position` of `tokens`, default the
/// last position, into the direct effects of the embeddings, each head and each MLP. One forward
/// pass on the reference path (hook points "embeddings", "layers.L.attn.mix",
/// "layers.L.feed_forward.out"). Without `target`, the model's most probable next token there.
/// std::invalid_argument for an empty prompt, a position >= T or a token outside [0, V).
LogitAttribution logit_attribution(const Decoder& model, const Tokens& tokens,
                                   std::optional<std::size_t> position = std::nullopt,
                                   std::optional<std::int32_t> target = std::nullopt,
                                   std::optional<std::int32_t> other = std::nullopt);

}  // namespace GLASS_PRECISION
}  // namespace glass
