// One interface over the character and BPE tokenizers. See data/text_tokenizer.hpp.

#include "data/text_tokenizer.hpp"

#include <fmt/format.h>

#include "data/text.hpp"

namespace glass {

TokenizerKind tokenizer_kind_from_name(const std::string& name) {
  if (name == "char") return TokenizerKind::kChar;
  if (name == "bpe") return TokenizerKind::kBpe;
  throw std::invalid_argument(fmt::format(
      "unknown tokenizer \"{}\": use \"char\" (one token per character) or \"bpe\" (subwords)",
      name));
}

const char* tokenizer_kind_name(TokenizerKind kind) {
  return kind == TokenizerKind::kChar ? "char" : "bpe";
}

std::size_t TextTokenizer::vocab_size() const {
  return std::visit([](const auto& t) { return t.vocab_size(); }, impl_);
}

std::vector<std::int32_t> TextTokenizer::encode(const std::u32string& text) const {
  return std::visit([&text](const auto& t) { return t.encode(text); }, impl_);
}

TokenIds TextTokenizer::encode_compact(const std::u32string& text) const {
  return std::visit([&text](const auto& t) { return t.encode_compact(text); }, impl_);
}

std::u32string TextTokenizer::decode(const std::vector<std::int32_t>& ids) const {
  return std::visit([&ids](const auto& t) { return t.decode(ids); }, impl_);
}

std::string TextTokenizer::token_text(std::int32_t id) const {
  if (const Tokenizer* c = chars()) return char_to_utf8(c->char_of(id));
  return bpe()->token_text(id);
}

std::string StreamDecoder::push(std::int32_t id) {
  if (!bpe_) return chars_->decode_utf8({id});
  pending_.push_back(id);
  const std::string decoded = bpe_->decode_utf8(pending_, /*drop_dummy_prefix=*/false);
  // A byte token whose character still misses bytes decodes to U+FFFD at the end: wait.
  const bool waiting = id >= BpeTokenizer::kFirstByteId && id < BpeTokenizer::kFirstCharId &&
                       pending_.size() < 4 && decoded.size() >= 3 &&
                       decoded.compare(decoded.size() - 3, 3, "\xEF\xBF\xBD") == 0;
  if (waiting) return "";
  pending_.clear();
  return decoded;
}

std::string StreamDecoder::flush() {
  if (pending_.empty()) return "";
  const std::string rest = bpe_->decode_utf8(pending_, /*drop_dummy_prefix=*/false);
  pending_.clear();
  return rest;
}

}  // namespace glass
