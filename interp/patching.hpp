#pragma once
// Activation patching (Meng et al. 2022, "Locating and Editing Factual Associations in GPT",
// causal tracing; Wang et al. 2022, "Interpretability in the Wild"): run a clean and a corrupted
// prompt of the same length, copy one activation of the clean run into the corrupted run, and
// measure how much of the clean behaviour comes back. The behaviour is a logit difference at
// the last position, logit[a] - logit[b] (a = the clean answer, b = the corrupted one), and
//   recovered = (patched - corrupted) / (clean - corrupted):
// 0 = the patch changed nothing, 1 = it restored the clean difference.

#include <optional>
#include <string>
#include <vector>

#include "interp/run.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

/// Logits (T, vocab_size) of `corrupted` with the value at hook point `point` replaced by
/// `clean_value` (the clean run's snapshot at that point, batch removed: the point's shape
/// without B), at position `position` only (the position axis: axis 1 of the residual stream
/// (B, T, d_model), axis 2 of "attn.mix" (B, n_heads, T, head_dim)) or at every position when
/// none. With `head`, only that head of an "attn.mix" point is patched.
/// std::invalid_argument for a shape mismatch or a position/head out of range.
Array patched_logits(const Decoder& model, const Tokens& corrupted, const std::string& point,
                     const Array& clean_value, std::optional<std::size_t> position = std::nullopt,
                     std::optional<std::size_t> head = std::nullopt);

/// A patching sweep: the recovered fraction for each patched activation.
struct PatchingResult {
  std::int32_t answer = 0, other = 0;  ///< the logit difference is logit[answer] - logit[other]
  double clean_diff = 0;               ///< the difference on the clean prompt (last position)
  double corrupted_diff = 0;           ///< on the corrupted prompt
  std::vector<std::string> rows;       ///< what each row patches (hook points, or layers)
  Array patched_diff;                  ///< (rows, columns) the difference after the patch
  Array
      recovered;  ///< (rows, columns) (patched - corrupted) / (clean - corrupted); NaN when clean == corrupted
};

/// Patches the residual stream at every (point, position): rows = residual_points(model)
/// ("embeddings", "layers.L.out"), columns = the T positions. `clean` and `corrupted` have the
/// same length T >= 1; answer and other are token ids. std::invalid_argument otherwise.
PatchingResult patch_residual_stream(const Decoder& model, const Tokens& clean,
                                     const Tokens& corrupted, std::int32_t answer,
                                     std::int32_t other);

/// Patches each head's output before W_O ("layers.L.attn.mix", head h) at every position at
/// once: rows = the layers ("layers.L"), columns = the n_heads heads.
PatchingResult patch_head_outputs(const Decoder& model, const Tokens& clean,
                                  const Tokens& corrupted, std::int32_t answer, std::int32_t other);

}  // namespace GLASS_PRECISION
}  // namespace glass
