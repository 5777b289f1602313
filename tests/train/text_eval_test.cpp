// evaluate_text (train/text_eval.hpp), the work of `glass eval`: the mean loss over a text file in
// windows of the model's context, against the same losses computed one window at a time.

#include "train/text_eval.hpp"

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "autograd/ops.hpp"
#include "autograd/tape.hpp"
#include "data/text.hpp"
#include "fixtures.hpp"
#include "test_util.hpp"
#include "train/trainer.hpp"

namespace {

namespace fs = std::filesystem;

class TextEvaluationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = glass_test::temp_dir("text_eval");
    fs::create_directories(dir_);
    glass_test::write_small_checkpoint((dir_ / "ckpt").string(), kContext, 7, 0.5);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static constexpr std::size_t kContext = 8;
  fs::path dir_;
};

TEST_F(TextEvaluationTest, IsTheMeanOverEveryPredictionInWindowsOfTheContext) {
  // 39 characters: 38 predictions in windows of 8, 8, 8, 8 and a last one of 6.
  const std::string text = glass::u32_to_utf8(glass_test::kSmallText);
  const fs::path file = dir_ / "text.txt";
  glass_test::write_file(file, text);
  const glass::Checkpoint loaded = glass::load_checkpoint((dir_ / "ckpt").string(), false);
  const glass::TextEvaluation r = glass::evaluate_text(loaded, file.string(), false);

  const std::vector<std::int32_t> ids = loaded.tokenizer().encode(glass_test::kSmallText);
  ASSERT_EQ(ids.size(), text.size());
  glass::NoGradGuard no_grad;
  double total = 0;
  for (std::size_t start = 0; start + 1 < ids.size(); start += kContext) {
    const std::size_t n = std::min(kContext, ids.size() - 1 - start);
    glass::Ids x = glass::Ids::from_shape({1, n}), y = glass::Ids::from_shape({1, n});
    for (std::size_t t = 0; t < n; ++t) {
      x.data()[t] = ids[start + t];
      y.data()[t] = ids[start + t + 1];
    }
    total += glass::cross_entropy(loaded.model().forward(x), y).item() * static_cast<double>(n);
  }
  EXPECT_EQ(r.predictions, ids.size() - 1);
  EXPECT_EQ(r.window, kContext);
  EXPECT_EQ(r.text_bytes, text.size());
  EXPECT_EQ(r.unknown, 0u);
  EXPECT_NEAR(r.loss, total / static_cast<double>(ids.size() - 1), 1e-5);
  EXPECT_DOUBLE_EQ(r.bits_per_byte, glass::bits_per_byte(r.loss, r.predictions, r.text_bytes));
}

TEST_F(TextEvaluationTest, UnknownCharactersAndTooShortTextsAreErrors) {
  const glass::Checkpoint loaded = glass::load_checkpoint((dir_ / "ckpt").string(), false);
  glass_test::write_file(dir_ / "unknown.txt", "to be, or not");  // ',' is not in the vocabulary
  EXPECT_THROW(glass::evaluate_text(loaded, (dir_ / "unknown.txt").string(), false),
               glass::UnknownCharacterError);
  const glass::TextEvaluation mapped =
      glass::evaluate_text(loaded, (dir_ / "unknown.txt").string(), true);
  EXPECT_EQ(mapped.unknown, 1u);
  EXPECT_EQ(mapped.predictions, 12u);
  glass_test::write_file(dir_ / "one.txt", "t");
  EXPECT_THROW(glass::evaluate_text(loaded, (dir_ / "one.txt").string(), false),
               std::invalid_argument);
}

}  // namespace
