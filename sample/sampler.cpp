#include "sample/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

#include "autograd/kernels/kernels.hpp"
#include "autograd/tape.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

std::string context_sentence(std::size_t window, const std::string& unit) {
  const std::string t = std::to_string(window);
  const std::string one = !unit.empty() && unit.back() == 's'
                              ? unit.substr(0, unit.size() - 1)
                              : unit;  // "characters" -> "character"
  return "the model's context is " + t + " " + unit +
         " (the windows it trained on); past them, "
         "generation rolls its window on: each new " +
         one + " sees the " + t + " before it";
}

void validate(const SamplingOptions& options) {
  if (!(options.temperature >= 0.0) || !std::isfinite(options.temperature))
    throw std::invalid_argument("temperature must be a finite number >= 0 (0 = greedy), got " +
                                std::to_string(options.temperature));
  if (!(options.top_p > 0.0 && options.top_p <= 1.0))
    throw std::invalid_argument("top-p must be in (0, 1], got " + std::to_string(options.top_p));
  if (!(options.repeat_penalty > 0.0) || !std::isfinite(options.repeat_penalty))
    throw std::invalid_argument(
        "the repetition penalty must be a finite number > 0 (1 = off), got " +
        std::to_string(options.repeat_penalty));
  if (!(options.min_p >= 0.0 && options.min_p <= 1.0))
    throw std::invalid_argument("min-p must be in [0, 1] (0 = off), got " +
                                std::to_string(options.min_p));
}

void repetition_penalty(std::vector<double>& logits, const std::vector<std::int32_t>& recent,
                        double penalty) {
  if (penalty == 1.0) return;
  std::vector<bool> seen(logits.size(), false);
  for (const std::int32_t id : recent) {
    if (id < 0 || static_cast<std::size_t>(id) >= logits.size() || seen[id]) continue;
    seen[id] = true;
    double& x = logits[id];
    x = x <= 0.0 ? x * penalty : x / penalty;  // dividing a negative logit would favour it
  }
}

void min_p_filter(std::vector<double>& probs, double min_p) {
  if (min_p <= 0.0) return;
  const double threshold = min_p * *std::max_element(probs.begin(), probs.end());
  double kept_mass = 0.0;
  for (double& p : probs) {
    if (p < threshold) p = 0.0;
    kept_mass += p;
  }
  for (double& p : probs) p /= kept_mass;
}

void top_k_filter(std::vector<double>& logits, std::size_t k) {
  if (k == 0 || k >= logits.size()) return;
  std::vector<double> sorted = logits;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<long>(k - 1), sorted.end(),
                   std::greater<double>());
  const double kth = sorted[k - 1];  // the k-th largest value
  for (double& x : logits)
    if (x < kth) x = -std::numeric_limits<double>::infinity();
}

void top_p_filter(std::vector<double>& probs, double p) {
  if (p >= 1.0) return;
  std::vector<std::size_t> order(probs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return probs[a] > probs[b]; });
  double cumulative = 0.0, kept_mass = 0.0;
  std::vector<bool> keep(probs.size(), false);
  for (std::size_t id : order) {
    if (cumulative >= p) break;  // the prefix already reached p
    keep[id] = true;
    cumulative += probs[id];
    kept_mass += probs[id];
  }
  for (std::size_t i = 0; i < probs.size(); ++i) probs[i] = keep[i] ? probs[i] / kept_mass : 0.0;
}

// The library's one fast row softmax (softmax_rows, autograd/kernels/kernels.hpp), in Scalar:
// the logits come out of the model in Scalar anyway, and a probability known to ~1e-7 relative
// draws the same tokens (uniform01 resolves 2^-53, and a token whose probability underflows in
// Scalar, below ~1e-38, would never be drawn in double either). The probabilities are handed
// back as doubles, so top-p's cumulative sums and draw() add them up in double.
std::vector<double> softmax_row(const std::vector<double>& logits) {
  Array row = Array::from_shape({logits.size()});
  std::copy(logits.begin(), logits.end(), row.begin());  // -inf stays -inf
  const Array probs = softmax_rows(row);
  return std::vector<double>(probs.begin(), probs.end());
}

