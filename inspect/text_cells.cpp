// Text for the inspector's tables: visible labels, terminal column widths, padding, rounded
// numbers. See text_cells.hpp.

#include "inspect/text_cells.hpp"

#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "data/text.hpp"
#include "data/visible_text.hpp"

namespace glass {

namespace {

/// True for the code points a terminal draws two columns wide (East Asian Wide and Fullwidth:
/// Hangul Jamo, CJK, Hangul syllables, fullwidth forms, most emoji; Unicode UAX #11).
bool is_wide(char32_t c) {
  return (c >= 0x1100 && c <= 0x115F) || (c >= 0x2E80 && c <= 0x303E) ||
         (c >= 0x3041 && c <= 0x33FF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0xA000 && c <= 0xA4CF) ||
         (c >= 0xAC00 && c <= 0xD7A3) || (c >= 0xF900 && c <= 0xFAFF) ||
         (c >= 0xFE30 && c <= 0xFE4F) || (c >= 0xFF00 && c <= 0xFF60) ||
         (c >= 0xFFE0 && c <= 0xFFE6) || (c >= 0x1F300 && c <= 0x1F64F) ||
         (c >= 0x1F900 && c <= 0x1F9FF) || (c >= 0x20000 && c <= 0x3FFFD);
}

/// True for the code points that take no column of their own: combining marks (they sit on the
/// character before), zero-width and format characters (U+200B..U+200F joiners and marks,
/// U+2060 word joiner, U+FEFF), variation selectors (U+FE00..U+FE0F, U+E0100..U+E01EF).
bool is_invisible(char32_t c) {
  return (c >= 0x0300 && c <= 0x036F) || (c >= 0x1AB0 && c <= 0x1AFF) ||
         (c >= 0x1DC0 && c <= 0x1DFF) || (c >= 0x20D0 && c <= 0x20FF) ||
         (c >= 0xFE20 && c <= 0xFE2F) || c == 0x00AD || (c >= 0x180B && c <= 0x180F) ||
         (c >= 0x200B && c <= 0x200F) || (c >= 0x202A && c <= 0x202E) ||
         (c >= 0x2060 && c <= 0x2064) || c == 0xFEFF || (c >= 0xFE00 && c <= 0xFE0F) ||
         (c >= 0xE0100 && c <= 0xE01EF);
}

}  // namespace

std::string visible_char(char32_t c) {
  if (c == U' ') return "␣";
  if (c == U'\n') return "⏎";
  if (c == U'\t') return "⇥";
  if (is_control_char(c)) return control_glyph(c);  // C0, DEL, C1: as every terminal writer
  if (is_invisible(c)) return fmt::format("U+{:04X}", static_cast<std::uint32_t>(c));
  return char_to_utf8(c);
}

namespace text_cells {

std::size_t display_width(const std::string& s) {
  std::size_t w = 0;
  for (std::size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    const std::size_t n = b < 0x80         ? 1
                          : (b >> 5) == 6  ? 2
                          : (b >> 4) == 14 ? 3
                          : (b >> 3) == 30 ? 4
                                           : 1;
    char32_t c = n == 1 ? b : b & (0x7F >> n);
    for (std::size_t k = 1; k < n && i + k < s.size(); ++k)
      c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    w += is_invisible(c) ? 0 : is_wide(c) ? 2 : 1;
    i += n;
  }
  return w;
}

std::string pad_left(const std::string& s, std::size_t width) {
  std::size_t w = display_width(s);
  return w >= width ? s : std::string(width - w, ' ') + s;
}

std::string pad_right(const std::string& s, std::size_t width) {
  std::size_t w = display_width(s);
  return w >= width ? s : s + std::string(width - w, ' ');
}

std::string format_value(double v, bool integral) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::string s = integral ? fmt::format("{:.0f}", v) : fmt::format("{:.3f}", v);
  if (s == "-0.000" || s == "-0") s.erase(0, 1);
  return s;
}

bool all_integral(const Array& a) {
  for (std::size_t i = 0; i < a.size(); ++i) {
    double v = a.data()[i];
    if (std::isfinite(v) && v != std::floor(v)) return false;
  }
  return true;
}

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace text_cells
}  // namespace glass
