// One interface over the character and BPE tokenizers. See data/text_tokenizer.hpp.

#include "data/text_tokenizer.hpp"

#include <cmath>

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

std::size_t split_point(const std::u32string& text, TokenizerKind kind) {
  const std::size_t at =
      static_cast<std::size_t>(std::floor(static_cast<double>(text.size()) * 0.9));
  if (kind == TokenizerKind::kChar) return at;
  const std::size_t space = text.find(U' ', at);
  return space == std::u32string::npos ? at : space;
}

SplitIds TextTokenizer::encode_split(const std::u32string& text, bool map_unknown) const {
  SplitIds split;
  const std::size_t cut = split_point(text, kind());
  split.val_bytes = u32_to_utf8(text.substr(cut)).size();
  if (const Tokenizer* c = chars()) {  // one id per character: the cut is the same in ids
    split.ids = c->encode_compact(text, map_unknown, &split.unknown);
    split.n_train = cut;
    return split;
  }
  const BpeTokenizer& b = *bpe();
  split.ids = b.encode_compact(text);
  const std::vector<std::int32_t> train_ids = b.encode(text.substr(0, cut));
  split.n_train = train_ids.size();
  bool prefix = train_ids.size() < split.ids.size();
  for (std::size_t i = 0; prefix && i < train_ids.size(); ++i)
    prefix = split.ids[i] == train_ids[i];
  if (prefix) return split;
  std::vector<std::int32_t> all = train_ids;
  const std::vector<std::int32_t> val_ids = b.encode(text.substr(cut));
  all.insert(all.end(), val_ids.begin(), val_ids.end());
  TokenIds both(b.vocab_size());
  both.reserve(all.size());
  for (const std::int32_t id : all) both.push_back(id);
  split.ids = std::move(both);
  return split;
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

std::string TextTokenizer::decode_continuation(const std::vector<std::int32_t>& ids) const {
  if (const Tokenizer* c = chars()) return c->decode_utf8(ids);
  return bpe()->decode_utf8(ids, /*drop_dummy_prefix=*/false);
}

std::string TextTokenizer::token_text(std::int32_t id) const {
  if (const Tokenizer* c = chars()) return char_to_utf8(c->char_of(id));
  return bpe()->token_text(id);
}

std::string TextTokenizer::vocabulary_text() const {
  const std::size_t v = vocab_size();
  if (kind() == TokenizerKind::kBpe) return fmt::format("a BPE vocabulary of {} tokens", v);
  return fmt::format("vocabulary {} ({} characters + the unknown id 0)", v, v > 0 ? v - 1 : 0);
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
