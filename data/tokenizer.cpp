// The character tokenizer. See data/tokenizer.hpp.

#include "data/tokenizer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "data/text.hpp"

namespace glass {

Tokenizer::Tokenizer(std::vector<char32_t> chars, std::vector<std::u32string> specials)
    : chars_(std::move(chars)), specials_(std::move(specials)) {
  for (std::size_t k = 0; k < specials_.size(); ++k) {
    if (specials_[k].empty())
      throw std::invalid_argument(fmt::format("tokenizer: special token {} is empty", k));
    for (std::size_t j = 0; j < k; ++j)
      if (specials_[j] == specials_[k])
        throw std::invalid_argument(fmt::format("tokenizer: special token \"{}\" appears twice",
                                                u32_to_utf8(specials_[k])));
  }
  index_.reserve(chars_.size());
  for (std::size_t i = 0; i < chars_.size(); ++i) {
    const auto id = static_cast<std::int32_t>(i + 1);
    if (!index_.emplace(chars_[i], id).second) {
      throw std::invalid_argument(fmt::format(
          "tokenizer: character {} appears twice in the vocabulary (positions {} and {})",
          describe_char(chars_[i]), index_.at(chars_[i]) - 1, i));
    }
  }
}

Tokenizer Tokenizer::from_text(const std::u32string& text, std::size_t vocab_cap) {
  if (vocab_cap < 2) {
    throw std::invalid_argument(fmt::format(
        "tokenizer: vocab_cap must be at least 2 (id 0 is the unknown token), got {}", vocab_cap));
  }
  // Count each distinct character.
  std::unordered_map<char32_t, std::size_t> counts;
  for (char32_t c : text) ++counts[c];

  // Most frequent first; equal counts in code point order, so the result never depends on
  // hash-map iteration order.
  std::vector<std::pair<char32_t, std::size_t>> by_count(counts.begin(), counts.end());
  std::sort(by_count.begin(), by_count.end(), [](const auto& a, const auto& b) {
    if (a.second != b.second) return a.second > b.second;
    return a.first < b.first;
  });
  const std::size_t keep = std::min(by_count.size(), vocab_cap - 1);
  std::vector<char32_t> chars;
  chars.reserve(keep);
  for (std::size_t i = 0; i < keep; ++i) chars.push_back(by_count[i].first);
  return Tokenizer(std::move(chars));
}

std::int32_t Tokenizer::id_of(char32_t c) const {
  const auto it = index_.find(c);
  return it == index_.end() ? kUnknownId : it->second;
}

char32_t Tokenizer::char_of(std::int32_t id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= vocab_size()) {
    throw std::out_of_range(fmt::format("token id {} is outside the vocabulary (valid ids: 0..{})",
                                        id, vocab_size() - 1));
  }
  if (id == kUnknownId) return U'\uFFFD';
  if (is_special(id))
    throw std::invalid_argument(
        fmt::format("token id {} is the special token \"{}\", not a character", id,
                    u32_to_utf8(specials_[static_cast<std::size_t>(id - first_special_id())])));
  return chars_[static_cast<std::size_t>(id) - 1];
}

std::u32string Tokenizer::token_text(std::int32_t id) const {
  if (id >= 0 && is_special(id))
    return specials_[static_cast<std::size_t>(id - first_special_id())];
  return std::u32string(1, char_of(id));
}

std::int32_t Tokenizer::special_id(const std::u32string& text) const {
  for (std::size_t k = 0; k < specials_.size(); ++k)
    if (specials_[k] == text) return first_special_id() + static_cast<std::int32_t>(k);
  return -1;
}

namespace {

/// The loop of Tokenizer::encode, into any container with reserve and push_back.
template <class Ids, class IdOf>
void encode_into(Ids& ids, const std::u32string& text, bool map_unknown, std::size_t* unknown_count,
                 const IdOf& id_of, std::size_t known) {
  ids.reserve(text.size());
  std::size_t unknown = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const std::int32_t id = id_of(text[i]);
    if (id == Tokenizer::kUnknownId) {
      if (!map_unknown) {
        throw UnknownCharacterError(
            fmt::format("character {} at position {} is not in the vocabulary ({} characters)",
                        describe_char(text[i]), i, known),
            text[i], i);
      }
      ++unknown;
    }
    ids.push_back(id);
  }
  if (unknown_count) *unknown_count = unknown;
}

}  // namespace

TokenIds Tokenizer::encode_compact(const std::u32string& text, bool map_unknown,
                                   std::size_t* unknown_count) const {
  TokenIds ids(vocab_size());
  encode_into(
      ids, text, map_unknown, unknown_count, [this](char32_t c) { return id_of(c); },
      chars_.size());
  return ids;
}

std::vector<std::int32_t> Tokenizer::encode(const std::u32string& text, bool map_unknown,
                                            std::size_t* unknown_count) const {
  std::vector<std::int32_t> ids;
  ids.reserve(text.size());
  std::size_t unknown = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const std::int32_t id = id_of(text[i]);
    if (id == kUnknownId) {
      if (!map_unknown) {
        throw UnknownCharacterError(
            fmt::format("character {} at position {} is not in the vocabulary ({} characters)",
                        describe_char(text[i]), i, chars_.size()),
            text[i], i);
      }
      ++unknown;
    }
    ids.push_back(id);
  }
  if (unknown_count) *unknown_count = unknown;
  return ids;
}

std::u32string Tokenizer::decode(const std::vector<std::int32_t>& ids) const {
  std::u32string text;
  text.reserve(ids.size());
  for (std::int32_t id : ids) {
    if (is_special(id))
      text += token_text(id);
    else
      text.push_back(char_of(id));
  }
  return text;
}

std::string Tokenizer::decode_utf8(const std::vector<std::int32_t>& ids) const {
  return u32_to_utf8(decode(ids));
}

}  // namespace glass
