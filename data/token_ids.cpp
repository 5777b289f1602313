// Compact token ids. See data/token_ids.hpp.

#include "data/token_ids.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace glass {

TokenIds::TokenIds(std::size_t vocab_size)
    : width_(vocab_size <= 256     ? 1
             : vocab_size <= 65536 ? 2
                                   : 4) {}

TokenIds TokenIds::from(const std::vector<std::int32_t>& ids) {
  const std::int32_t max = ids.empty() ? 0 : *std::max_element(ids.begin(), ids.end());
  TokenIds out(static_cast<std::size_t>(std::max(max, 0)) + 1);
  out.reserve(ids.size());
  for (std::int32_t id : ids) out.push_back(id);
  return out;
}

void TokenIds::reserve(std::size_t n) {
  switch (width_) {
    case 1:
      u8_.reserve(n);
      break;
    case 2:
      u16_.reserve(n);
      break;
    default:
      i32_.reserve(n);
  }
}

void TokenIds::push_back(std::int32_t id) {
  const bool fits =
      id >= 0 && (width_ == 4 || (width_ == 1 && id <= 0xFF) || (width_ == 2 && id <= 0xFFFF));
  if (!fits)
    throw std::out_of_range("TokenIds: id " + std::to_string(id) + " does not fit " +
                            std::to_string(width_) + " byte(s)");
  switch (width_) {
    case 1:
      u8_.push_back(static_cast<std::uint8_t>(id));
      break;
    case 2:
      u16_.push_back(static_cast<std::uint16_t>(id));
      break;
    default:
      i32_.push_back(id);
  }
  ++size_;
}

void TokenIds::shrink_to_fit() {
  u8_.shrink_to_fit();
  u16_.shrink_to_fit();
  i32_.shrink_to_fit();
}

std::vector<std::int32_t> TokenIds::to_vector(std::size_t begin, std::size_t end) const {
  std::vector<std::int32_t> out;
  out.reserve(end - begin);
  for (std::size_t i = begin; i < end; ++i) out.push_back((*this)[i]);
  return out;
}

}  // namespace glass
