// Training and measuring a TopK sparse autoencoder on a model's residual stream (see
// sae_trainer.hpp).

#include "train/sae_trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <ostream>
#include <random>
#include <stdexcept>

#include <fmt/format.h>
#include <xtensor/xview.hpp>

#include "autograd/kernels/kernels.hpp"
#include "autograd/ops.hpp"
#include "autograd/tape.hpp"
#include "data/batches.hpp"
#include "interp/run.hpp"
#include "nn/tracer.hpp"
#include "train/adamw.hpp"
#include "train/text_loss.hpp"

namespace glass {

namespace {

/// Streams activations (see sae_trainer.hpp): a shuffled buffer of rows, half of it refilled
/// from fresh random windows every `reuse`-th time that half has been read (reshuffled else).
class ActivationBuffer {
 public:
  ActivationBuffer(const Decoder& model, std::shared_ptr<const TokenIds> ids, std::size_t n_train,
                   std::size_t window, std::size_t point, std::size_t capacity, std::size_t reuse,
                   std::uint64_t seed)
      : model_(model),
        point_(point),
        sampler_(std::move(ids), 0, n_train, 1, window, seed),
        window_(window),
        rows_(Array::from_shape({capacity, model.config().d_model})),
        order_(capacity),
        engine_(seed + 1),
        reuse_(reuse) {
    std::iota(order_.begin(), order_.end(), 0);
    fill(0, capacity);
    std::shuffle(order_.begin(), order_.end(), engine_);
  }

  /// The next `n` rows (n <= half the capacity) as (n, d_model).
  Array next(std::size_t n) {
    const std::size_t half = order_.size() / 2;
    if (read_ + n > half) {  // the read half is used up: refill those rows, shuffle again
      if (++used_up_ % reuse_ == 0)
        for (std::size_t i = 0; i < read_; i += window_) fill_rows(i, std::min(window_, read_ - i));
      std::shuffle(order_.begin(), order_.end(), engine_);
      read_ = 0;
    }
    const std::size_t D = rows_.shape(1);
    Array batch = Array::from_shape({n, D});
    for (std::size_t r = 0; r < n; ++r)
      std::copy_n(rows_.data() + order_[read_ + r] * D, D, batch.data() + r * D);
    read_ += n;
    return batch;
  }

 private:
  /// Rows order_[first .. first + n) get the activations of one fresh window (n <= window).
  void fill_rows(std::size_t first, std::size_t n) {
    IdArray x, y;
    sampler_.next(x, y);
    const Array a = activations_at(model_, x, point_);  // (window, D)
    const std::size_t D = rows_.shape(1);
    for (std::size_t r = 0; r < n; ++r)
      std::copy_n(a.data() + r * D, D, rows_.data() + order_[first + r] * D);
  }
  void fill(std::size_t first, std::size_t n) {
    for (std::size_t i = first; i < first + n; i += window_)
      fill_rows(i, std::min(window_, first + n - i));
  }

