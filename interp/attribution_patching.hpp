#pragma once
// Attribution patching (Nanda 2023, "Attribution Patching: Activation Patching At Industrial
// Scale"; Kramár et al. 2024, "AtP*: An efficient and scalable method for localizing LLM
// behaviour to components"): the first-order estimate of activation patching (patching.hpp).
// Patching activation a from its corrupted value a' to its clean value a changes a metric m of
// the corrupted run by
//   m(a) - m(a') ≈ ∂m/∂a (a') · (a - a'),
// the gradient taken on the corrupted run. One backward pass gives ∂m/∂a for every activation at
// once (the tape's gradients at the watched hook points, nn/tracer.hpp), where exact patching
// needs one forward pass per activation. The estimate is exact when m is linear in a; it fails
// where the run is far from linear between a' and a: a saturated softmax (an attention pattern
// or the output distribution) has a gradient near 0 at a' and still moves once a is far enough.
//
// Shapes: T prompt tokens, L = n_layers, H = n_heads.

#include <cstdint>
#include <string>

#include "interp/run.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

/// What the patched run is measured by, at the last position of the prompt.
struct PatchMetric {
  enum class Kind {
    logit_diff,  ///< logit[answer] - logit[other]
    log_prob,    ///< log softmax(logits)[answer] (other unused)
  };
  Kind kind = Kind::logit_diff;
  std::int32_t answer = 0;
  std::int32_t other = 0;
};

/// The metric of logits (1, T, V) as a scalar tensor (on the tape when the logits are).
Tensor patch_metric(const Tensor& logits, const PatchMetric& metric);

/// "logit_diff" or "log_prob".
std::string to_string(PatchMetric::Kind kind);

/// The patching effects of every head output ("layers.L.attn.mix", head h, before W_O) and every
/// MLP output ("layers.L.feed_forward.out"): the change of the metric when the component's clean
/// activation replaces the corrupted one, at every position at once.
struct PatchingEffects {
  PatchMetric metric;
  double clean = 0;      ///< the metric on the clean prompt
  double corrupted = 0;  ///< on the corrupted prompt
  Array heads;           ///< (L, H) the change of the metric, patching the head
  Array mlps;            ///< (L) patching the MLP
};

/// The attribution estimate: PatchingEffects (each the sum over positions) and the same per
/// position, grad · (clean - corrupted).
struct AttributionPatching {
  PatchingEffects total;  ///< heads (L, H) and mlps (L), summed over the positions
  Array head_positions;   ///< (L, H, T) one position's estimate
  Array mlp_positions;    ///< (L, T)
};

/// The attribution estimate: one forward pass on the clean prompt (its activations), one
/// forward and one backward pass on the corrupted prompt (its activations and the gradient of the
/// metric with respect to each), with the parameters' requires_grad switched off meanwhile (their
/// gradients are left as they were; not thread-safe on a model another thread runs).
/// std::invalid_argument when the prompts are empty or of different lengths or a metric token
/// is outside [0, V).
AttributionPatching attribution_patching(const Decoder& model, const Tokens& clean,
                                         const Tokens& corrupted, const PatchMetric& metric);

/// Exact activation patching of the same components and metric (patched_logits, patching.hpp):
/// L * H + L forward passes, plus the two unpatched runs.
PatchingEffects exact_patching(const Decoder& model, const Tokens& clean, const Tokens& corrupted,
                               const PatchMetric& metric);

/// Spearman's rank correlation of a and b (same size n >= 2): the Pearson correlation of their
/// ranks, ties given their mean rank. NaN when either has no spread (all ranks equal).
/// std::invalid_argument for different sizes or n < 2.
double spearman(const Array& a, const Array& b);

}  // namespace GLASS_PRECISION
}  // namespace glass