std::vector<double> next_token_probs(const std::vector<double>& raw_logits,
                                     const SamplingOptions& options,
                                     const std::vector<std::int32_t>& text) {
  if (raw_logits.empty()) throw std::invalid_argument("next_token_probs: empty logits");
  std::vector<double> logits = raw_logits;
  if (options.repeat_penalty != 1.0) {
    const std::size_t recent = std::min(options.repeat_last_n, text.size());
    repetition_penalty(
        logits, std::vector<std::int32_t>(text.end() - static_cast<long>(recent), text.end()),
        options.repeat_penalty);
  }
  for (double x : logits)
    if (std::isnan(x) || x == std::numeric_limits<double>::infinity())
      throw std::runtime_error(
          "the model's logits are not finite (NaN or +inf): its weights are corrupt or diverged");
  if (options.temperature == 0.0) {  // greedy: all mass on the first largest logit
    std::vector<double> one_hot(logits.size(), 0.0);
    one_hot[static_cast<std::size_t>(std::max_element(logits.begin(), logits.end()) -
                                     logits.begin())] = 1.0;
    return one_hot;
  }
  // (logit - max) / T rather than logit / T: the same softmax, but a tiny temperature (1e-320)
  // cannot overflow to inf - inf = NaN; it tends to greedy, as it should.
  const double max = *std::max_element(logits.begin(), logits.end());
  if (max == -std::numeric_limits<double>::infinity())
    throw std::runtime_error("every logit is -inf: no token can be drawn");
  std::vector<double> scaled(logits.size());
  for (std::size_t i = 0; i < logits.size(); ++i) {
    const double shifted = logits[i] - max;  // <= 0; -inf stays -inf
    scaled[i] = shifted == 0.0 ? 0.0 : shifted / options.temperature;
  }
  top_k_filter(scaled, options.top_k);
  std::vector<double> probs = softmax_row(scaled);
  top_p_filter(probs, options.top_p);
  min_p_filter(probs, options.min_p);
  return probs;
}

std::vector<double> generation_probs(std::vector<double> logits, const SamplingOptions& options,
                                     const std::vector<std::int32_t>& text) {
  if (logits.size() > 1)
    logits[0] = -std::numeric_limits<double>::infinity();  // never the unknown id
  return next_token_probs(logits, options, text);
}

double uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * (1.0 / 9007199254740992.0);  // 2^-53
}

std::int32_t draw(const std::vector<double>& probs, std::mt19937_64& rng) {
  const double total = std::accumulate(probs.begin(), probs.end(), 0.0);
  const double u = uniform01(rng) * total;
  double cumulative = 0.0;
  std::int32_t last_nonzero = 0;
  for (std::size_t i = 0; i < probs.size(); ++i) {
    if (probs[i] <= 0.0) continue;
    cumulative += probs[i];
    last_nonzero = static_cast<std::int32_t>(i);
    if (u < cumulative) return last_nonzero;
  }
  return last_nonzero;  // rounding: u landed at the very end
}

const char* to_string(WindowMode mode) { return mode == WindowMode::rolling ? "rolling" : "exact"; }

WindowMode parse_window_mode(const std::string& name) {
  if (name == "rolling") return WindowMode::rolling;
  if (name == "exact") return WindowMode::exact;
  throw std::invalid_argument("the window mode must be 'rolling' or 'exact', got '" + name + "'");
}

