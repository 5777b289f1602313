#pragma once
// Training a TopK sparse autoencoder (interp/sae.hpp) on a model's residual stream at one hook
// point, with the project's tape and AdamW, and measuring it: FVU, L0, dead latents and the
// model's loss with the reconstruction spliced in at the point (`glass sae train`).
//
// Activations are streamed: a buffer of buffer_tokens activations of random training windows is
// shuffled and read batch_tokens at a time; when half of it has been read, that half is replaced
// by fresh activations every `reuse`-th time (reshuffled the other times; each activation is read
// about 2 x reuse times), so memory stays buffer_tokens x d_model floats however long the text.
// Computing activations (the model's blocks before the point) costs about as much as a fast SAE
// step: reuse trades that cost for fewer distinct windows.

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.hpp"
#include "data/token_ids.hpp"
#include "interp/sae.hpp"
#include "nn/config.hpp"

namespace glass {

/// What `glass sae train` trains and how. Defaults: the recipe that meets FVU <= 0.05 with 1,024
/// latents and k = 16 after layer 1 of the default model (bench/README.md).
struct SaeTrainOptions {
  std::string point = "layers.1.out";  ///< a residual-stream hook point (sae_points)
  std::size_t n_latents = 1024;        ///< F, the dictionary size
  std::size_t k = 16;                  ///< latents kept per activation (TopK)
  std::size_t steps = 3000;            ///< AdamW steps
  std::size_t batch_tokens = 4096;     ///< activations per step
  std::size_t buffer_tokens = 65536;   ///< activations held for shuffling
  std::size_t reuse = 4;               ///< the read half is refilled every reuse-th time
  double lr = 4e-4;                    ///< AdamW learning rate; linear decay to 0 over the last 20%
  std::size_t k_aux = 0;               ///< AuxK's k (0: d_model / 2, as Gao et al.)
  double aux_coef = 1.0 / 32;          ///< AuxK's weight alpha (Gao et al.)
  std::size_t dead_after = 1'000'000;  ///< a latent is dead after this many tokens without firing
  std::uint64_t seed = 1234;           ///< initial weights and windows
  std::size_t log_every = 250;         ///< steps between progress lines (0: none)
  /// Which code computes a step: fast multiplies only the active latents in the decoder and in
  /// AuxK (topk_decode, autograd/kernels/kernels.hpp); reference runs the SAE's ops as
  /// interp/sae.hpp writes them. The same numbers to rounding.
  OpsPath ops = OpsPath::fast;
};

/// A trained SAE's figures on the validation split (and the dead count from training).
struct SaeMetrics {
  double fvu = 0;           ///< sum |x - x_hat|^2 / sum |x - mean x|^2 over the split
  double l0 = 0;            ///< mean number of non-zero latents per token
  std::size_t dead = 0;     ///< latents without activation in the last dead_after training tokens
  std::size_t silent = 0;   ///< latents that never fire on the validation split
  double clean_loss = 0;    ///< the model's loss on the split, nats per token
  double spliced_loss = 0;  ///< the same with x_hat replacing x at the point
  std::size_t tokens = 0;   ///< validation tokens measured
};

/// What train_sae did.
struct SaeTrainResult {
  std::unique_ptr<SparseAutoencoder> sae;
  SaeMetrics metrics;
  std::size_t tokens_seen = 0;  ///< activations read in training (steps x batch_tokens)
  double seconds = 0;           ///< wall-clock time of the training steps (no evaluation)
};

/// The points an SAE can read: the residual stream's hook points (interp/run.hpp
/// residual_points), "embeddings" and "layers.L.out".
std::vector<std::string> sae_points(const Decoder& model);

/// Index of `point` in sae_points(model); std::invalid_argument listing the valid names else.
std::size_t sae_point_index(const Decoder& model, const std::string& point);

/// Activations at sae_points(model)[point] for windows `tokens` (B, T) -> (B * T, d_model),
/// under NoGradGuard, running only the blocks before the point (the value the hook point sees).
Array activations_at(const Decoder& model, const Ids& tokens, std::size_t point);

/// Trains an SAE on the activations of ids[0, n_train) at o.point and measures it on
/// ids[n_train, end) (evaluate_sae). Progress lines go to `log`. std::invalid_argument for a bad
/// point, k >= n_latents, zero sizes or a split shorter than one window.
SaeTrainResult train_sae(const Checkpoint& loaded, std::shared_ptr<const TokenIds> ids,
                         std::size_t n_train, const SaeTrainOptions& o, std::ostream& log);

/// FVU, L0, silent latents and the clean and spliced loss over ids[begin, end), in
/// non-overlapping windows of the model's window (every token after ids[begin] predicted once).
/// The splice runs through a Tracer hook at the point. `dead` is left 0.
SaeMetrics evaluate_sae(const Checkpoint& loaded, const SparseAutoencoder& sae,
                        const std::string& point, const TokenIds& ids, std::size_t begin,
                        std::size_t end);

}  // namespace glass