  const Decoder& model_;
  std::size_t point_;
  BatchSampler sampler_;
  std::size_t window_;
  Array rows_;                      // (capacity, D)
  std::vector<std::size_t> order_;  // a permutation of the rows; [0, read_) already read
  std::size_t read_ = 0;
  std::mt19937_64 engine_;
  std::size_t reuse_;        // the read half is refilled every reuse_-th time it is used up
  std::size_t used_up_ = 0;  // times the read half was used up
};

/// The options' sizes checked against the model; std::invalid_argument naming the flag's value.
void check_options(const Decoder& model, const SaeTrainOptions& o) {
  sae_point_index(model, o.point);
  if (o.k == 0 || o.k >= o.n_latents)
    throw std::invalid_argument(fmt::format(
        "k = {} must be at least 1 and less than the number of latents ({})", o.k, o.n_latents));
  if (o.steps == 0 || o.batch_tokens == 0 || o.reuse == 0)
    throw std::invalid_argument("the steps, the batch and the reuse must be at least 1");
  if (o.buffer_tokens < 2 * o.batch_tokens)
    throw std::invalid_argument(fmt::format("the buffer ({} tokens) must hold two batches ({})",
                                            o.buffer_tokens, o.batch_tokens));
}

/// The learning rate at `step` (0-based): o.lr, then a linear decay to 0 over the last 20%.
double sae_lr(const SaeTrainOptions& o, std::size_t step) {
  const double decay_from = 0.8 * static_cast<double>(o.steps);
  if (step < decay_from) return o.lr;
  return o.lr * (static_cast<double>(o.steps) - step) / (static_cast<double>(o.steps) - decay_from);
}

/// The two losses of one step on activations x (N, D): the FVU of the reconstruction and AuxK
/// (interp/sae.hpp). `fired[i]` is set for every latent active on some row.
struct StepLosses {
  Tensor fvu, aux;
};

/// The reference step: the SAE's forward pass and auxk_loss as interp/sae.hpp writes them.
StepLosses reference_step(const SparseAutoencoder& sae, const Array& x,
                          const std::vector<bool>& dead, std::size_t k_aux,
                          std::vector<bool>& fired) {
  const Tensor pre = sae.pre_activations(Tensor(x));
  const Tensor z = topk_relu(pre, sae.k());
  const Tensor x_hat = sae.decode(z);
  const Scalar* zs = z.value().data();
  for (std::size_t j = 0; j < z.size(); ++j)
    if (zs[j] > 0) fired[j % sae.n_latents()] = true;
  return {normalized_mse(x_hat, x), auxk_loss(sae, pre, Array(x - x_hat.value()), dead, k_aux)};
}

/// The fast step: the same losses with the sparse decoder topk_decode (autograd/kernels/), which
/// multiplies only the active latents, in place of matmul(topk_relu(pre, k), W_dec), for the
/// reconstruction and for AuxK's.
StepLosses fast_step(const SparseAutoencoder& sae, const Array& x, const std::vector<bool>& dead,
                     std::size_t k_aux, std::vector<bool>& fired) {
  const Tensor pre = sae.pre_activations(Tensor(x));
  std::vector<std::uint32_t> active;
  const Tensor x_hat = topk_decode(pre, sae.k(), sae.W_dec, &active) + sae.b_pre;
  for (const std::uint32_t j : active) fired[j] = true;
  StepLosses loss{normalized_mse(x_hat, x), Tensor::zeros({})};
  Mask alive = Mask::from_shape({1, sae.n_latents()});
  std::size_t n_dead = 0;
  for (std::size_t i = 0; i < sae.n_latents(); ++i) {
    alive(0, i) = !dead[i];
    n_dead += dead[i] ? 1 : 0;
  }
  if (n_dead == 0 || k_aux == 0) return loss;
  const Scalar inf = std::numeric_limits<Scalar>::infinity();
  const Tensor e_hat =
      topk_decode(masked_fill(pre, alive, -inf), std::min(k_aux, n_dead), sae.W_dec);
  loss.aux = normalized_mse(e_hat, Array(x - x_hat.value()));
  return loss;
}

StepLosses step_losses(const SparseAutoencoder& sae, const Array& x, const std::vector<bool>& dead,
                       std::size_t k_aux, OpsPath ops, std::vector<bool>& fired) {
  return ops == OpsPath::fast ? fast_step(sae, x, dead, k_aux, fired)
                              : reference_step(sae, x, dead, k_aux, fired);
}

}  // namespace

std::vector<std::string> sae_points(const Decoder& model) { return residual_points(model); }

std::size_t sae_point_index(const Decoder& model, const std::string& point) {
  const std::vector<std::string> points = sae_points(model);
  const auto it = std::find(points.begin(), points.end(), point);
  if (it != points.end()) return static_cast<std::size_t>(it - points.begin());
  std::string valid;
  for (const std::string& p : points) valid += (valid.empty() ? "" : ", ") + p;
  throw std::invalid_argument(fmt::format(
      "'{}' is not a residual-stream point of this model; valid points: {}", point, valid));
}

Array activations_at(const Decoder& model, const Ids& tokens, std::size_t point) {
  NoGradGuard no_grad;
  // The forward pass of Decoder::forward up to the hook point, and no further.
  Tensor x = model.tok_embeddings.forward(tokens);  // (B, T, D)
  for (std::size_t i = 0; i < point; ++i) x = model.layers[i]->forward(x);
  Array a = x.value();
  a.reshape({tokens.size(), model.config().d_model});
  return a;
}

SaeTrainResult train_sae(const Checkpoint& loaded, std::shared_ptr<const TokenIds> ids,
                         std::size_t n_train, const SaeTrainOptions& o, std::ostream& log) {
  const Decoder& model = loaded.model();
  check_options(model, o);
  const std::size_t point = sae_point_index(model, o.point), D = model.config().d_model;
  const std::size_t window = loaded.window();
  if (n_train < window + 1 || ids->size() < n_train + 2)
    throw std::invalid_argument("the text is too short for one window of training and validation");
  ActivationBuffer buffer(model, ids, n_train, window, point, o.buffer_tokens, o.reuse, o.seed);

  SaeTrainResult result;
  Rng rng(o.seed);
  result.sae = std::make_unique<SparseAutoencoder>(D, o.n_latents, o.k, rng);
  SparseAutoencoder& sae = *result.sae;
  sae.b_pre.value() = geometric_median(buffer.next(o.batch_tokens));
  AdamWConfig adam;
  adam.beta2 = 0.999;  // Gao et al.
  adam.weight_decay = 0;
  AdamW optimizer(sae.named_parameters(), adam);
  const std::size_t k_aux = o.k_aux > 0 ? o.k_aux : std::max<std::size_t>(1, D / 2);
  std::vector<std::size_t> since_fired(o.n_latents, 0);  // tokens since each latent last fired
  std::vector<bool> dead(o.n_latents, false);

  const auto start = std::chrono::steady_clock::now();
  for (std::size_t step = 0; step < o.steps; ++step) {
    const Array x = buffer.next(o.batch_tokens);  // (N, D)
    std::vector<bool> fired(o.n_latents, false);  // which latents fired in this batch
    const StepLosses loss = step_losses(sae, x, dead, k_aux, o.ops, fired);
    optimizer.zero_grad();
    (loss.fvu + loss.aux * static_cast<Scalar>(o.aux_coef)).backward();
    sae.project_decoder_grad();
    optimizer.step(sae_lr(o, step));
    sae.normalize_decoder();

    std::size_t n_dead = 0;
    for (std::size_t i = 0; i < o.n_latents; ++i) {
      since_fired[i] = fired[i] ? 0 : since_fired[i] + o.batch_tokens;
      dead[i] = since_fired[i] >= o.dead_after;
      n_dead += dead[i] ? 1 : 0;
    }
    result.metrics.dead = n_dead;
    if (o.log_every > 0 && ((step + 1) % o.log_every == 0 || step + 1 == o.steps)) {
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      log << fmt::format(
                 "step {:5}/{} | fvu {:.4f} | auxk {:.4f} | dead {} | lr {:.2e} | {:.0f} s\n",
                 step + 1, o.steps, loss.fvu.item(), loss.aux.item(), n_dead, sae_lr(o, step),
                 seconds)
          << std::flush;
    }
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.tokens_seen = o.steps * o.batch_tokens;
  const std::size_t dead_count = result.metrics.dead;
  result.metrics = evaluate_sae(loaded, sae, o.point, *ids, n_train, ids->size());
  result.metrics.dead = dead_count;
  return result;
}

SaeMetrics evaluate_sae(const Checkpoint& loaded, const SparseAutoencoder& sae,
                        const std::string& point, const TokenIds& ids, std::size_t begin,
                        std::size_t end) {
  const Decoder& model = loaded.model();
  sae_point_index(model, point);  // a bad point: std::invalid_argument listing the valid ones
  const std::size_t D = model.config().d_model;
  if (sae.d_model() != D)
    throw std::invalid_argument(
        fmt::format("the SAE reads d_model {}, the model has {}", sae.d_model(), D));
  NoGradGuard no_grad;
  double err2 = 0, x2 = 0, rows = 0, active = 0;
  Array x_sum = xt::zeros<Scalar>({D});
  std::vector<bool> fired(sae.n_latents(), false);
  // The splice: a hook at the point swaps the activation for its reconstruction, and measures it.
  Tracer tracer;
  tracer.set_recording(false);
  tracer.add_hook(point, [&](const std::string&, Array& value) {
    const Shape shape(value.shape().begin(), value.shape().end());
    Array x = value;
    x.reshape({x.size() / D, D});
    const Array z = sae.encode(Tensor(x)).value();
    Array x_hat = sae.decode(Tensor(z)).value();
    err2 += xt::sum(xt::square(x_hat - x))();
    x2 += xt::sum(xt::square(x))();
    x_sum += xt::sum(x, {0});
    rows += static_cast<double>(x.shape(0));
    const Scalar* zs = z.data();
    for (std::size_t j = 0; j < z.size(); ++j)
      if (zs[j] > 0) {
        fired[j % z.shape(1)] = true;
        active += 1;
      }
    x_hat.reshape(shape);
    value = std::move(x_hat);
  });
  constexpr std::size_t kBatch = 16;
  SaeMetrics m;
  const std::size_t T = loaded.window();
  m.clean_loss =
      text_loss(ids, begin, end, T, kBatch, [&](const Ids& x, const Ids& y, std::size_t) {
        return static_cast<double>(cross_entropy(model.forward(x), y).item());
      }).mean();
  const TextLoss spliced =
      text_loss(ids, begin, end, T, kBatch, [&](const Ids& x, const Ids& y, std::size_t) {
        return static_cast<double>(cross_entropy(model.forward(x, nullptr, &tracer), y).item());
      });
  m.spliced_loss = spliced.mean();
  m.tokens = static_cast<std::size_t>(rows);
  // sum |x - mean|^2 = sum |x|^2 - N |mean|^2
  const double variance = x2 - xt::sum(xt::square(x_sum))() / std::max(rows, 1.0);
  m.fvu = variance > 0 ? err2 / variance : 0;
  m.l0 = rows > 0 ? active / rows : 0;
  m.silent = static_cast<std::size_t>(std::count(fired.begin(), fired.end(), false));
  return m;
}

}  // namespace glass
