// What the numbers of a training run mean (train/loss_notes.hpp): each message on hand-made
// numbers, with the values it must print computed by hand.

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "train/loss_notes.hpp"

using namespace glass;

namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

LogRow row(long step, double train, double val) {
  LogRow r;
  r.step = step;
  r.train_loss = train;
  r.val_loss = val;
  return r;
}

}  // namespace

TEST(LossNotes, StepZeroNearLnVIsANoteFarFromItAWarning) {
  // ln 83 = 4.418840607796598 (python3 -c 'import math; print(math.log(83))').
  const std::string near = step_zero_note(4.455, 83);
  EXPECT_TRUE(has(near, "note: loss 4.4550 ≈ ln 83 = 4.4188: the model is guessing uniformly"))
      << near;
  // V = 83 counts the unknown id 0: 82 characters, said so (as the page of glass serve says it).
  EXPECT_TRUE(
      has(near, "among the 83 entries of its vocabulary (82 characters + the unknown id 0)"))
      << near;
  EXPECT_EQ(vocabulary_words(83), "vocabulary 83 (82 characters + the unknown id 0)");
  const std::string above = step_zero_note(4.4188 + 0.6, 83);
  EXPECT_TRUE(has(above, "warning: loss 5.0188 at step 0 is far above ln 83 = 4.4188")) << above;
  EXPECT_TRUE(has(above, "initial weights too large")) << above;
  const std::string below = step_zero_note(3.0, 83);
  EXPECT_TRUE(has(below, "far below ln 83")) << below;
  EXPECT_TRUE(has(below, "leak")) << below;
  // The boundary: 0.5 nats off is still uniform enough.
  EXPECT_TRUE(has(step_zero_note(4.9188, 83), "note:"));
}

TEST(LossNotes, OverfittingIsNamedAfterThreeEvaluationsWithoutABestValLoss) {
  std::vector<LogRow> log = {row(0, 4.4, 4.4), row(250, 2.0, 2.1)};
  EXPECT_EQ(evaluation_note(log), "");
  log.push_back(row(500, 1.6, 1.9));  // best
  log.push_back(row(750, 1.4, 1.95));
  const std::string rose = evaluation_note(log);
  EXPECT_TRUE(has(rose, "rose (1.9000 -> 1.9500) while the training loss fell")) << rose;
  EXPECT_TRUE(has(rose, "is now 0.5500")) << rose;  // 1.95 - 1.4
  log.push_back(row(1000, 1.3, 1.94));
  log.push_back(row(1250, 1.2, 1.96));
  const std::string overfit = evaluation_note(log);
  EXPECT_TRUE(has(overfit, "has not improved for 3 evaluations (best 1.9000 at step 500"))
      << overfit;
  EXPECT_TRUE(has(overfit, "overfitting")) << overfit;
  EXPECT_TRUE(has(overfit, "best.safetensors")) << overfit;
  // Both curves flat since the best: a plateau, not overfitting; a val loss that rises but stays
  // below the training loss (evaluation noise) is no sign of it either.
  std::vector<LogRow> flat = {row(0, 4.4, 4.4), row(250, 1.60, 1.60), row(500, 1.60, 1.61),
                              row(750, 1.59, 1.60), row(1000, 1.60, 1.61)};
  const std::string plateau = evaluation_note(flat);
  EXPECT_TRUE(has(plateau, "a plateau, not overfitting")) << plateau;
  EXPECT_TRUE(has(final_summary(flat, 83, 1000), "(a plateau)"));
  EXPECT_EQ(evaluation_note({row(0, 4.4, 4.4), row(250, 2.05, 1.95), row(500, 2.04, 1.96)}), "");
}

// The gap +0.13 -> +0.30 -> +0.49 while the validation loss still falls (2.20 -> 2.10 -> 2.05):
// no note from the other rules (the last evaluation is the best), but a sign of overfitting.
TEST(LossNotes, AGapThatKeepsWideningIsNotedWhileValidationStillFalls) {
  std::vector<LogRow> log = {row(0, 4.4, 4.4), row(250, 2.07, 2.20), row(500, 1.80, 2.10)};
  EXPECT_EQ(evaluation_note(log), "");  // two widenings need three evaluations after step 0
  log.push_back(row(750, 1.56, 2.05));  // gaps 2.20-2.07 = 0.13, 2.10-1.80 = 0.30, 2.05-1.56 = 0.49
  const std::string note = evaluation_note(log);
  EXPECT_TRUE(has(note,
                  "the validation loss still falls (2.2000 -> 2.0500), but the gap (val - train) "
                  "keeps widening (+0.13 -> +0.30 -> +0.49)"))
      << note;
  EXPECT_TRUE(has(note, "first sign of overfitting")) << note;
  log.push_back(row(1000, 1.30, 2.01));  // still widening (+0.71): said once, when it starts
  EXPECT_EQ(evaluation_note(log), "");
  // A gap that widens by less than 0.1 nats in all is noise: no note.
  EXPECT_EQ(evaluation_note({row(0, 4.4, 4.4), row(250, 2.00, 2.10), row(500, 1.90, 2.03),
                             row(750, 1.80, 1.98)}),
            "");  // gaps 0.10, 0.13, 0.18: +0.08
}

