// Control characters made visible (see visible_text.hpp).

#include "data/visible_text.hpp"

#include <cstdint>
#include <utility>

#include <fmt/format.h>

#include "data/text.hpp"

namespace glass {

namespace {

/// The code point that starts at utf8[i] and its length in bytes; {U+FFFD, 1} for a byte that
/// does not start a valid sequence (a stray continuation byte, a truncated or overlong
/// sequence, a surrogate, a value past U+10FFFF).
std::pair<char32_t, std::size_t> next_code_point(std::string_view s, std::size_t i) {
  constexpr std::pair<char32_t, std::size_t> kInvalid{U'\uFFFD', 1};
  const auto b = static_cast<unsigned char>(s[i]);
  if (b < 0x80) return {b, 1};
  const std::size_t n = (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
  if (n == 0 || i + n > s.size()) return kInvalid;
  char32_t c = b & (0x7F >> n);
  for (std::size_t k = 1; k < n; ++k) {
    const auto cont = static_cast<unsigned char>(s[i + k]);
    if ((cont & 0xC0) != 0x80) return kInvalid;
    c = (c << 6) | (cont & 0x3F);
  }
  constexpr char32_t kSmallest[5] = {0, 0, 0x80, 0x800, 0x10000};  // below: overlong
  if (c < kSmallest[n] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return kInvalid;
  return {c, n};
}

}  // namespace

bool is_control_char(char32_t c) { return c < 0x20 || (c >= 0x7F && c <= 0x9F); }

std::string control_glyph(char32_t c) {
  if (c < 0x20) return char_to_utf8(0x2400 + c);  // Unicode's control pictures
  if (c == 0x7F) return "\u2421";                 // ␡
  if (c >= 0x80 && c <= 0x9F) return fmt::format("U+{:04X}", static_cast<std::uint32_t>(c));
  return char_to_utf8(c);
}

std::string escape_controls(std::string_view utf8) {
  std::string out;
  out.reserve(utf8.size());
  for (std::size_t i = 0; i < utf8.size();) {
    const auto [c, n] = next_code_point(utf8, i);
    if (c == U'\uFFFD' && n == 1) {
      out += "\xEF\xBF\xBD";
    } else if (is_control_char(c) && c != U'\n' && c != U'\t') {
      out += control_glyph(c);
    } else {
      out.append(utf8.substr(i, n));
    }
    i += n;
  }
  return out;
}

}  // namespace glass
