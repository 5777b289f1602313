#pragma once
// Head ablation: knock out attention heads and measure what the model loses. A head is ablated
// at its output before W_O (the hook point "layers.L.attn.mix", (B, n_heads, n, head_dim)), so
// its contribution to the residual stream, W_O's columns h*head_dim .. (h+1)*head_dim-1 times
// that output, is replaced.
//   zero ablation: the head's output becomes 0, which is exactly the model with those columns
//     of W_O zeroed (Michel, Levy & Neubig 2019, "Are Sixteen Heads Really Better than One?",
//     mask the head);
//   mean ablation: the head's output becomes its mean over a reference batch, over every batch
//     element and every position (one vector per head, the same at every position): the head
//     keeps its average contribution and loses only what depends on the input (Wang et al.
//     2022, "Interpretability in the Wild", section 3, mean ablation over a reference
//     distribution).

#include <vector>

#include "interp/run.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

enum class AblationMode { zero, mean };

/// Each head's mean output before W_O over a reference batch: means[L] is (n_heads, head_dim),
/// the mean of "layers.L.attn.mix" over the B batch elements and T positions of `reference`
/// (B, T).
using HeadMeans = std::vector<Array>;

/// head_means of `reference` (B, T) token ids. std::invalid_argument as Decoder::forward.
HeadMeans head_means(const Decoder& model, const Ids& reference);

/// Adds to `tracer` the hooks that ablate `heads` (zero, or mean with `means` from
/// head_means; std::invalid_argument when means is missing or has the wrong shape, or a head
/// does not exist). The hooks act on every batch element and position.
void add_ablation_hooks(Tracer& tracer, const Decoder& model, const std::vector<HeadRef>& heads,
                        AblationMode mode, const HeadMeans* means = nullptr);

/// Logits (B, T, vocab_size) of `tokens` (B, T) with `heads` ablated (no heads: the plain
/// model on the reference path).
Array ablated_logits(const Decoder& model, const Ids& tokens, const std::vector<HeadRef>& heads,
                     AblationMode mode, const HeadMeans* means = nullptr);

/// Mean cross-entropy (nats per token) of next-token prediction: `inputs` (B, T) predicting
/// `targets` (B, T), with `heads` ablated.
double ablated_loss(const Decoder& model, const Ids& inputs, const Ids& targets,
                    const std::vector<HeadRef>& heads, AblationMode mode,
                    const HeadMeans* means = nullptr);

/// The loss change of ablating each head alone.
struct AblationTable {
  double base_loss = 0;  ///< nats per token, no head ablated
  Array delta_loss;      ///< (n_layers, n_heads): ablated_loss({L, h}) - base_loss, in nats
};

/// Which heads one process measures when several share a table (data-parallel training: each
/// rank a share, then the shares summed). Head (L, h) belongs to part (L * n_heads + h) % parts.
struct HeadShare {
  std::size_t part = 0;   ///< 0 .. parts-1 (the rank)
  std::size_t parts = 1;  ///< how many processes share the table (the number of ranks)
};

/// ablated_loss of every single head on a validation batch `inputs`/`targets` (B, T), minus
/// the unablated loss. Costs n_layers * n_heads + 1 forward passes. With a `share`, only the
/// heads of that part are measured and the others' entries are 0 (n_layers * n_heads / parts
/// + 1 passes): on the same weights, the sum of every part's table is the whole table, bit for
/// bit (x + 0 = x). std::invalid_argument when share.part >= share.parts.
AblationTable ablation_table(const Decoder& model, const Ids& inputs, const Ids& targets,
                             AblationMode mode, const HeadMeans* means = nullptr,
                             HeadShare share = {});

/// The next-token distribution after a prompt, before and after ablating `heads`.
struct NextTokenShift {
  Array before;              ///< (vocab_size) probabilities at the last position, plain model
  Array after;               ///< (vocab_size) the same with the heads ablated
  double kl_divergence = 0;  ///< KL(before || after) = sum p log(p / q), in nats
};

/// NextTokenShift of `prompt` (T >= 1 ids).
NextTokenShift next_token_shift(const Decoder& model, const Tokens& prompt,
                                const std::vector<HeadRef>& heads, AblationMode mode,
                                const HeadMeans* means = nullptr);

}  // namespace GLASS_PRECISION
}  // namespace glass
