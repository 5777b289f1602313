// Sampling: temperature, top-k, top-p on hand examples; generation with and without KV cache.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "train/sample/sampler.hpp"

#include "fixtures.hpp"

using namespace glass;

TEST(Sampling, TopKKeepsTiesAtTheKthValue) {
  std::vector<double> logits = {1.0, 3.0, 2.0, 2.0, 0.5};
  top_k_filter(logits, 2);  // 2nd largest value is 2.0, held by ids 2 and 3: both kept
  const double ninf = -std::numeric_limits<double>::infinity();
  EXPECT_EQ(logits, (std::vector<double>{ninf, 3.0, 2.0, 2.0, ninf}));
  std::vector<double> same = {1.0, 3.0, 2.0};
  top_k_filter(same, 0);  // off
  EXPECT_EQ(same, (std::vector<double>{1.0, 3.0, 2.0}));
  top_k_filter(same, 10);  // above the vocabulary: clamped, nothing removed
  EXPECT_EQ(same, (std::vector<double>{1.0, 3.0, 2.0}));
}

TEST(Sampling, TopPKeepsTheSmallestPrefixReachingP) {
  std::vector<double> probs = {0.1, 0.5, 0.3, 0.1};
  top_p_filter(probs, 0.7);  // sorted 0.5, 0.3 (cumulative 0.8 >= 0.7): keep ids 1 and 2
  EXPECT_NEAR(probs[0], 0.0, 1e-15);
  EXPECT_NEAR(probs[1], 0.5 / 0.8, 1e-15);
  EXPECT_NEAR(probs[2], 0.3 / 0.8, 1e-15);
  EXPECT_NEAR(probs[3], 0.0, 1e-15);
  std::vector<double> tiny = {0.2, 0.6, 0.2};
  top_p_filter(tiny, 0.01);  // always at least the most probable token
  EXPECT_EQ(tiny, (std::vector<double>{0.0, 1.0, 0.0}));
  std::vector<double> exact = {0.25, 0.25, 0.5};
  top_p_filter(exact, 0.75);  // 0.5 + 0.25 reaches 0.75 exactly: ties broken by smaller id
  EXPECT_NEAR(exact[0], 1.0 / 3.0, 1e-15);
  EXPECT_NEAR(exact[1], 0.0, 1e-15);
  EXPECT_NEAR(exact[2], 2.0 / 3.0, 1e-15);
}

TEST(Sampling, TemperatureAndGreedy) {
  const std::vector<double> logits = {0.0, std::log(3.0), 0.0};
  SamplingOptions o;
  o.temperature = 1.0;
  // The probabilities come from the library's row softmax in Scalar (float here): ~1e-7.
  auto p = next_token_probs(logits, o);  // softmax of (0, ln 3, 0) = (1, 3, 1) / 5
  EXPECT_NEAR(p[0], 0.2, 1e-6);
  EXPECT_NEAR(p[1], 0.6, 1e-6);
  o.temperature = 0.5;  // logits doubled: (1, 9, 1) / 11
  p = next_token_probs(logits, o);
  EXPECT_NEAR(p[1], 9.0 / 11.0, 1e-6);
  o.temperature = 0.0;  // greedy
  p = next_token_probs({1.0, 5.0, 5.0}, o);
  EXPECT_EQ(p, (std::vector<double>{0.0, 1.0, 0.0}));  // first of the tied maxima
  o.temperature = 1.0;
  o.top_k = 1;
  p = next_token_probs({1.0, 5.0, 2.0}, o);
  EXPECT_EQ(p, (std::vector<double>{0.0, 1.0, 0.0}));
}

TEST(Sampling, OptionsValidated) {
  SamplingOptions o;
  o.temperature = -0.1;
  EXPECT_THROW(validate(o), std::invalid_argument);
  o.temperature = 1.0;
  o.top_p = 0.0;
  EXPECT_THROW(validate(o), std::invalid_argument);
  o.top_p = 1.5;
  EXPECT_THROW(validate(o), std::invalid_argument);
  o.top_p = 1.0;
  EXPECT_NO_THROW(validate(o));
}

TEST(Sampling, DrawFollowsTheProbabilitiesAndSeed) {
  std::mt19937_64 rng(7);
  std::vector<int> counts(3, 0);
  for (int i = 0; i < 20000; ++i) ++counts[draw({0.2, 0.0, 0.8}, rng)];
  EXPECT_EQ(counts[1], 0);                 // zero probability is never drawn
  EXPECT_NEAR(counts[0] / 20000.0, 0.2, 0.02);  // binomial sd = 0.0028
  std::mt19937_64 a(5), b(5);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(draw({0.3, 0.3, 0.4}, a), draw({0.3, 0.3, 0.4}, b));
}

// A tiny positive temperature tends to greedy; logits / 1e-320 used to overflow to inf and the
// softmax of inf - inf gave NaN probabilities (the sampler then drew an arbitrary character).
TEST(Sampling, TinyTemperatureIsGreedyNotNaN) {
  const std::vector<double> logits = {-std::numeric_limits<double>::infinity(), 0.5, 2.0, -1.0};
  SamplingOptions o;
  for (double t : {1e-30, 1e-320, 4.9e-324}) {
    o.temperature = t;
    const auto p = next_token_probs(logits, o);
    EXPECT_EQ(p, (std::vector<double>{0.0, 0.0, 1.0, 0.0})) << "temperature " << t;
  }
}

TEST(Sampling, NonFiniteLogitsAreAnErrorNotAnArbitraryToken) {
  SamplingOptions o;
  for (double t : {0.0, 0.8}) {
    o.temperature = t;
    EXPECT_THROW(next_token_probs({0.1, std::nan(""), 0.3}, o), std::runtime_error);
    EXPECT_THROW(next_token_probs({0.1, std::numeric_limits<double>::infinity()}, o), std::runtime_error);
  }
  o.temperature = 1.0;
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_THROW(next_token_probs({-inf, -inf}, o), std::runtime_error);
}

// ---- generation -------------------------------------------------------------------------------

TEST(Generate, CachedAndUncachedAgreeAtTemperatureZero) {
  const Tokenizer tokenizer = Tokenizer::from_text(U"abcdefghijklmnopqrstuvwxyz ");
  Decoder model(glass_test::small_config(tokenizer.vocab_size(), 32), 11);
  SamplingOptions greedy;
  greedy.temperature = 0.0;
  for (std::size_t window : {32u, 8u}) {  // 8: the window slides and the cache is rebuilt
    std::mt19937_64 rng1(1), rng2(1);
    greedy.use_kv_cache = true;
    const auto cached = generate(model, {1, 2, 3, 4, 5}, 20, window, greedy, rng1);
    greedy.use_kv_cache = false;
    const auto uncached = generate(model, {1, 2, 3, 4, 5}, 20, window, greedy, rng2);
    EXPECT_EQ(cached, uncached) << "window " << window;
    EXPECT_EQ(cached.size(), 20u);
    for (std::int32_t id : cached) EXPECT_NE(id, 0);  // the unknown id is never generated
  }
  // A prompt longer than the window is cropped (no error), and a seed reproduces a sample.
  SamplingOptions hot;
  hot.temperature = 1.0;
  hot.top_k = 5;
  hot.top_p = 0.9;
  std::mt19937_64 a(9), b(9);
  std::vector<std::int32_t> long_prompt(40, 3);
  EXPECT_EQ(generate(model, long_prompt, 15, 8, hot, a), generate(model, long_prompt, 15, 8, hot, b));
}
