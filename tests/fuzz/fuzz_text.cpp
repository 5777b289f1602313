// Fuzzes the UTF-8 text reader and the character tokenizer (data/text.hpp, data/tokenizer.hpp).
// The input is the bytes of a text file. In memory: decoding must either succeed and encode
// back to the same bytes, or throw Utf8Error at an offset before which everything decodes; the
// tokenizer built from the text must encode and decode it back (characters beyond the
// vocabulary cap as the unknown id). Through a file: load_text must return the decoded text
// without BOM and with CRLF turned into LF, or throw std::runtime_error for an empty, binary or
// invalid file.

#include <cstddef>
#include <cstdint>
#include <string>

#include "data/text.hpp"
#include "data/tokenizer.hpp"
#include "fuzz_util.hpp"

namespace {

using glass::fuzz::scratch_dir;

void check_tokenizer(const std::u32string& text, std::size_t vocab_cap) {
  const glass::Tokenizer tok = glass::Tokenizer::from_text(text, vocab_cap);
  GLASS_FUZZ_CHECK(tok.vocab_size() <= vocab_cap);
  std::size_t unknown = 0;
  const std::vector<std::int32_t> ids = tok.encode(text, /*map_unknown=*/true, &unknown);
  GLASS_FUZZ_CHECK(ids.size() == text.size());
  std::u32string expected = text;
  std::size_t expected_unknown = 0;
  for (char32_t& c : expected) {
    if (!tok.contains(c)) {
      c = U'\uFFFD';
      ++expected_unknown;
    }
  }
  GLASS_FUZZ_CHECK(unknown == expected_unknown);
  GLASS_FUZZ_CHECK(tok.decode(ids) == expected);
  bool threw = false;
  try {
    tok.encode(text);
  } catch (const glass::UnknownCharacterError& e) {
    threw = true;
    GLASS_FUZZ_CHECK(e.position() < text.size() && !tok.contains(e.character()));
  }
  GLASS_FUZZ_CHECK(threw == (unknown > 0));
  // The same vocabulary from its character list (as a checkpoint stores it) gives the same ids.
  const glass::Tokenizer again(tok.chars());
  GLASS_FUZZ_CHECK(again.encode(text, true) == ids);
  for (char32_t c : tok.chars()) GLASS_FUZZ_CHECK(!glass::describe_char(c).empty());
}

/// What load_text must return for `bytes`: BOM dropped, CRLF -> LF (computed here on its own).
std::u32string expected_load(const std::string& bytes) {
  const bool bom = bytes.compare(0, 3, "\xEF\xBB\xBF") == 0;
  const std::u32string decoded = glass::utf8_to_u32(bytes.substr(bom ? 3 : 0));
  std::u32string out;
  for (std::size_t i = 0; i < decoded.size(); ++i) {
    if (decoded[i] == U'\r' && i + 1 < decoded.size() && decoded[i + 1] == U'\n') continue;
    out.push_back(decoded[i]);
  }
  return out;
}

void check_load_text(const std::string& bytes) {
  const std::string path = scratch_dir() + "/text.txt";
  glass::fuzz::write_plain(path, bytes);
  std::u32string loaded;
  try {
    loaded = glass::load_text(path);
  } catch (const std::runtime_error&) {
    // Refused: must be one of the documented reasons.
    bool valid = true;
    std::u32string expected;
    try {
      expected = expected_load(bytes);
    } catch (const glass::Utf8Error&) {
      valid = false;
    }
    GLASS_FUZZ_CHECK(!valid || expected.empty() || bytes.find('\0') != std::string::npos);
    return;
  }
  GLASS_FUZZ_CHECK(bytes.find('\0') == std::string::npos);
  GLASS_FUZZ_CHECK(!loaded.empty());
  GLASS_FUZZ_CHECK(loaded == expected_load(bytes));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);

  std::u32string text;
  try {
    text = glass::utf8_to_u32(bytes);
    GLASS_FUZZ_CHECK(glass::u32_to_utf8(text) == bytes);
  } catch (const glass::Utf8Error& e) {
    GLASS_FUZZ_CHECK(e.byte_offset() < size);
    text = glass::utf8_to_u32(bytes.substr(0, e.byte_offset()));  // the valid prefix decodes
  }

  // A vocabulary cap from 2 (only one known character) up, chosen by the input's first byte.
  const std::size_t vocab_cap = size == 0 ? 1024 : 2 + data[0] % 64;
  check_tokenizer(text, vocab_cap);
  check_load_text(bytes);
  return 0;
}
