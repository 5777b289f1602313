// UTF-8 decoding with utfcpp and corpus loading (BOM dropped, CRLF -> LF). See data/text.hpp.

#include "data/text.hpp"

#include <fmt/format.h>
#include <utf8.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

namespace glass {

namespace {

/// Why utfcpp rejected a sequence, in words a learner can act on.
const char* describe_utf8_error(utf8::internal::utf_error err) {
  switch (err) {
    case utf8::internal::INVALID_LEAD:
      return "not a valid first byte of a UTF-8 sequence";
    case utf8::internal::INCOMPLETE_SEQUENCE:
      return "a multi-byte sequence is cut short by a byte that does not continue it";
    case utf8::internal::NOT_ENOUGH_ROOM:
      return "a multi-byte sequence is cut short by the end of the input";
    case utf8::internal::OVERLONG_SEQUENCE:
      return "overlong encoding";
    case utf8::internal::INVALID_CODE_POINT:
      return "encodes an invalid code point (surrogate or above U+10FFFF)";
    default:
      return "invalid UTF-8";
  }
}

}  // namespace

std::u32string utf8_to_u32(const std::string& bytes) {
  std::u32string out;
  out.reserve(bytes.size());
  auto it = bytes.begin();
  const auto end = bytes.end();
  while (it != end) {
    std::uint32_t cp = 0;
    auto start = it;
    const auto err = utf8::internal::validate_next(it, end, cp);
    if (err != utf8::internal::UTF8_OK) {
      const std::size_t offset = static_cast<std::size_t>(start - bytes.begin());
      const unsigned byte = static_cast<unsigned char>(*start);
      throw Utf8Error(fmt::format("invalid UTF-8 at byte offset {} (byte 0x{:02X}): {}", offset,
                                  byte, describe_utf8_error(err)),
                      offset);
    }
    out.push_back(static_cast<char32_t>(cp));
  }
  return out;
}

std::string u32_to_utf8(const std::u32string& text) {
  std::string out;
  out.reserve(text.size());
  for (char32_t c : text) out += char_to_utf8(c);
  return out;
}

std::string char_to_utf8(char32_t c) {
  std::string out;
  const auto cp = static_cast<std::uint32_t>(c);
  if (!utf8::internal::is_code_point_valid(cp)) {
    throw std::invalid_argument(fmt::format("U+{:04X} is not a valid Unicode code point", cp));
  }
  utf8::append(cp, std::back_inserter(out));
  return out;
}

std::string describe_char(char32_t c) {
  const auto cp = static_cast<std::uint32_t>(c);
  std::string shown;
  switch (cp) {
    case '\n': shown = "\\n"; break;
    case '\r': shown = "\\r"; break;
    case '\t': shown = "\\t"; break;
    case 0: shown = "\\0"; break;
    default:
      if (cp < 0x20 || cp == 0x7F || !utf8::internal::is_code_point_valid(cp)) {
        shown = "?";
      } else {
        shown = char_to_utf8(c);
      }
  }
  return fmt::format("'{}' (U+{:04X})", shown, cp);
}

std::u32string load_text(const std::string& path, TextInfo* info) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw std::runtime_error(
        fmt::format("cannot read text file '{}': it is a directory, not a file", path));
  }
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int e = errno;
    throw std::runtime_error(fmt::format("cannot read text file '{}': {}", path,
                                         e ? std::strerror(e) : "cannot open"));
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) {
    throw std::runtime_error(fmt::format("cannot read text file '{}': read error", path));
  }
  std::string bytes = buffer.str();
  TextInfo local;
  local.bytes = bytes.size();

  if (bytes.empty()) {
    throw std::runtime_error(fmt::format(
        "text file '{}' is empty: a corpus needs some text", path));
  }
  if (bytes.find('\0') != std::string::npos) {
    throw std::runtime_error(fmt::format(
        "file '{}' looks binary (it contains a NUL byte at offset {}): expected UTF-8 text", path,
        bytes.find('\0')));
  }

  std::size_t start = 0;
  if (bytes.size() >= 3 && static_cast<unsigned char>(bytes[0]) == 0xEF &&
      static_cast<unsigned char>(bytes[1]) == 0xBB && static_cast<unsigned char>(bytes[2]) == 0xBF) {
    local.had_bom = true;
    start = 3;
  }

  // Validate before CRLF conversion so that reported offsets are offsets into the file.
  std::u32string decoded;
  try {
    decoded = utf8_to_u32(start == 0 ? bytes : bytes.substr(start));
  } catch (const Utf8Error& e) {
    const std::size_t offset = e.byte_offset() + start;
    const unsigned byte = static_cast<unsigned char>(bytes[offset]);
    std::string reason = e.what();
    const auto colon = reason.find("): ");
    reason = colon == std::string::npos ? std::string("invalid UTF-8") : reason.substr(colon + 3);
    throw Utf8Error(fmt::format("file '{}' is not valid UTF-8: byte offset {} (byte 0x{:02X}): {}",
                                path, offset, byte, reason),
                    offset);
  }

  std::u32string text;
  text.reserve(decoded.size());
  for (std::size_t i = 0; i < decoded.size(); ++i) {
    if (decoded[i] == U'\r' && i + 1 < decoded.size() && decoded[i + 1] == U'\n') {
      ++local.crlf_converted;
      continue;  // the LF that follows is kept
    }
    text.push_back(decoded[i]);
  }
  if (text.empty()) {
    throw std::runtime_error(
        fmt::format("text file '{}' holds no text (only a byte order mark)", path));
  }
  if (info) *info = local;
  return text;
}

}  // namespace glass