namespace {

/// Logits of the last position of `logits` (1, n, V) as doubles.
std::vector<double> last_row(const Tensor& logits) {
  const Array& v = logits.value();
  const std::size_t n = v.shape()[1], vocab = v.shape()[2];
  const Scalar* row = v.data() + (n - 1) * vocab;
  return std::vector<double>(row, row + vocab);
}

/// (1, end - begin) ids from tokens[begin, end).
Ids to_ids(const std::vector<std::int32_t>& tokens, std::size_t begin, std::size_t end) {
  Ids ids = Ids::from_shape({1, end - begin});
  std::copy(tokens.begin() + static_cast<long>(begin), tokens.begin() + static_cast<long>(end),
            ids.data());
  return ids;
}

std::size_t checked_window(const Decoder& model, std::size_t window) {
  if (window == 0 || window > model.config().context_length)
    throw std::invalid_argument("generate: window must be in [1, context_length = " +
                                std::to_string(model.config().context_length) + "], got " +
                                std::to_string(window));
  return window;
}

}  // namespace

NextTokenLogits::NextTokenLogits(const Decoder& model, std::size_t window,
                                 const SamplingOptions& options, Tracer* tracer)
    : model_(model),
      window_(checked_window(model, window)),
      use_kv_cache_(options.use_kv_cache),
      window_mode_(options.window_mode),
      tracer_(tracer),
      cache_(model.config(), 1) {}

std::vector<double> NextTokenLogits::operator()(const std::vector<std::int32_t>& text) {
  const std::size_t len = text.size();
  if (len <= seen_)
    throw std::invalid_argument(
        "NextTokenLogits: the text must grow by at least one token per "
        "call (it had " +
        std::to_string(seen_) + ", now " + std::to_string(len) + ")");
  NoGradGuard no_grad;
  const std::size_t window_start = len > window_ ? len - window_ : 0;  // what a prediction sees
  if (seen_ == 0) cache_start_ = window_start;  // a long first text is cropped
  seen_ = len;
  if (!use_kv_cache_) return last_row(forward(to_ids(text, window_start, len), nullptr));

  if (window_mode_ == WindowMode::exact) {
    if (window_start != cache_start_) {  // the window slid: rebuild the cache for it
      cache_.clear();
      cache_start_ = window_start;
    }
    return last_row(forward(to_ids(text, cache_start_ + cache_.length(), len), &cache_));
  }

  // Rolling: tokens [cache_start_, fed) are cached; feed the rest. While they fit in the window
  // they go in one call; otherwise one at a time, each after the oldest position is dropped, so
  // that every token attends to exactly the last `window` positions (itself included).
  std::size_t fed = cache_start_ + cache_.length();
  if (cache_.length() + (len - fed) <= window_)
    return last_row(forward(to_ids(text, fed, len), &cache_));
  Tensor logits;
  for (; fed < len; ++fed) {
    if (cache_.length() == window_) {
      cache_.drop_oldest(1);
      ++cache_start_;
    }
    logits = forward(to_ids(text, fed, fed + 1), &cache_);
  }
  return last_row(logits);
}

Tensor NextTokenLogits::forward(const Ids& ids, KVCache* cache) {
  tokens_read_ += ids.size();
  return model_.forward(ids, cache, tracer_);
}

std::vector<std::int32_t> generate(const Decoder& model, std::vector<std::int32_t> prompt,
                                   std::size_t n_tokens, std::size_t window,
                                   const SamplingOptions& options, std::mt19937_64& rng,
                                   const std::function<void(std::int32_t)>& on_token,
                                   Tracer* tracer) {
  validate(options);
  if (prompt.empty())
    throw std::invalid_argument("generate: the prompt must hold at least one token");
  NextTokenLogits next_logits(model, window, options, tracer);
  std::vector<std::int32_t> tokens = prompt;
  if (tokens.size() > window)
    tokens.erase(tokens.begin(), tokens.end() - static_cast<long>(window));
  const std::size_t prompt_length = tokens.size();
  tokens.reserve(prompt_length + n_tokens);

  for (std::size_t produced = 0; produced < n_tokens; ++produced) {
    const std::int32_t next = draw(generation_probs(next_logits(tokens), options, tokens), rng);
    tokens.push_back(next);
    if (on_token) on_token(next);
  }
  return std::vector<std::int32_t>(tokens.begin() + static_cast<long>(prompt_length), tokens.end());
}

}  // namespace GLASS_PRECISION
}  // namespace glass
