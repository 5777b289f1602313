// The mean next-token loss of a saved model over a text file (see text_loss.hpp).

#include "train/text_loss.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "autograd/ops.hpp"
#include "autograd/tape.hpp"
#include "data/text.hpp"
#include "train/trainer.hpp"

namespace glass {

namespace {

/// Windows of the text's ids put through the model kBatch at a time.
constexpr std::size_t kBatch = 32;

/// Adds the loss of `n_chunks` windows of `n` predictions starting at `first_start`, T apart.
void add_chunks(const Checkpoint& loaded, const TokenIds& ids, const std::string& path,
                std::size_t first_start, std::size_t n_chunks, std::size_t n, double& total,
                std::size_t& count) {
  const std::size_t T = loaded.window();
  Ids x = Ids::from_shape({n_chunks, n}), y = Ids::from_shape({n_chunks, n});
  for (std::size_t b = 0; b < n_chunks; ++b) {
    const std::size_t from = first_start + b * T;
    for (std::size_t t = 0; t < n; ++t) {
      x.data()[b * n + t] = ids[from + t];
      y.data()[b * n + t] = ids[from + t + 1];
    }
  }
  const double mean = cross_entropy(loaded.model().forward(x), y).item();
  if (!std::isfinite(mean))  // a NaN average would print as a plausible-looking "loss -nan"
    throw std::runtime_error(fmt::format(
        "the loss over {} {} to {} of {} is {}: the model's logits are not finite, so "
        "its weights are corrupt or diverged",
        loaded.tokenizer().unit(), first_start + 1, first_start + (n_chunks - 1) * T + n, path,
        std::isnan(mean) ? "NaN" : "infinite"));
  total += mean * static_cast<double>(n_chunks * n);
  count += n_chunks * n;
}

}  // namespace

TextLoss text_loss(const Checkpoint& loaded, const std::string& path, bool allow_unknown) {
  TextLoss r;
  std::u32string text = load_text(path);
  r.text_bytes = u32_to_utf8(text).size();
  const TextTokenizer& tokenizer = loaded.tokenizer();
  // When a character model's vocabulary is full (the text had more distinct characters than
  // vocab_cap), the rarest characters are the unknown token by design, not an error.
  const bool vocab_full = tokenizer.vocab_size() >= loaded.config().vocab_cap;
  const auto policy =
      allow_unknown || vocab_full ? UnknownPolicy::kMapToUnknownId : UnknownPolicy::kRefuse;
  const TokenIds ids = tokenizer.encode_compact(text, policy, &r.unknown);  // 1 or 2 bytes each
  text = std::u32string();  // only the ids are needed from here on
  if (ids.size() < 2)
    throw std::invalid_argument(
        fmt::format("{} must hold at least 2 {} to predict one", path, tokenizer.unit()));
  r.window = loaded.window();
  const std::size_t T = r.window, predictions = ids.size() - 1;
  NoGradGuard no_grad;
  double total = 0;  // sum of the per-token losses
  // Full windows kBatch at a time; a shorter last one alone.
  const std::size_t full_chunks = predictions / T;
  for (std::size_t c = 0; c < full_chunks; c += kBatch)
    add_chunks(loaded, ids, path, c * T, std::min(kBatch, full_chunks - c), T, total,
               r.predictions);
  if (predictions % T != 0)
    add_chunks(loaded, ids, path, full_chunks * T, 1, predictions % T, total, r.predictions);
  r.loss = total / static_cast<double>(r.predictions);
  // The first token, which nothing predicts, is counted in the bytes too.
  r.bits_per_byte = glass::bits_per_byte(r.loss, r.predictions, r.text_bytes);
  return r;
}

}  // namespace glass
