// has_raw_control: the check that no byte a terminal acts on is in a program's text output.
#pragma once

#include <cstddef>
#include <string>

namespace glass_test {

/// True when `s` holds a byte a terminal acts on: below 0x20 other than '\n' and '\t', DEL
/// (0x7F), or the UTF-8 encoding of a C1 control (C2 80..C2 9F).
inline bool has_raw_control(const std::string& s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto b = static_cast<unsigned char>(s[i]);
    if ((b < 0x20 && b != '\n' && b != '\t') || b == 0x7F) return true;
    if (b == 0xC2 && i + 1 < s.size() && (static_cast<unsigned char>(s[i + 1]) & 0xE0) == 0x80)
      return true;
  }
  return false;
}

}  // namespace glass_test
