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

const char* TextTokenizer::unit(bool plural) const {
  if (kind() == TokenizerKind::kChar) return plural ? "characters" : "character";
  return plural ? "tokens" : "token";
}

std::size_t split_point(const std::u32string& text, TokenizerKind kind) {
  const std::size_t at =
      static_cast<std::size_t>(std::floor(static_cast<double>(text.size()) * 0.9));
  if (kind == TokenizerKind::kChar) return at;
  const std::size_t space = text.find(U' ', at);
  return space == std::u32string::npos ? at : space;
}

SplitIds TextTokenizer::encode_split(const std::u32string& text, UnknownPolicy policy) const {
  SplitIds split;
  const std::size_t cut = split_point(text, kind());
  split.val_bytes = u32_to_utf8(text.substr(cut)).size();
  if (chars() != nullptr) {  // one id per character: the cut is the same in ids
    split.ids = encode_compact(text, policy, &split.unknown);
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

std::string TextTokenizer::describe(bool count_ids) const {
  const bool chat = has_chat_tokens();
  const Tokenizer* c = chars();
  if (c == nullptr) {
    if (count_ids)
      return fmt::format("a BPE vocabulary of {} tokens{}", vocab_size(),
                         chat ? " (2 of them chat tokens)" : "");
    return fmt::format("a BPE vocabulary of {} tokens{}", vocab_size() - (chat ? 2 : 0),
                       chat ? " and 2 chat tokens" : "");
  }
  const std::size_t n = c->chars().size();
  if (count_ids)
    return fmt::format("vocabulary {} ({} characters + the unknown id 0{})", vocab_size(), n,
                       chat ? " + 2 chat tokens" : "");
  return fmt::format("a character vocabulary of {} characters{}", n,
                     chat ? " and 2 chat tokens" : "");
}

TextTokenizer TextTokenizer::with_chat_tokens() const {
  if (has_chat_tokens()) return *this;
  const std::vector<std::u32string> markers = {kImStartText, kImEndText};
  if (const Tokenizer* c = chars()) {
    std::vector<std::u32string> specials = c->specials();
    specials.insert(specials.end(), markers.begin(), markers.end());
    return TextTokenizer(Tokenizer(c->chars(), std::move(specials)));
  }
  return TextTokenizer(bpe()->with_added(markers));
}

bool TextTokenizer::has_chat_tokens() const {
  return special_id(SpecialToken::kImStart).has_value() &&
         special_id(SpecialToken::kImEnd).has_value();
}

const std::vector<char32_t>& TextTokenizer::characters() const {
  return std::visit([](const auto& t) -> const std::vector<char32_t>& { return t.chars(); }, impl_);
}

bool TextTokenizer::knows(char32_t c) const {
  const Tokenizer* c_tok = chars();
  return c_tok == nullptr || c_tok->contains(c);  // BPE: byte fallback spells every character
}

std::vector<std::int32_t> TextTokenizer::encode(const std::u32string& text) const {
  return std::visit([&text](const auto& t) { return t.encode(text); }, impl_);
}

namespace {

/// The error of a prompt with characters outside a character model's vocabulary: the first
/// few with their positions, and how many (a long prompt in another script would list hundreds).
UnknownCharacterError unknown_characters_error(const Tokenizer& tokenizer,
                                               const std::u32string& text) {
  constexpr std::size_t kShown = 5;
  std::string shown;
  std::size_t count = 0, first = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (tokenizer.contains(text[i])) continue;
    if (count == 0) first = i;
    if (count < kShown)
      shown +=
          (count == 0 ? "" : ", ") + describe_char(text[i]) + " at position " + std::to_string(i);
    ++count;
  }
  if (count > kShown) shown += fmt::format(", and {} more", count - kShown);
  return UnknownCharacterError(
      fmt::format("the prompt has {} character(s) outside the model's vocabulary of {} "
                  "characters, which it never saw in training: {}",
                  count, tokenizer.chars().size(), shown),
      text[first], first, count);
}

}  // namespace

std::vector<std::int32_t> TextTokenizer::encode_prompt(const std::u32string& text,
                                                       UnknownPolicy policy,
                                                       std::size_t* unknown_count) const {
  if (unknown_count) *unknown_count = 0;
  const Tokenizer* c = chars();
  if (c == nullptr) return bpe()->encode(text);  // byte fallback: nothing is unknown
  const bool map = policy == UnknownPolicy::kMapToUnknownId;
  std::size_t unknown = 0;
  std::vector<std::int32_t> ids = c->encode(text, /*map_unknown=*/true, &unknown);
  if (unknown > 0 && !map) throw unknown_characters_error(*c, text);
  if (unknown_count) *unknown_count = unknown;
  return ids;
}

TokenIds TextTokenizer::encode_compact(const std::u32string& text, UnknownPolicy policy,
                                       std::size_t* unknown_count) const {
  if (unknown_count) *unknown_count = 0;
  if (const Tokenizer* c = chars())
    return c->encode_compact(text, policy == UnknownPolicy::kMapToUnknownId, unknown_count);
  return bpe()->encode_compact(text);
}

std::vector<std::int32_t> TextTokenizer::encode_continuation(const std::u32string& text) const {
  if (const Tokenizer* c = chars()) return c->encode(text);
  return bpe()->encode_continuation(text);
}

std::u32string TextTokenizer::decode(const std::vector<std::int32_t>& ids) const {
  return std::visit([&ids](const auto& t) { return t.decode(ids); }, impl_);
}

std::string TextTokenizer::decode_generated(const std::vector<std::int32_t>& ids) const {
  if (const Tokenizer* c = chars()) return c->decode_utf8(ids);
  return bpe()->decode_utf8(ids, /*drop_dummy_prefix=*/false);
}

std::string TextTokenizer::token_text(std::int32_t id) const {
  if (const Tokenizer* c = chars()) return u32_to_utf8(c->token_text(id));
  return bpe()->token_text(id);
}

bool TextTokenizer::has_text(std::int32_t id) const {
  return !(chars() != nullptr && id == Tokenizer::kUnknownId);
}

std::vector<std::string> TextTokenizer::vocabulary() const {
  std::vector<std::string> texts;
  texts.reserve(vocab_size());
  for (std::size_t i = 0; i < vocab_size(); ++i) {
    const auto id = static_cast<std::int32_t>(i);
    texts.push_back(has_text(id) ? token_text(id) : std::string());
  }
  return texts;
}

const char* TextTokenizer::notation() const {
  return kind() == TokenizerKind::kBpe ? "'\u2581' is a space, <0xNN> a byte" : "";
}

std::int32_t TextTokenizer::start_id() const {
  if (const Tokenizer* c = chars()) return c->contains(U'\n') ? c->id_of(U'\n') : 1;
  return bpe()->encode(U"\n").back();  // "\n" after the dummy prefix: its last token
}

std::optional<std::int32_t> TextTokenizer::special_id(SpecialToken which) const {
  if (which == SpecialToken::kImStart || which == SpecialToken::kImEnd) {
    const std::u32string text = which == SpecialToken::kImStart ? kImStartText : kImEndText;
    std::int32_t id = -1;
    if (const Tokenizer* c = chars()) {
      id = c->special_id(text);
    } else {
      const BpeTokenizer& b = *bpe();
      id = b.id_of_text(text);
      if (id < b.first_added_id()) id = -1;  // only an added special token is the marker
    }
    if (id < 0) return std::nullopt;
    return id;
  }
  if (chars() != nullptr) {
    if (which == SpecialToken::kUnknown) return Tokenizer::kUnknownId;
    return std::nullopt;
  }
  switch (which) {
    case SpecialToken::kUnknown:
      return BpeTokenizer::kUnknownId;
    case SpecialToken::kBos:
      return BpeTokenizer::kBosId;
    case SpecialToken::kEos:
      return BpeTokenizer::kEosId;
    default:
      break;
  }
  return std::nullopt;
}

std::string StreamDecoder::push(std::int32_t id) {
  const BpeTokenizer* bpe = tokenizer_.bpe();
  if (bpe == nullptr) return tokenizer_.decode_generated({id});
  pending_.push_back(id);
  const std::string decoded = bpe->decode_utf8(pending_, /*drop_dummy_prefix=*/false);
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
  const std::string rest = tokenizer_.decode_generated(pending_);
  pending_.clear();
  return rest;
}

}  // namespace glass
