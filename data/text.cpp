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

/// Where and why decoding stopped.
struct Utf8Failure {
  std::size_t offset = 0;  ///< byte offset of the first byte of the invalid sequence
  unsigned byte = 0;       ///< that byte's value
  utf8::internal::utf_error error = utf8::internal::UTF8_OK;
};

/// Decodes bytes[start:] into `out`, stopping at the first invalid sequence.
/// Returns false and fills `failure` (offsets count from the beginning of `bytes`).
bool decode_utf8(const std::string& bytes, std::size_t start, std::u32string& out,
                 Utf8Failure& failure) {
  out.reserve(bytes.size() - start);
  auto it = bytes.begin() + static_cast<std::ptrdiff_t>(start);
  const auto end = bytes.end();
  while (it != end) {
    std::uint32_t cp = 0;
    const auto sequence_start = it;
    // validate_next leaves `it` at the start of the sequence when it fails.
    const auto err = utf8::internal::validate_next(it, end, cp);
    if (err != utf8::internal::UTF8_OK) {
      failure.offset = static_cast<std::size_t>(sequence_start - bytes.begin());
      failure.byte = static_cast<unsigned char>(*sequence_start);
      failure.error = err;
      return false;
    }
    out.push_back(static_cast<char32_t>(cp));
  }
  return true;
}

std::string describe_failure(const Utf8Failure& f) {
  return fmt::format("byte offset {} (byte 0x{:02X}): {}", f.offset, f.byte,
                     describe_utf8_error(f.error));
}

}  // namespace

std::u32string utf8_to_u32(const std::string& bytes) {
  std::u32string out;
  Utf8Failure failure;
  if (!decode_utf8(bytes, 0, out, failure)) {
    throw Utf8Error("invalid UTF-8 at " + describe_failure(failure), failure.offset);
  }
  return out;
}

std::string u32_to_utf8(const std::u32string& text) {
  std::string out;
  out.reserve(text.size());
  for (char32_t c : text) out += char_to_utf8(c);
  return out;
}

bool is_blank_char(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000 || c == 0xFEFF;
}

std::u32string first_nonblank_chars(const std::u32string& text, std::size_t count) {
  std::size_t start = 0;
  while (start < text.size() && is_blank_char(text[start])) ++start;
  return text.substr(start, count);
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
    case '\n':
      shown = "\\n";
      break;
    case '\r':
      shown = "\\r";
      break;
    case '\t':
      shown = "\\t";
      break;
    case 0:
      shown = "\\0";
      break;
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
    throw std::runtime_error(
        fmt::format("cannot read text file '{}': {}", path, e ? std::strerror(e) : "cannot open"));
  }
  // Read in chunks, checking each for NUL as it arrives and the total against kMaxTextBytes, so
  // that an endless or huge input (/dev/zero, /dev/urandom, a disk image) stops at once instead
  // of filling the memory.
  std::string bytes;
  // Room for the whole file at once (when its size is known), so that appending the chunks
  // never doubles the buffer: the text's memory stays near its size.
  if (const auto size = std::filesystem::file_size(path, ec); !ec && size <= kMaxTextBytes)
    bytes.reserve(static_cast<std::size_t>(size));
  std::string chunk(1 << 16, '\0');
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    const std::size_t got = static_cast<std::size_t>(in.gcount());
    const std::size_t nul = chunk.find('\0');
    if (nul < got) {
      throw std::runtime_error(fmt::format(
          "file '{}' looks binary (it contains a NUL byte at offset {}): expected UTF-8 text", path,
          bytes.size() + nul));
    }
    if (bytes.size() + got > kMaxTextBytes) {
      throw std::runtime_error(fmt::format(
          "text file '{}' is larger than {} MB: GlassLLM keeps the whole text in memory; use a "
          "smaller part of it",
          path, kMaxTextBytes / 1000000));
    }
    bytes.append(chunk.data(), got);
  }
  if (in.bad()) {
    throw std::runtime_error(fmt::format("cannot read text file '{}': read error", path));
  }
  TextInfo local;
  local.bytes = bytes.size();

  if (bytes.empty()) {
    throw std::runtime_error(
        fmt::format("text file '{}' is empty: a corpus needs some text", path));
  }

  std::size_t start = 0;
  if (bytes.size() >= 3 && static_cast<unsigned char>(bytes[0]) == 0xEF &&
      static_cast<unsigned char>(bytes[1]) == 0xBB &&
      static_cast<unsigned char>(bytes[2]) == 0xBF) {
    local.had_bom = true;
    start = 3;
  }

  // Decode before converting CRLF, so that a reported offset is an offset into the file.
  std::u32string decoded;
  Utf8Failure failure;
  if (!decode_utf8(bytes, start, decoded, failure)) {
    throw Utf8Error(
        fmt::format("file '{}' is not valid UTF-8: {}", path, describe_failure(failure)),
        failure.offset);
  }

  std::string().swap(bytes);  // the file's bytes are no longer needed: free them now

  // CRLF -> LF in place (the text only shrinks), so that no second copy of it is ever held.
  std::u32string text = std::move(decoded);
  std::size_t kept = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == U'\r' && i + 1 < text.size() && text[i + 1] == U'\n') {
      ++local.crlf_converted;
      continue;  // the LF that follows is kept
    }
    text[kept++] = text[i];
  }
  text.resize(kept);
  if (text.empty()) {
    throw std::runtime_error(
        fmt::format("text file '{}' holds no text (only a byte order mark)", path));
  }
  if (info) *info = local;
  return text;
}

}  // namespace glass
