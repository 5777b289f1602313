// The yardsticks beside a validation loss (data/yardstick.hpp). The literals come from
// tests/data/reference/yardstick_reference.py (Python's collections and lzma modules, written
// apart from the C++ code); the small cases are worked out by hand in the comments.

#include "data/yardstick.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "data/text.hpp"

namespace {

// The reference script's texts: 250 and 50 UTF-8 bytes (the validation text has 'ç', 'ã', 'é').
const std::u32string kTrain = [] {
  std::u32string t;
  for (int i = 0; i < 6; ++i) t += U"o rato roeu a roupa do rei de roma. ";
  return t + U"a rainha, de raiva, roeu o resto.\n";
}();
const std::u32string kVal = U"o rei roeu a roupa da rainha: ração é ração!\n";

TEST(Yardstick, BigramByHand) {
  // train "ab", val "b": the alphabet {a, b} (V = 2); 'b' follows the training text's last
  // 'b', never seen first in a pair (n(b) = 0): P = (0 + 1) / (0 + 2) = 1/2, 1 bit, 1 byte.
  EXPECT_DOUBLE_EQ(glass::bigram_bits_per_byte(U"ab", U"b"), 1.0);
  // train "aba", val "b": n(a, b) = 1, n(a) = 1, V = 2: P(b | a) = 2/3: log2(3/2) bits.
  EXPECT_DOUBLE_EQ(glass::bigram_bits_per_byte(U"aba", U"b"), std::log2(1.5));
  // A 2-byte character: the same bits over 2 bytes. train "ab", val "é": V = 3, n(b) = 0:
  // log2(3) bits over 2 bytes.
  EXPECT_DOUBLE_EQ(glass::bigram_bits_per_byte(U"ab", U"é"), std::log2(3.0) / 2);
  EXPECT_THROW(glass::bigram_bits_per_byte(U"ab", U""), std::invalid_argument);
}

TEST(Yardstick, BigramMatchesThePythonReference) {
  EXPECT_NEAR(glass::bigram_bits_per_byte(kTrain, kVal), 2.843516895373, 1e-11);
}

TEST(Yardstick, XzMatchesThePythonReference) {
  const std::string train = glass::u32_to_utf8(kTrain), val = glass::u32_to_utf8(kVal);
  ASSERT_EQ(train.size(), 250u);
  ASSERT_EQ(val.size(), 50u);
  EXPECT_EQ(glass::xz_size(train), 124u);
  EXPECT_EQ(glass::xz_size(train + val), 144u);
  EXPECT_DOUBLE_EQ(glass::xz_bits_per_byte(train, val), (144.0 - 124.0) * 8 / 50);  // 3.2
  EXPECT_THROW(glass::xz_bits_per_byte(train, ""), std::invalid_argument);
}

TEST(Yardstick, MeasureReadsBothAndCapsTheTexts) {
  const glass::Yardstick y = glass::measure_yardstick(kTrain, kVal);
  EXPECT_NEAR(y.bigram_bits_per_byte, 2.843516895373, 1e-11);
  EXPECT_DOUBLE_EQ(y.xz_bits_per_byte, 3.2);
  EXPECT_EQ(y.train_chars, kTrain.size());
  EXPECT_EQ(y.val_chars, kVal.size());
  EXPECT_EQ(y.val_bytes, 50u);
  // A validation text past the cap: only its first kYardstickValChars characters are read.
  const glass::Yardstick big =
      glass::measure_yardstick(U"ab", std::u32string(glass::kYardstickValChars + 5, U'b'));
  EXPECT_EQ(big.val_chars, glass::kYardstickValChars);
  EXPECT_EQ(big.val_bytes, glass::kYardstickValChars);
}

}  // namespace
