#pragma once
// One interface over the two tokenizers, for code that should not care which one a model uses:
// the character tokenizer (data/tokenizer.hpp, one token per code point) and the BPE tokenizer
// (data/bpe_tokenizer.hpp, subwords of the LLaMA SentencePiece kind). A program option
// `--tokenizer char|bpe` maps to TokenizerKind with tokenizer_kind_from_name.

#include <cstdint>
#include <optional>
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
  std::size_t unknown = 0;    ///< characters that became the unknown id 0 (kMapToUnknownId)
};

/// Where `text` splits into training and validation (in characters): at 90% (floor); for a BPE
/// tokenizer (kind kBpe) at the first space at or after 90% (so that no token crosses the cut),
/// or at 90% when no space follows.
std::size_t split_point(const std::u32string& text, TokenizerKind kind);

/// What encode_prompt does with a character outside a character model's vocabulary: refuse it
/// (UnknownCharacterError) or map it to the unknown id 0 and count it. A BPE model has none.
enum class UnknownPolicy { kRefuse, kMapToUnknownId };

/// The special tokens a reader may ask for by role (special_id). A role a tokenizer does not
/// have answers "none"; a new role is added here and in TextTokenizer::special_id, and readers
/// that ask by role need no change. kImStart and kImEnd are ChatML's markers "<|im_start|>"
/// (a turn begins; the role's name follows) and "<|im_end|>" (a turn ends: generation stops
/// there), which a tokenizer has after with_chat_tokens.
enum class SpecialToken { kUnknown, kBos, kEos, kImStart, kImEnd };

/// ChatML's marker texts, as llama.cpp and Hugging Face tokenizers spell them.
inline constexpr const char32_t* kImStartText = U"<|im_start|>";
inline constexpr const char32_t* kImEndText = U"<|im_end|>";

/// A character or a BPE tokenizer behind the same calls. This is the one place that knows
/// which kind a model reads: code outside data/ asks it, never branches on the kind.
class TextTokenizer {
 public:
  explicit TextTokenizer(Tokenizer chars) : impl_(std::move(chars)) {}
  explicit TextTokenizer(BpeTokenizer bpe) : impl_(std::move(bpe)) {}

