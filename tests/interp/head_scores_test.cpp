// Head scores on hand-built attention patterns, each score worked out by hand in the comment
// above its literal; and the float library's hooks leave the logits unchanged.

#include <gtest/gtest.h>

#include "interp_util.hpp"

namespace {

using namespace glass;

Array pattern_of(const std::vector<std::vector<double>>& rows) {
  Array a = Array::from_shape({rows.size(), rows.size()});
  for (std::size_t t = 0; t < rows.size(); ++t)
    for (std::size_t j = 0; j < rows.size(); ++j) a(t, j) = static_cast<Scalar>(rows[t][j]);
  return a;
}

// A pure previous-token head: every position t >= 1 puts all its weight on t - 1.
const Array kPrevious = pattern_of({{1, 0, 0, 0}, {1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}});
// Uniform causal attention: row t spreads 1/(t+1) over positions 0..t.
const Array kUniform = pattern_of(
    {{1, 0, 0, 0}, {0.5, 0.5, 0, 0}, {1. / 3, 1. / 3, 1. / 3, 0}, {0.25, 0.25, 0.25, 0.25}});

TEST(HeadScores, PreviousTokenScore) {
  // (1 + 1 + 1) / 3
  EXPECT_NEAR(previous_token_score(kPrevious), 1.0, 1e-7);
  // (A[1][0] + A[2][1] + A[3][2]) / 3 = (1/2 + 1/3 + 1/4) / 3 = (13/12) / 3 = 13/36
  EXPECT_NEAR(previous_token_score(kUniform), 13.0 / 36.0, 1e-7);
  EXPECT_THROW(previous_token_score(pattern_of({{1}})), std::invalid_argument);
  EXPECT_THROW(previous_token_score(Array::from_shape({2, 3})), std::invalid_argument);
}

TEST(HeadScores, FirstPositionShare) {
  // (A[1][0] + A[2][0] + A[3][0]) / 3 = (1 + 0 + 0) / 3
  EXPECT_NEAR(first_position_share(kPrevious), 1.0 / 3.0, 1e-7);
  // (1/2 + 1/3 + 1/4) / 3 = 13/36
  EXPECT_NEAR(first_position_share(kUniform), 13.0 / 36.0, 1e-7);
  // A sink head: every row puts 0.9 on position 0 and the rest on itself.
  const Array sink = pattern_of({{1, 0, 0}, {0.9, 0.1, 0}, {0.9, 0, 0.1}});
  EXPECT_NEAR(first_position_share(sink), 0.9, 1e-7);
}

TEST(HeadScores, InductionScore) {
  // Period 3, n = 6: a perfect induction head at t = 3, 4, 5 attends to t - 3 + 1 = 1, 2, 3.
  const Array induction = pattern_of({{1, 0, 0, 0, 0, 0},
                                      {0.5, 0.5, 0, 0, 0, 0},
                                      {0.2, 0.3, 0.5, 0, 0, 0},
                                      {0, 1, 0, 0, 0, 0},
                                      {0, 0, 1, 0, 0, 0},
                                      {0, 0, 0, 1, 0, 0}});
  EXPECT_NEAR(induction_score(induction, 3), 1.0, 1e-7);
  // The same rows read as a previous-token head: A[1][0] + A[2][1] + A[3][2] + A[4][3] + A[5][4]
  // = 0.5 + 0.3 + 0 + 0 + 0 over 5 = 0.16.
  EXPECT_NEAR(previous_token_score(induction), 0.16, 1e-7);
  // A half-hearted one: A[3][1] = 0.4, A[4][2] = 0.1, A[5][3] = 0.7 -> 1.2 / 3 = 0.4.
  const Array half = pattern_of({{1, 0, 0, 0, 0, 0},
                                 {0.5, 0.5, 0, 0, 0, 0},
                                 {0.2, 0.3, 0.5, 0, 0, 0},
                                 {0.6, 0.4, 0, 0, 0, 0},
                                 {0.3, 0.3, 0.1, 0.3, 0, 0},
                                 {0.1, 0.1, 0, 0.7, 0.1, 0}});
  EXPECT_NEAR(induction_score(half, 3), 0.4, 1e-7);
  EXPECT_THROW(induction_score(half, 2), std::invalid_argument);
  EXPECT_THROW(induction_score(half, 0), std::invalid_argument);
}

TEST(HeadScores, RepeatedRandomTokensRepeat) {
  const Tokens tokens = repeated_random_tokens(5, 11, 3);
  ASSERT_EQ(tokens.size(), 10u);
  for (std::size_t t = 0; t < 5; ++t) {
    EXPECT_EQ(tokens[t], tokens[t + 5]);
    EXPECT_GE(tokens[t], 0);
    EXPECT_LT(tokens[t], 11);
  }
  EXPECT_EQ(tokens, repeated_random_tokens(5, 11, 3));  // the same seed, the same probe
}

TEST(HeadScores, OfAModelAreTheScoresOfItsPatterns) {
  auto model = interp_test::twin_model();
  const Tokens tokens = repeated_random_tokens(4, 11, 9);
  const HeadScores scores = head_scores(*model, tokens, 4);
  Tracer tracer;
  run_with_hooks(*model, as_batch(tokens), tracer);
  for (std::size_t L = 0; L < 2; ++L) {
    const Array& softmax = tracer.get(attention_point(L, "softmax"));  // (4, 8, 8)
    for (std::size_t h = 0; h < 4; ++h) {
      Array pattern = Array::from_shape({8, 8});
      for (std::size_t t = 0; t < 8; ++t)
        for (std::size_t j = 0; j < 8; ++j) pattern(t, j) = softmax(h, t, j);
      EXPECT_EQ(scores.previous_token(L, h), static_cast<Scalar>(previous_token_score(pattern)));
      EXPECT_EQ(scores.induction(L, h), static_cast<Scalar>(induction_score(pattern, 4)));
      EXPECT_EQ(scores.first_position(L, h), static_cast<Scalar>(first_position_share(pattern)));
    }
  }
  Tokens broken = tokens;
  broken[5] = (broken[5] + 1) % 11;
  EXPECT_THROW(head_scores(*model, broken, 4), std::invalid_argument);
  EXPECT_THROW(head_scores(*model, tokens, 3), std::invalid_argument);
}

TEST(HookPointsFloat, HooksThatChangeNothingLeaveTheLogitsBitForBit) {
  auto model = interp_test::twin_model();
  const Ids tokens = glass_test::twin_tokens();
  Tracer tracer;
  std::size_t calls = 0;
  tracer.add_hook("", [&](const std::string&, Array&) { ++calls; });
  const Array hooked = run_with_hooks(*model, tokens, tracer);
  const Array plain = interp_test::plain_logits(*model, tokens);
  EXPECT_EQ(calls, 13u);
  ASSERT_EQ(hooked.size(), plain.size());
  for (std::size_t i = 0; i < plain.size(); ++i) ASSERT_EQ(hooked.data()[i], plain.data()[i]) << i;
}

}  // namespace
