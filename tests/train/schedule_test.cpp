// The learning-rate schedule (train/schedule.hpp): linear warmup, cosine decay, floor.
#include <cmath>

#include <gtest/gtest.h>

#include "train/schedule.hpp"

using namespace glass;

// ---- schedule: values computed by hand from the nanoGPT formula (README, "Conventions") -----
TEST(LrSchedule, WarmupThenCosineThenFloor) {
  LrSchedule s{1e-3, 1e-4, 100, 2000};
  EXPECT_NEAR(s.at(0), 1e-3 * 1.0 / 101.0, 1e-15);  // 9.90099e-6
  EXPECT_NEAR(s.at(49), 1e-3 * 50.0 / 101.0, 1e-15);
  EXPECT_NEAR(s.at(99), 1e-3 * 100.0 / 101.0, 1e-15);  // last warmup step, still below lr_max
  EXPECT_NEAR(s.at(100), 1e-3, 1e-15);                 // ratio 0: cos(0) = 1 -> lr_max
  // ratio 0.25: 1e-4 + 0.5 * (1 + cos(pi/4)) * 9e-4 = 1e-4 + 0.5 * 1.7071067812 * 9e-4
  EXPECT_NEAR(s.at(575), 8.6819805153e-4, 1e-13);
  EXPECT_NEAR(s.at(1050), 5.5e-4, 1e-15);  // ratio 0.5: halfway between the ends
  // ratio 0.75: 1e-4 + 0.5 * (1 - cos(pi/4)) * 9e-4 = 1e-4 + 1.3180194847e-4
  EXPECT_NEAR(s.at(1525), 2.3180194847e-4, 1e-13);
  EXPECT_NEAR(s.at(2000), 1e-4, 1e-15);  // horizon reached: min_lr
  EXPECT_NEAR(s.at(5000), 1e-4, 1e-15);  // and stays there
}

TEST(LrSchedule, NoWarmupAndWarmupPastHorizon) {
  LrSchedule s{2e-3, 2e-4, 0, 10};
  EXPECT_NEAR(s.at(0), 2e-3, 1e-15);
  EXPECT_NEAR(s.at(5), 1.1e-3, 1e-15);  // ratio 0.5
  LrSchedule w{1e-3, 1e-4, 10, 10};     // warmup == horizon: no division by zero
  EXPECT_NEAR(w.at(9), 1e-3 * 10.0 / 11.0, 1e-15);
  EXPECT_NEAR(w.at(10), 1e-4, 1e-15);
}
