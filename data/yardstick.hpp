#pragma once
// Yardsticks for a validation loss: the bits per byte two simple predictors reach on the same
// validation text, given the same training text. A trained model's bits per byte mean little
// alone ("is 2.19 good?"); beside these they do.
//
//   bigram: P(c | p) = (n(p, c) + 1) / (n(p) + V), a character bigram model counted on the
//           training text with add-one (Laplace) smoothing over the V distinct characters of the
//           training and validation texts; the validation text's first character follows the
//           training text's last. Its loss in bits, summed over the validation characters,
//           divided by their UTF-8 bytes.
//   xz:     a general-purpose compressor (liblzma, the xz format at preset 9 with its dictionary
//           sized to the input) given the training text first: (xz(train + val) - xz(train)) * 8
//           bits over the validation text's bytes — what the validation text costs a compressor
//           that has read the training text.
//
// Both see at most the last kYardstickTrainChars characters of the training text and the first
// kYardstickValChars characters of the validation text, so a large corpus costs a second and a
// few tens of MB, not minutes and its own size again (the run's own loss uses every token).

#include <cstddef>
#include <string>

namespace glass {

/// The most characters of the training text the yardsticks read (its last ones).
constexpr std::size_t kYardstickTrainChars = 1u << 20;
/// The most characters of the validation text the yardsticks read (its first ones).
constexpr std::size_t kYardstickValChars = 1u << 20;

/// The bits per byte of the validation text under both yardsticks, and what they read.
struct Yardstick {
  double bigram_bits_per_byte = 0;  ///< add-one character bigram (see the file comment)
  double xz_bits_per_byte = 0;      ///< liblzma preset 9, given the training text
  std::size_t train_chars = 0;      ///< training characters read (after the cap)
  std::size_t val_chars = 0;        ///< validation characters read (after the cap)
  std::size_t val_bytes = 0;        ///< their UTF-8 bytes, the denominator of both
};

/// Bits per byte of `val` under a character bigram model counted on `train`, add-one smoothed
/// over the distinct characters of both. Throws std::invalid_argument when `val` is empty.
double bigram_bits_per_byte(const std::u32string& train, const std::u32string& val);

/// The size in bytes of `bytes` compressed by liblzma into the xz format: LZMA2 at preset 9 with
/// its dictionary the smallest power of two >= the input (at least 4 KiB, at most 64 MiB: the
/// same output for a small input as the full dictionary, in a fraction of the memory), check
/// CRC64 — what Python's lzma.compress gives with these filters. Throws std::runtime_error when
/// liblzma fails (out of memory).
std::size_t xz_size(const std::string& bytes);

/// (xz_size(train + val) - xz_size(train)) * 8 / val.size(): the bits per byte the compressor
/// spends on `val` after `train` (UTF-8 bytes both). Throws std::invalid_argument when `val`
/// is empty.
double xz_bits_per_byte(const std::string& train, const std::string& val);

/// Both yardsticks on the last kYardstickTrainChars characters of `train` and the first
/// kYardstickValChars of `val`. Throws std::invalid_argument when `val` is empty.
Yardstick measure_yardstick(const std::u32string& train, const std::u32string& val);

}  // namespace glass
