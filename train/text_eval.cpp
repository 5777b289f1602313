// The mean next-token loss of a saved model over a text file (see text_eval.hpp).

#include "train/text_eval.hpp"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "autograd/ops.hpp"
#include "autograd/tape.hpp"
#include "data/text.hpp"
#include "train/text_loss.hpp"
#include "train/trainer.hpp"

namespace glass {

TextEvaluation evaluate_text(const Checkpoint& loaded, const std::string& path,
                             bool allow_unknown) {
  TextEvaluation r;
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
  const std::size_t T = r.window;
  constexpr std::size_t kBatch = 32;  // windows put through the model at a time
  NoGradGuard no_grad;
  const TextLoss measured =
      text_loss(ids, 0, ids.size(), T, kBatch, [&](const Ids& x, const Ids& y, std::size_t first) {
        const double mean = cross_entropy(loaded.model().forward(x), y).item();
        if (!std::isfinite(mean))  // a NaN average would print as a plausible-looking "loss -nan"
          throw std::runtime_error(fmt::format(
              "the loss over {} {} to {} of {} is {}: the model's logits are not finite, so "
              "its weights are corrupt or diverged",
              tokenizer.unit(), first + 1, first + (x.shape(0) - 1) * T + x.shape(1), path,
              std::isnan(mean) ? "NaN" : "infinite"));
        return mean;
      });
  r.predictions = measured.count;
  r.loss = measured.mean();
  // The first token, which nothing predicts, is counted in the bytes too.
  r.bits_per_byte = bits_per_byte(r.loss, r.predictions, r.text_bytes);
  return r;
}

}  // namespace glass
