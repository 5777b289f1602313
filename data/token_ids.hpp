#pragma once
// Token ids of a whole corpus, stored in the smallest unsigned type that holds them: 1 byte per
// id when the vocabulary has at most 256 entries, 2 bytes up to 65536, else 4. A corpus of N
// characters then takes N (or 2N) bytes instead of the 4N of int32 ids.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace glass {

/// A sequence of token ids in [0, vocab_size) of 1, 2 or 4 bytes each (chosen from vocab_size).
class TokenIds {
 public:
  TokenIds() = default;
  /// Empty, for ids in [0, vocab_size): 1 byte per id up to 256, 2 up to 65536, else 4.
  explicit TokenIds(std::size_t vocab_size);
  /// A copy of `ids` (which must be >= 0), in the smallest type that holds their maximum.
  static TokenIds from(const std::vector<std::int32_t>& ids);

  void reserve(std::size_t n);
  /// Appends an id. Throws std::out_of_range when it is negative or does not fit the type.
  void push_back(std::int32_t id);
  /// Frees the capacity beyond size().
  void shrink_to_fit();

  std::size_t size() const { return size_; }
  /// The id at `i` (no bounds check, like std::vector::operator[]).
  std::int32_t operator[](std::size_t i) const {
    switch (width_) {
      case 1:
        return u8_[i];
      case 2:
        return u16_[i];
      default:
        return i32_[i];
    }
  }
  /// 1, 2 or 4.
  std::size_t bytes_per_id() const { return width_; }
  /// The ids [begin, end) as int32.
  std::vector<std::int32_t> to_vector(std::size_t begin, std::size_t end) const;

 private:
  std::size_t width_ = 4;
  std::size_t size_ = 0;
  std::vector<std::uint8_t> u8_;
  std::vector<std::uint16_t> u16_;
  std::vector<std::int32_t> i32_;
};

}  // namespace glass