  TokenizerKind kind() const {
    return impl_.index() == 0 ? TokenizerKind::kChar : TokenizerKind::kBpe;
  }
  /// The kind's name, as config.json and the server's JSON write it: "char" or "bpe".
  const char* kind_name() const { return tokenizer_kind_name(kind()); }
  /// What one id stands for, in messages and pages: "character"/"characters" (a character
  /// model), "token"/"tokens" (BPE).
  const char* unit(bool plural = true) const;
  /// Number of ids (chat tokens included).
  std::size_t vocab_size() const;
  /// A copy that also has the chat tokens <|im_start|> and <|im_end|>, appended after every
  /// other id (a character vocabulary: after its characters; BPE: after the merges, so the byte
  /// tokens keep their ids): ids vocab_size() and vocab_size() + 1. Every other id keeps its
  /// meaning. Encoding text never gives them ("<|im_end|>" typed by a user is ordinary
  /// characters); only a caller asking for special_id(kImStart/kImEnd) puts them in. The
  /// tokenizer itself when it has them already. Throws std::invalid_argument when a BPE merged
  /// token clashes with them (a vocabulary trained before training avoided that: it contains a
  /// marker, or starts one with '<' or ends one with '>').
  TextTokenizer with_chat_tokens() const;
  /// Whether special_id(kImStart) and special_id(kImEnd) exist.
  bool has_chat_tokens() const;
  /// The vocabulary in words: "a BPE vocabulary of 384 tokens", "a character vocabulary of
  /// 64 characters" (the unknown id 0 not counted); with `count_ids` (the training banner, which
  /// counts the model's embedding rows) a character model's reads "vocabulary 65 (64 characters
  /// + the unknown id 0)"; "... and 2 chat tokens" (or "+ 2 chat tokens", "(2 of them chat
  /// tokens)" with `count_ids`) when it has them.
  std::string describe(bool count_ids = false) const;
  /// The base characters: a character model's vocabulary (chars()[i] has id i + 1), a BPE
  /// model's single-character tokens (in id order from kFirstCharId).
  const std::vector<char32_t>& characters() const;
  /// Whether `c` encodes without the unknown id: always for BPE (byte fallback).
  bool knows(char32_t c) const;
  /// Text -> ids. Character tokenizer: a character outside its vocabulary throws
  /// UnknownCharacterError; BPE: never fails (byte fallback), no BOS/EOS added.
  std::vector<std::int32_t> encode(const std::u32string& text) const;
  /// A prompt -> ids, as the model read its training text (BPE: the dummy prefix, no BOS).
  /// A character model's characters outside the vocabulary: kRefuse throws
  /// UnknownCharacterError naming the first few with their positions (character() and
  /// position() the first, count() how many); kMapToUnknownId maps them to id 0 and, when
  /// `unknown_count` is given, stores how many. BPE never fails (byte fallback): 0 unknown.
  std::vector<std::int32_t> encode_prompt(const std::u32string& text, UnknownPolicy policy,
                                          std::size_t* unknown_count = nullptr) const;
  /// encode into compact storage (1, 2 or 4 bytes per id), for a whole corpus; unknown
  /// characters as encode_prompt (one error for the first, with its position).
  TokenIds encode_compact(const std::u32string& text, UnknownPolicy policy = UnknownPolicy::kRefuse,
                          std::size_t* unknown_count = nullptr) const;
  /// The whole text encoded once and split at split_point(text, kind()): the training part is
  /// the ids of text[0, cut), the validation part the rest. A character tokenizer gives one id per
  /// character; a character outside its vocabulary as encode_prompt under `policy` (mapped
  /// ones counted in SplitIds::unknown). BPE encodes the whole
  /// text at once; when its training part's tokens are not a prefix of the whole text's (a token
  /// crossing the cut), the two parts are encoded apart (the validation part with its own dummy
  /// prefix).
  SplitIds encode_split(const std::u32string& text, UnknownPolicy policy) const;
  /// Text that continues a sequence after a special token's id, in the way the template needs
  /// it: a character tokenizer as encode; BPE without the dummy prefix
  /// (BpeTokenizer::encode_continuation). Errors as encode.
  std::vector<std::int32_t> encode_continuation(const std::u32string& text) const;
  /// Ids -> text (BPE: the dummy prefix's space dropped; a chat token decodes to its marker
  /// text). Throws std::out_of_range for a bad id.
  std::u32string decode(const std::vector<std::int32_t>& ids) const;
  /// Generated ids -> UTF-8, as a StreamDecoder gives them joined: a BPE piece's leading '▁'
  /// is a space (a piece from the middle of a text); a chat token is its marker text, shown as
  /// the model wrote it (a chat front end stops at <|im_end|> and does not print it). Throws
  /// std::out_of_range for a bad id.
  std::string decode_generated(const std::vector<std::int32_t>& ids) const;
  /// A token's text (UTF-8) as its vocabulary stores it: the character (U+FFFD for the
  /// character tokenizer's unknown id 0), the BPE token ("▁de", "<0x0A>", "<s>"), or a chat
  /// token's marker ("<|im_end|>").
  /// Throws std::out_of_range for a bad id.
  std::string token_text(std::int32_t id) const;
  /// False only for a character model's unknown id 0, which stands for every character
  /// outside the vocabulary and has no text of its own (pages show it as "" or "<unk>").
  bool has_text(std::int32_t id) const;
  /// Each id's text in id order as the server lists the vocabulary: token_text, "" where
  /// has_text is false.
  std::vector<std::string> vocabulary() const;
  /// True when one token may hold several characters (BPE), so that a display separates them.
  bool tokens_span_characters() const { return kind() == TokenizerKind::kBpe; }
  /// How to read the token texts, for a display's legend: "'▁' is a space, <0xNN> a byte" for
  /// BPE, "" for a character model.
  const char* notation() const;
  /// The id generation starts from when the prompt is empty: a newline (the start of a
  /// paragraph); BPE: the last token of "\n" after the dummy prefix; a character model without
  /// '\n': id 1.
  std::int32_t start_id() const;
  /// The id of a special token, or none when this tokenizer has no such token (a character
  /// model has an unknown id 0 and no BOS/EOS; BPE has <unk> 0, <s> 1, </s> 2; the chat
  /// tokens exist after with_chat_tokens).
  std::optional<std::int32_t> special_id(SpecialToken which) const;

  /// The tokenizer itself, or nullptr when it is of the other kind: for writers of a file
  /// format whose layout depends on the kind (checkpoint/, export/).
  const Tokenizer* chars() const { return std::get_if<Tokenizer>(&impl_); }
  const BpeTokenizer* bpe() const { return std::get_if<BpeTokenizer>(&impl_); }

 private:
  std::variant<Tokenizer, BpeTokenizer> impl_;
};

/// Generated ids -> text as they come, to print a sample while it is drawn: a character model's
/// id is its character; a BPE model's token is decoded with its leading '▁' as a space (a piece
/// from the middle of a text), and byte tokens that do not yet form a whole UTF-8 character wait
/// for the rest of it (at most 4 bytes; an incomplete one becomes U+FFFD). The pieces joined are
/// the text of all the ids decoded at once (TextTokenizer::decode_generated). The tokenizer
/// must outlive the decoder. push throws std::out_of_range for a bad id.
class StreamDecoder {
 public:
  explicit StreamDecoder(const TextTokenizer& tokenizer) : tokenizer_(tokenizer) {}
  /// The text `id` adds now (UTF-8; "" while a character waits for its other bytes).
  std::string push(std::int32_t id);
  /// The bytes still waiting, decoded (U+FFFD for an incomplete character); "" when none.
  std::string flush();

 private:
  const TextTokenizer& tokenizer_;
  std::vector<std::int32_t> pending_;  // BPE: the tokens not returned yet
};

}  // namespace glass
