#pragma once
// The character tokenizer: one token per Unicode code point.

#include <cstdint>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "data/token_ids.hpp"

namespace glass {

/// A character that is not in the vocabulary (thrown by encode unless unknowns are allowed).
/// The message states the facts (which characters, where); a front end adds how to get past
/// them in its own words (a command-line flag, a JSON field).
class UnknownCharacterError : public std::runtime_error {
 public:
  UnknownCharacterError(const std::string& what, char32_t c, std::size_t position,
                        std::size_t count = 1)
      : std::runtime_error(what), character_(c), position_(position), count_(count) {}
  char32_t character() const { return character_; }   ///< the first unknown character
  std::size_t position() const { return position_; }  ///< its index in the encoded text
  std::size_t count() const { return count_; }        ///< how many unknown characters (>= 1)

 private:
  char32_t character_;
  std::size_t position_;
  std::size_t count_;
};

/// Character-level tokenizer. Id 0 is reserved for unknown characters; ids 1..N are the
/// vocabulary characters `chars()[id - 1]`; ids N+1.. the special tokens `specials()` (a chat
/// template's markers, e.g. "<|im_start|>"), which encoding text never gives: only a caller that
/// asks for them by id puts them in. vocab_size() = N + 1 + specials().size().
class Tokenizer {
 public:
  static constexpr std::int32_t kUnknownId = 0;

  Tokenizer() = default;
  /// From an explicit character list (e.g. read from a checkpoint); id i+1 = chars[i], and
  /// id N+1+k = specials[k]. Throws std::invalid_argument on duplicate characters, or an empty
  /// or repeated special token.
  explicit Tokenizer(std::vector<char32_t> chars, std::vector<std::u32string> specials = {});
  /// The distinct characters of `text`, most frequent first (ties: smaller code point first),
  /// keeping at most vocab_cap - 1 of them (id 0 is the unknown token, so vocab_size <= vocab_cap).
  static Tokenizer from_text(const std::u32string& text, std::size_t vocab_cap = 1024);

  /// Number of ids: the known characters plus the unknown token (id 0) plus the specials.
  std::size_t vocab_size() const { return chars_.size() + 1 + specials_.size(); }
  /// The known characters; chars()[i] has id i + 1.
  const std::vector<char32_t>& chars() const { return chars_; }
  /// The special tokens' texts; specials()[k] has id first_special_id() + k.
  const std::vector<std::u32string>& specials() const { return specials_; }
  /// Id of the first special token: chars().size() + 1.
  std::int32_t first_special_id() const { return static_cast<std::int32_t>(chars_.size()) + 1; }
  /// Whether `id` is a special token's.
  bool is_special(std::int32_t id) const {
    return id >= first_special_id() && static_cast<std::size_t>(id) < vocab_size();
  }
  /// Id of the special token with this text, or -1.
  std::int32_t special_id(const std::u32string& text) const;
  /// Whether `c` has its own id (false for characters that map to kUnknownId).
  bool contains(char32_t c) const { return index_.count(c) != 0; }
  /// Id of a character; kUnknownId when not in the vocabulary.
  std::int32_t id_of(char32_t c) const;
  /// The character of an id; U+FFFD for the unknown id. Throws std::out_of_range for a bad id,
  /// std::invalid_argument for a special token's id (it is several characters: token_text).
  char32_t char_of(std::int32_t id) const;
  /// An id's text: its character, U+FFFD for the unknown id, a special token's marker text.
  /// Throws std::out_of_range for a bad id.
  std::u32string token_text(std::int32_t id) const;

  /// Text -> ids. Unknown characters throw UnknownCharacterError naming the character and its
  /// position, unless map_unknown is true (they become id 0; `unknown_count` reports how many).
  std::vector<std::int32_t> encode(const std::u32string& text, bool map_unknown = false,
                                   std::size_t* unknown_count = nullptr) const;
  /// encode into compact storage (1 or 2 bytes per id for a vocabulary of at most 256 or
  /// 65536 entries), for a whole corpus: the same ids, errors and unknown count as encode.
  TokenIds encode_compact(const std::u32string& text, bool map_unknown = false,
                          std::size_t* unknown_count = nullptr) const;
  /// Ids -> text (id 0 decodes to U+FFFD, a special token to its marker text). Throws
  /// std::out_of_range for an id >= vocab_size().
  std::u32string decode(const std::vector<std::int32_t>& ids) const;
  /// Ids -> UTF-8.
  std::string decode_utf8(const std::vector<std::int32_t>& ids) const;

 private:
  std::vector<char32_t> chars_;
  std::vector<std::u32string> specials_;
  std::unordered_map<char32_t, std::int32_t> index_;
};

}  // namespace glass
