#pragma once
// Reading text: UTF-8 decoding (utfcpp) and corpus loading with the project's text conventions.

#include <cstddef>
#include <stdexcept>
#include <string>

namespace glass {

/// Invalid UTF-8 input. `byte_offset()` is the offset of the first bad byte.
class Utf8Error : public std::runtime_error {
 public:
  Utf8Error(const std::string& what, std::size_t byte_offset)
      : std::runtime_error(what), byte_offset_(byte_offset) {}
  std::size_t byte_offset() const { return byte_offset_; }

 private:
  std::size_t byte_offset_;
};

/// Decodes UTF-8 bytes into Unicode code points. Throws Utf8Error naming the byte offset
/// (and the byte's value in hex) of the first invalid sequence.
std::u32string utf8_to_u32(const std::string& bytes);
/// Encodes code points as UTF-8.
std::string u32_to_utf8(const std::u32string& text);
/// One code point as UTF-8 (for messages).
std::string char_to_utf8(char32_t c);
/// A printable description of a character for error messages, e.g. "'é' (U+00E9)" or
/// "'\n' (U+000A)".
std::string describe_char(char32_t c);

/// True for a whitespace character (Unicode White_Space: tab, newline, CR, space, NBSP, the
/// typographic spaces U+2000..U+200A, ideographic space, ...; also the BOM U+FEFF).
bool is_blank_char(char32_t c);

/// The first `count` characters of `text` from its first character that is not whitespace
/// (is_blank_char): the start of a text worth showing, where a license file, a Gutenberg header
/// or a centred title begins with blank lines. "" when `text` holds only whitespace.
std::u32string first_nonblank_chars(const std::u32string& text, std::size_t count);

/// What load_text did to the raw file, so callers can say it once in the log.
struct TextInfo {
  bool had_bom = false;            ///< a leading UTF-8 BOM was dropped
  std::size_t crlf_converted = 0;  ///< number of CRLF pairs turned into LF
  std::size_t bytes = 0;           ///< size of the file in bytes
};

/// Largest text file load_text accepts, in bytes (the decoded text takes 4 bytes per character).
constexpr std::size_t kMaxTextBytes = 1'000'000'000;

/// Reads a UTF-8 text file: drops a leading BOM, turns CRLF into LF, decodes to code points.
/// Throws std::runtime_error with a clear message for a missing/unreadable file, an empty file
/// (or one holding only a BOM), a file that looks binary (NUL bytes; found while reading, so an
/// endless device such as /dev/zero stops at once), a file above kMaxTextBytes, and Utf8Error
/// for invalid UTF-8 (message names the file and the byte offset).
std::u32string load_text(const std::string& path, TextInfo* info = nullptr);

}  // namespace glass
