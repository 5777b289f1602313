#pragma once
// Control characters made visible. A model's text can hold any character of its vocabulary:
// NUL, ^D, ESC (a byte token 0x1B, or a character learned from the corpus), C1 controls. Written
// raw to a terminal they move the cursor, clear the screen or retitle the window; every writer
// of text to a terminal (glass sample, chat, the training log's samples, the inspector's labels)
// shows them through these functions instead.
//
// The controls are C0 (U+0000..U+001F), DEL (U+007F) and C1 (U+0080..U+009F), as ECMA-48 names
// them. A C0 control is shown as its Unicode control picture (U+2400 + c: NUL -> "␀", ESC ->
// "␛"), DEL as "␡", a C1 control (which has no picture) as its code point, "U+0085".

#include <string>
#include <string_view>

namespace glass {

/// True for a C0 control (U+0000..U+001F), DEL (U+007F) or a C1 control (U+0080..U+009F).
bool is_control_char(char32_t c);

/// The visible escape of a control character (is_control_char): "␀".."␟" (U+2400 + c) for C0,
/// "␡" for DEL, "U+0080".."U+009F" for C1. Any other character: as UTF-8, unchanged
/// (std::invalid_argument for a value that is no code point).
std::string control_glyph(char32_t c);

/// `utf8` with every control character except newline and tab replaced by its control_glyph,
/// so that writing it to a terminal runs no terminal command. Bytes that are not valid UTF-8
/// become U+FFFD each (as a BPE byte decoder shows them); the rest is unchanged. Never throws on
/// any input.
std::string escape_controls(std::string_view utf8);

}  // namespace glass
