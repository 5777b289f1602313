// Fuzzes the BPE tokenizer (data/bpe_tokenizer.hpp): its tokenizer.json reader and, on the same
// bytes read as text, its trainer and encoder. The input is the text of a tokenizer.json.
//   - bpe_from_json must either throw TokenizerJsonError naming the file (any other exception
//     or a crash is a failure) or return a tokenizer that writes and reads back to itself and
//     encodes a fixed text and the input's own characters into valid ids that decode back.
//   - When the input is valid UTF-8, a tokenizer trained on it (to a size chosen by its first
//     byte) must hold its rules (no merged token clashes with a special or byte token or has a
//     '▁' after its start) and encode the text back exactly; a size the text cannot reach must
//     be refused with std::invalid_argument.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/bpe_tokenizer.hpp"
#include "data/text.hpp"
#include "fuzz_util.hpp"

namespace {

/// `text` without '▁' (a literal '▁' decodes as a space, the documented loss).
std::u32string without_space_marks(std::u32string text) {
  for (char32_t& c : text)
    if (c == glass::BpeTokenizer::kSpaceMark) c = U' ';
  return text;
}

void check_round_trip(const glass::BpeTokenizer& tok, const std::u32string& text) {
  const std::vector<std::int32_t> ids = tok.encode(text);
  for (std::int32_t id : ids)
    GLASS_FUZZ_CHECK(id >= 0 && static_cast<std::size_t>(id) < tok.vocab_size());
  GLASS_FUZZ_CHECK(tok.decode(ids) == text);
}

void check_reader(const std::string& bytes, const std::u32string& own_text) {
  glass::BpeTokenizer tok;
  try {
    tok = glass::bpe_from_json(bytes, "fuzz/tokenizer.json");
  } catch (const glass::TokenizerJsonError& e) {
    GLASS_FUZZ_CHECK(std::strstr(e.what(), "fuzz/tokenizer.json") != nullptr);
    return;
  }
  const std::string written = glass::bpe_to_json(tok);
  const glass::BpeTokenizer back = glass::bpe_from_json(written, "round trip");
  GLASS_FUZZ_CHECK(back.chars() == tok.chars());
  GLASS_FUZZ_CHECK(back.merges() == tok.merges());
  GLASS_FUZZ_CHECK(glass::bpe_to_json(back) == written);
  check_round_trip(tok, U"Capitu olhou-me \U0001F600 e disse:  \"n\u00E3o\".\n");
  check_round_trip(tok, own_text);
}

void check_training(const std::u32string& text, std::uint8_t first_byte) {
  if (text.empty()) return;
  // The smallest vocabulary: the 259 reserved tokens and the text's characters ('▁' included);
  // one less is refused with a message that names it.
  const std::u32string norm = glass::BpeTokenizer::normalize(text);
  const std::size_t minimum = 259 + std::set<char32_t>(norm.begin(), norm.end()).size();
  try {
    glass::BpeTokenizer::train(text, minimum - 1);
    GLASS_FUZZ_CHECK(false);
  } catch (const std::invalid_argument& e) {
    GLASS_FUZZ_CHECK(std::strstr(e.what(), ("at least " + std::to_string(minimum)).c_str()) !=
                     nullptr);
  }
  const std::size_t vocab_size = minimum + first_byte % 32;
  glass::BpeTokenizer tok;
  try {
    tok = glass::BpeTokenizer::train(text, vocab_size);
  } catch (const std::invalid_argument& e) {
    GLASS_FUZZ_CHECK(std::strstr(e.what(), "larger than this text supports") != nullptr);
    return;
  }
  GLASS_FUZZ_CHECK(tok.vocab_size() == vocab_size);
  for (std::size_t id = static_cast<std::size_t>(tok.first_merge_id()); id < vocab_size; ++id) {
    const std::u32string& t = tok.token_text32(static_cast<std::int32_t>(id));
    GLASS_FUZZ_CHECK(!glass::BpeTokenizer::clashes_with_reserved(t));
    GLASS_FUZZ_CHECK(t.find(glass::BpeTokenizer::kSpaceMark, 1) == std::u32string::npos);
  }
  check_round_trip(tok, without_space_marks(text));
  GLASS_FUZZ_CHECK(glass::bpe_from_json(glass::bpe_to_json(tok), "trained").merges() ==
                   tok.merges());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  std::u32string text;
  bool valid = true;
  try {
    text = glass::utf8_to_u32(bytes);
  } catch (const glass::Utf8Error&) {
    valid = false;
  }
  // The input's own characters (at most 512, without '▁') as a text to encode.
  check_reader(bytes, without_space_marks(text.substr(0, 512)));
  if (valid && size <= 4096) check_training(text, size == 0 ? 0 : data[0]);
  return 0;
}
