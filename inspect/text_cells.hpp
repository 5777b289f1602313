#pragma once
// Text for the inspector's tables: characters as visible labels, the columns a UTF-8 string takes
// in a terminal, padding to a column width, numbers rounded for a cell. Shared by the data
// functions (their error messages) and the terminal view.

#include <cstddef>
#include <string>
#include <vector>

#include "autograd/tensor.hpp"

namespace glass {

/// A character as a visible label (UTF-8): ' ' -> "␣", '\n' -> "⏎", '\t' -> "⇥", other
/// control characters (C0, DEL, C1) -> their control_glyph (data/visible_text.hpp: "␀", "␡",
/// "U+0085"), characters that draw
/// nothing on their own (combining marks, zero-width joiners, variation selectors) -> their code
/// point, e.g. "U+200D"; others unchanged.
std::string visible_char(char32_t c);

namespace text_cells {

/// The columns a UTF-8 string takes in a terminal: 2 per wide character (East Asian Wide and
/// Fullwidth, Unicode UAX #11), 0 per character that draws nothing on its own, 1 per other code
/// point (invalid bytes count 1 each).
std::size_t display_width(const std::string& s);

/// `s` padded with spaces on the left (pad_left) or right (pad_right) to `width` columns
/// (display_width); a wider `s` is returned unchanged.
std::string pad_left(const std::string& s, std::size_t width);
std::string pad_right(const std::string& s, std::size_t width);

/// A number rounded for a table: integers stay integers ("0", "1") when `integral`, others get
/// 3 decimals; "-0.000" is printed as "0.000"; "nan", "inf", "-inf" as such.
std::string format_value(double v, bool integral);

/// True when every finite entry of `a` is a whole number (a mask, token ids).
bool all_integral(const Array& a);

/// The items separated by `sep`.
std::string join(const std::vector<std::string>& items, const std::string& sep);

/// True when `s` begins with `prefix`.
bool starts_with(const std::string& s, const std::string& prefix);

}  // namespace text_cells
}  // namespace glass
