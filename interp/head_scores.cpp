#include "interp/head_scores.hpp"

#include <random>
#include <stdexcept>

namespace glass {
inline namespace GLASS_PRECISION {

namespace {

void check_pattern(const Array& pattern, const char* who, std::size_t min_n) {
  if (pattern.dimension() != 2 || pattern.shape()[0] != pattern.shape()[1] ||
      pattern.shape()[0] < min_n) {
    throw std::invalid_argument(std::string(who) +
                                ": the pattern must be square (n, n) with n >= " +
                                std::to_string(min_n) + ", got " + shape_str(shape_of(pattern)));
  }
}

}  // namespace

double previous_token_score(const Array& pattern) {
  check_pattern(pattern, "previous_token_score", 2);
  const std::size_t n = pattern.shape()[0];
  double sum = 0;
  for (std::size_t t = 1; t < n; ++t) sum += pattern(t, t - 1);
  return sum / static_cast<double>(n - 1);
}

double induction_score(const Array& pattern, std::size_t period) {
  check_pattern(pattern, "induction_score", 2);
  if (period == 0 || pattern.shape()[0] != 2 * period) {
    throw std::invalid_argument("induction_score: the pattern is " + shape_str(shape_of(pattern)) +
                                ", expected (2 period, 2 period) with period " +
                                std::to_string(period));
  }
  double sum = 0;
  for (std::size_t t = period; t < 2 * period; ++t) sum += pattern(t, t - period + 1);
  return sum / static_cast<double>(period);
}

double first_position_share(const Array& pattern) {
  check_pattern(pattern, "first_position_share", 2);
  const std::size_t n = pattern.shape()[0];
  double sum = 0;
  for (std::size_t t = 1; t < n; ++t) sum += pattern(t, 0);
  return sum / static_cast<double>(n - 1);
}

Tokens repeated_random_tokens(std::size_t period, std::size_t vocab_size, std::uint64_t seed) {
  if (period == 0 || vocab_size == 0)
    throw std::invalid_argument("repeated_random_tokens: period and vocab_size must be positive");
  Rng rng(seed);
  std::uniform_int_distribution<std::int32_t> pick(0, static_cast<std::int32_t>(vocab_size) - 1);
  Tokens tokens(2 * period);
  for (std::size_t t = 0; t < period; ++t) tokens[t] = tokens[t + period] = pick(rng);
  return tokens;
}

HeadScores head_scores(const Decoder& model, const Tokens& tokens, std::size_t period) {
  if (period == 0 || tokens.size() != 2 * period) {
    throw std::invalid_argument("head_scores: expected 2 * period = " + std::to_string(2 * period) +
                                " tokens, got " + std::to_string(tokens.size()));
  }
  for (std::size_t t = 0; t < period; ++t)
    if (tokens[t] != tokens[t + period])
      throw std::invalid_argument(
          "head_scores: the second half does not repeat the first at position " +
          std::to_string(t + period));
  const auto& c = model.config();
  Tracer tracer;
  run_with_hooks(model, as_batch(tokens), tracer);
  HeadScores scores{Array::from_shape({c.n_layers, c.n_heads}),
                    Array::from_shape({c.n_layers, c.n_heads}),
                    Array::from_shape({c.n_layers, c.n_heads})};
  const std::size_t n = tokens.size();
  for (std::size_t L = 0; L < c.n_layers; ++L) {
    const Array& softmax = tracer.get(attention_point(L, "softmax"));  // (n_heads, n, n)
    for (std::size_t h = 0; h < c.n_heads; ++h) {
      Array pattern = Array::from_shape({n, n});
      std::copy(softmax.data() + h * n * n, softmax.data() + (h + 1) * n * n, pattern.data());
      scores.previous_token(L, h) = static_cast<Scalar>(previous_token_score(pattern));
      scores.induction(L, h) = static_cast<Scalar>(induction_score(pattern, period));
      scores.first_position(L, h) = static_cast<Scalar>(first_position_share(pattern));
    }
  }
  return scores;
}

}  // namespace GLASS_PRECISION
}  // namespace glass
