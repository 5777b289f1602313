#pragma once
// Helpers shared by data/bpe_tokenizer.cpp and data/bpe_train.cpp (internal to data/).

#include <cstdint>

namespace glass::bpe_detail {

/// The two ids of an adjacent pair packed into one key: left in the high 32 bits.
inline std::uint64_t pair_key(std::int32_t left, std::int32_t right) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32) |
         static_cast<std::uint32_t>(right);
}

/// Whether `c` is a Unicode scalar value (a code point that UTF-8 may encode).
inline bool is_scalar_value(char32_t c) { return c <= 0x10FFFF && (c < 0xD800 || c > 0xDFFF); }

}  // namespace glass::bpe_detail
