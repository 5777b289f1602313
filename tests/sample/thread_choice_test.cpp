// ThreadChoice (sample/thread_choice.hpp): generation's thread count chosen by measuring it,
// driven here by made-up token times so that each situation is exact: a machine where every
// core is faster, one where one thread is, a busy core that makes two threads badly slow (the
// 14 against 4,016 characters/s of bench/README.md: ~280x), and a machine that turns busy and
// then idle again in the middle of a run.
#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <vector>

#include "sample/thread_choice.hpp"

namespace {

using glass::ThreadChoice;

/// Runs `tokens` tokens; time_of(token index, threads) is what each token takes. Returns the
/// total time; `applied` gets every count the chooser set.
double generate(ThreadChoice& choice, std::size_t tokens,
                const std::function<double(std::size_t, std::size_t)>& time_of) {
  double total = 0;
  for (std::size_t i = 0; i < tokens; ++i) {
    const double t = time_of(i, choice.current());
    total += t;
    choice.token_took(t);
  }
  return total;
}

TEST(ThreadChoice, EveryCoreWhenItIsFaster) {
  std::vector<std::size_t> applied;
  ThreadChoice choice(2, [&](std::size_t n) { applied.push_back(n); });
  ASSERT_EQ(applied, std::vector<std::size_t>{1});  // starts on one thread
  // Two threads 1.5x faster (the idle Intel machine of bench/README.md).
  const double total =
      generate(choice, 2000, [](std::size_t, std::size_t n) { return n == 1 ? 1.5 : 1.0; });
  EXPECT_EQ(choice.current(), 2u);
  EXPECT_EQ(choice.switches(), 0u);
  EXPECT_EQ(choice.tokens_on(1) + choice.tokens_on(2), 2000u);
  // 8 tokens measured on one thread, then 8 on one thread at each check: after stretches of
  // 64, 128, 256 and 512 tokens on two (twice as long each time one thread loses again; the
  // check after the next, 1024 tokens, would come at token 2032).
  EXPECT_EQ(choice.tokens_on(1), 8u + 4 * 8u);
  // Within 2 % of generating everything on two threads.
  EXPECT_LT(total, 1.02 * 2000.0);
  // The count was set at each change only: 1, then 2, then 1 and back to 2 at each check.
  EXPECT_EQ(applied, (std::vector<std::size_t>{1, 2, 1, 2, 1, 2, 1, 2, 1, 2}));
}

TEST(ThreadChoice, OneThreadWhenItIsFaster) {
  ThreadChoice choice(2, [](std::size_t) {});
  // One thread faster (the AMD Zen 5 machine: 11,260 against 6,300 characters/s).
  const double total =
      generate(choice, 2000, [](std::size_t, std::size_t n) { return n == 1 ? 1.0 : 1.8; });
  EXPECT_EQ(choice.current(), 1u);
  EXPECT_EQ(choice.tokens_on(2), 8u + 4 * 8u);  // the first measurement and four checks
  EXPECT_LT(total, 1.02 * 2000.0);
}

TEST(ThreadChoice, TheStretchBetweenChecksStopsGrowingAtMaxRun) {
  // probe 8, first stretch 64, longest 128: after the stretches of 64 and 128, every stretch is
  // 128 tokens, each followed by a check of 8.
  ThreadChoice choice(
      2, [](std::size_t) {}, 8, 64, 128);
  generate(choice, 2000, [](std::size_t, std::size_t n) { return n == 1 ? 1.0 : 1.8; });
  // Tokens 0-15 measure; the check after the first stretch ends at token 88; then one check
  // per 136 tokens: 14 more end by token 1992.
  EXPECT_EQ(choice.tokens_on(2), 8u + 8u + 14 * 8u);
  EXPECT_EQ(choice.current(), 1u);
}

TEST(ThreadChoice, ABadlySlowCountCostsTwoTokensPerCheckAndIsCheckedRarely) {
  ThreadChoice choice(2, [](std::size_t) {});
  // A busy core: two threads wait a time slice at every product.
  const double total =
      generate(choice, 20000, [](std::size_t, std::size_t n) { return n == 1 ? 1.0 : 280.0; });
  EXPECT_EQ(choice.current(), 1u);
  // Two tokens at the first measurement (tokens 8 and 9), then two per check: after stretches
  // of 512 (8 x 64) and 4096 tokens, at tokens 522 and 4620; the next stretch is the longest,
  // 16384 tokens.
  EXPECT_EQ(choice.tokens_on(2), 6u);
  EXPECT_LT(total, 1.09 * 20000.0);  // fixed two threads: 280x
}

TEST(ThreadChoice, AMachineThatTurnsBusyAndIdleAgainIsFollowed) {
  ThreadChoice choice(2, [](std::size_t) {});
  // Idle (two threads 1.5x faster) until token 1100, busy (two threads 280x slower) until
  // token 3000, idle again after.
  generate(choice, 1100, [](std::size_t, std::size_t n) { return n == 1 ? 1.5 : 1.0; });
  ASSERT_EQ(choice.current(), 2u);
  const std::size_t on_two_before = choice.tokens_on(2);
  generate(choice, 1900, [](std::size_t, std::size_t n) { return n == 1 ? 1.5 : 280.0; });
  // Four slow tokens on two threads turn the median of the last eight (the mean of its two
  // middle values: 140.5): one thread is checked at once and wins. Two threads are checked
  // again 64 tokens later and 512 after that; two slow tokens end each check.
  EXPECT_EQ(choice.current(), 1u);
  EXPECT_EQ(choice.tokens_on(2) - on_two_before, 4u + 2u + 2u);
  EXPECT_EQ(choice.switches(), 1u);
  // Idle again: two threads win a later check (within the longest stretch, 16384 tokens).
  generate(choice, 17000, [](std::size_t, std::size_t n) { return n == 1 ? 1.5 : 1.0; });
  EXPECT_EQ(choice.current(), 2u);
  EXPECT_EQ(choice.switches(), 2u);
}

TEST(ThreadChoice, OneCoreHasNothingToChooseAndBadArgumentsAreRefused) {
  std::vector<std::size_t> applied;
  ThreadChoice choice(1, [&](std::size_t n) { applied.push_back(n); });
  generate(choice, 500, [](std::size_t, std::size_t) { return 1.0; });
  EXPECT_EQ(applied, std::vector<std::size_t>{1});
  EXPECT_EQ(choice.tokens_on(1), 500u);
  EXPECT_THROW(ThreadChoice(0, [](std::size_t) {}), std::invalid_argument);
  auto with_probe = [](std::size_t probe) {
    ThreadChoice(
        2, [](std::size_t) {}, probe);
  };
  EXPECT_THROW(with_probe(0), std::invalid_argument);
  EXPECT_THROW(with_probe(1), std::invalid_argument);
}

}  // namespace