TEST(LossNotes, TheSummaryGivesBitsPerCharacterAndWhatToTryNext) {
  // 1.5 nats / ln 2 = 2.164 bits; e^1.5 = 4.48 (python3: math.exp(1.5) = 4.4817).
  const std::vector<LogRow> falling = {row(0, 4.4, 4.4), row(1000, 1.6, 1.7), row(2000, 1.4, 1.5)};
  const std::string s = final_summary(falling, 83, 2000);
  EXPECT_TRUE(has(s,
                  "best validation loss at step 2000:\n"
                  "  per character: 1.5000 nats = 2.164 bits (perplexity 4.48"))
      << s;
  EXPECT_TRUE(has(s, "perplexity 4.48")) << s;
  EXPECT_TRUE(has(s, "ln 83 = 4.4188 nats, 6.375 bits")) << s;  // 4.41884 / 0.693147 = 6.3750
  EXPECT_FALSE(has(s, "bits per byte")) << s;                   // no byte count given
  // A BPE split of 400 tokens over 1000 bytes: 1.5 * 0.4 / ln 2 = 0.8656 bits per byte, first;
  // the per-token figures labelled below it. A character split of 1000 characters over 1100
  // bytes: 1.5 * (1000 / 1100) / ln 2 = 1.9673 bits per byte.
  const std::string bpe = final_summary(falling, 512, 2000, "token", 0.4);
  EXPECT_EQ(bpe.rfind("best validation loss at step 2000: 0.8656 bits per byte (comparable across "
                      "tokenizers)\n  per token: 1.5000 nats = 2.164 bits (perplexity 4.48",
                      0),
            0u)
      << bpe;
  EXPECT_TRUE(has(final_summary(falling, 83, 2000, "character", 1000.0 / 1100.0),
                  "best validation loss at step 2000: 1.9673 bits per byte"));
  EXPECT_TRUE(has(s, "still falling at the end: train longer")) << s;
  const std::vector<LogRow> overfit = {row(0, 4.4, 4.4), row(250, 2.0, 1.8), row(500, 1.5, 1.9),
                                       row(750, 1.2, 2.0), row(1000, 1.0, 2.1)};
  EXPECT_TRUE(
      has(final_summary(overfit, 83, 1000), "stopped improving 3 evaluations before the end"));
  EXPECT_TRUE(
      has(final_summary({row(0, 4.4, 4.4), row(10, 4.39, 4.38)}, 83, 10), "learnt almost nothing"));
  EXPECT_TRUE(has(final_summary(falling, 83, 5000), "stopped early"));
  EXPECT_EQ(final_summary({}, 83, 10), "");
}

TEST(LossNotes, OverfitBatchPassesBelowTheTarget) {
  EXPECT_TRUE(has(
      overfit_batch_note(4.4, 0.05, 200),
      "overfit check passed: the loss of the one batch went from 4.4000 to 0.0500 in 200 steps"));
  EXPECT_TRUE(has(overfit_batch_note(4.4, 1.2, 200), "not passed yet"));
}

TEST(LossNotes, TheYardstickLineSaysWhichSimplePredictorsTheModelBeats) {
  glass::Yardstick y;
  y.bigram_bits_per_byte = 3.5;
  y.xz_bits_per_byte = 2.6;
  y.train_chars = 900;
  y.val_chars = 100;
  const std::string both = glass::yardstick_note(2.19, y, 900, 100);
  EXPECT_EQ(both,
            "yardstick on the same validation split: a character bigram model (counted on the "
            "training split, add-one smoothing) 3.5000 bits per byte, xz -9 given the training "
            "split 2.6000; this model 2.1900: it beats both\n");
  EXPECT_TRUE(has(glass::yardstick_note(3.0, y, 900, 100), "it beats the bigram model, not xz"));
  EXPECT_TRUE(has(glass::yardstick_note(4.0, y, 900, 100), "it beats neither yet"));
  // Splits longer than the yardsticks read: the line says which part they read.
  EXPECT_TRUE(has(glass::yardstick_note(2.19, y, 5000, 100),
                  "read the last 900 of the training split's 5000 characters"));
}
