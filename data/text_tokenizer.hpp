#pragma once
// One interface over the two tokenizers, for code that should not care which one a model uses:
// the character tokenizer (data/tokenizer.hpp, one token per code point) and the BPE tokenizer
// (data/bpe_tokenizer.hpp, subwords of the LLaMA SentencePiece kind). A program option
// `--tokenizer char|bpe` maps to TokenizerKind with tokenizer_kind_from_name.

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "data/bpe_tokenizer.hpp"
#include "data/token_ids.hpp"
#include "data/tokenizer.hpp"

namespace glass {

enum class TokenizerKind { kChar, kBpe };

/// "char" or "bpe" -> the kind. Throws std::invalid_argument naming both for anything else.
TokenizerKind tokenizer_kind_from_name(const std::string& name);
/// The kind's name: "char" or "bpe".
const char* tokenizer_kind_name(TokenizerKind kind);

/// A text's ids cut into a training and a validation part (TextTokenizer::encode_split).
struct SplitIds {
  TokenIds ids;               ///< the whole text's ids
  std::size_t n_train = 0;    ///< ids[0, n_train) train, ids[n_train, end) validate
  std::size_t val_bytes = 0;  ///< UTF-8 bytes of the validation part of the text
  std::size_t unknown = 0;    ///< characters that became the unknown id 0 (map_unknown)
};

/// Where `text` splits into training and validation (in characters): at 90% (floor); for a BPE
/// tokenizer (kind kBpe) at the first space at or after 90% (so that no token crosses the cut),
/// or at 90% when no space follows.
std::size_t split_point(const std::u32string& text, TokenizerKind kind);

/// A character or a BPE tokenizer behind the same calls.
class TextTokenizer {
 public:
  explicit TextTokenizer(Tokenizer chars) : impl_(std::move(chars)) {}
  explicit TextTokenizer(BpeTokenizer bpe) : impl_(std::move(bpe)) {}

  TokenizerKind kind() const {
    return impl_.index() == 0 ? TokenizerKind::kChar : TokenizerKind::kBpe;
  }
  /// Number of ids.
  std::size_t vocab_size() const;
  /// Text -> ids. Character tokenizer: a character outside its vocabulary throws
  /// UnknownCharacterError; BPE: never fails (byte fallback), no BOS/EOS added.
  std::vector<std::int32_t> encode(const std::u32string& text) const;
  /// encode into compact storage (1, 2 or 4 bytes per id), for a whole corpus.
  TokenIds encode_compact(const std::u32string& text) const;
  /// The whole text encoded once and split at split_point(text, kind()): the training part is
  /// the ids of text[0, cut), the validation part the rest. A character tokenizer gives one id per
  /// character; with `map_unknown` a character outside its vocabulary becomes the unknown id 0
  /// (counted in SplitIds::unknown), else it throws UnknownCharacterError. BPE encodes the whole
  /// text at once; when its training part's tokens are not a prefix of the whole text's (a token
  /// crossing the cut), the two parts are encoded apart (the validation part with its own dummy
  /// prefix).
  SplitIds encode_split(const std::u32string& text, bool map_unknown) const;
  /// Ids -> text (BPE: the dummy prefix's space dropped). Throws std::out_of_range for a bad id.
  std::u32string decode(const std::vector<std::int32_t>& ids) const;
  /// Generated ids -> UTF-8, all at once: a character model's characters; a BPE model's tokens
  /// with every '▁' a space, the first one too (a continuation of a prompt has no dummy prefix to
  /// drop). Throws std::out_of_range for a bad id.
  std::string decode_continuation(const std::vector<std::int32_t>& ids) const;
  /// A token's text (UTF-8) as its vocabulary stores it: the character (U+FFFD for the
  /// character tokenizer's unknown id 0), or the BPE token ("▁de", "<0x0A>", "<s>").
  /// Throws std::out_of_range for a bad id.
  std::string token_text(std::int32_t id) const;

  /// What one id stands for, in messages: "character" or "token" (BPE).
  const char* unit_name() const { return kind() == TokenizerKind::kChar ? "character" : "token"; }
  /// The vocabulary in words: "vocabulary 83 (82 characters + the unknown id 0)", or "a BPE
  /// vocabulary of 512 tokens".
  std::string vocabulary_text() const;

  /// The tokenizer itself, or nullptr when it is of the other kind.
  const Tokenizer* chars() const { return std::get_if<Tokenizer>(&impl_); }
  const BpeTokenizer* bpe() const { return std::get_if<BpeTokenizer>(&impl_); }

 private:
  std::variant<Tokenizer, BpeTokenizer> impl_;
};

/// Generated ids -> text as they come, to print a sample while it is drawn: a character model's
/// id is its character; a BPE model's token is decoded with its leading '▁' as a space (a piece
/// from the middle of a text), and byte tokens that do not yet form a whole UTF-8 character wait
/// for the rest of it (at most 4 bytes; an incomplete one becomes U+FFFD). The pieces joined are
/// the text of all the ids decoded at once. Exactly one of `chars` and `bpe` is given; the
/// tokenizer must outlive the decoder. push throws std::out_of_range for a bad id.
class StreamDecoder {
 public:
  StreamDecoder(const Tokenizer* chars, const BpeTokenizer* bpe) : chars_(chars), bpe_(bpe) {}
  /// The text `id` adds now (UTF-8; "" while a character waits for its other bytes).
  std::string push(std::int32_t id);
  /// The bytes still waiting, decoded (U+FFFD for an incomplete character); "" when none.
  std::string flush();

 private:
  const Tokenizer* chars_;
  const BpeTokenizer* bpe_;
  std::vector<std::int32_t> pending_;  // BPE: the tokens not returned yet
};

}  // namespace glass
