#pragma once
// The BPE tokenizer: subword tokens trained on the user's text, of the same kind as LLaMA 1/2's
// SentencePiece BPE, so that glass, llama.cpp (its SPM tokenizer) and llama2.c's run.c split a
// text into the same ids.
//
// Text -> symbols (the normalization of Llama 2's SentencePiece model):
//   - every space ' ' is written as '▁' (U+2581), and a dummy prefix '▁' goes before any
//     non-empty text, so "o gato" becomes "▁o▁gato". A '▁' already in the text reads as a space:
//     it decodes to ' ' (the one place where decode(encode(text)) != text, as in SentencePiece).
//   - symbols start as the characters (Unicode code points) of that text.
//
// Vocabulary, in id order (the layout run.c imposes: it hard-codes byte fallback as id = byte + 3):
//   0 "<unk>", 1 "<s>" (BOS), 2 "</s>" (EOS);
//   3..258 the byte tokens "<0x00>".."<0xFF>";
//   259.. the base characters of the training text, most frequent first (ties: smaller code
//         point first), '▁' among them;
//   then one token per merge, in merge order (merge r makes id 259 + chars + r);
//   then the added special tokens, if any (a chat template's markers "<|im_start|>",
//   "<|im_end|>"): encoding never gives them, they score 0, decode to their text, and no merged
//   token clashes with them (the rule below; training avoids the chat markers' clashes too).
// A character outside the vocabulary encodes as the tokens of its UTF-8 bytes (byte fallback).
//
// Training (BpeTokenizer::train) repeatedly merges the most frequent adjacent pair of symbols of
// the normalized training text (overlapping occurrences counted, as "aaa" holds the pair (a, a)
// twice; applied left to right without overlap) until the vocabulary has vocab_size tokens.
//   - No token is longer than kMaxTokenLength (16) characters (data/file_limits.hpp; as
//     SentencePiece's max_piece_length): a pair whose text would be longer is never merged, and
//     a vocabulary (constructor, tokenizer.json) with a longer token or more than kMaxVocabSize
//     tokens is refused.
//   - Merges never cross a word boundary: a '▁' may only start a token (as SentencePiece's
//     split_by_whitespace), so a pair whose right symbol starts with '▁' is never counted. The
//     text is then a sequence of independent words, each starting at a '▁': training counts each
//     distinct word once with its frequency, and encoding works word by word with a cache and
//     gives exactly what encoding the whole text at once gives.
//   - Ties between equally frequent pairs: the pair with the smaller left id wins, then the
//     smaller right id.
//   - A pair is never merged (the next best is taken) when its text already is a token, or when
//     it would clash with a special or byte token: its text contains "<unk>", "<s>", "</s>" or
//     "<0xHH>", or is a proper prefix (starting with '<') or suffix (ending with '>') of one of
//     them. run.c and llama.cpp look the text of two neighbouring tokens up in the whole
//     vocabulary (specials and bytes included), so such a token could make them merge "<s" and
//     ">" into BOS, or a byte token with a neighbour; with the rule, no two tokens ever
//     concatenate to a special or byte token's text.
//   - Pair counts are kept up to date incrementally: a merge touches only the words that hold
//     the pair and the pairs around each merge site; a heap gives the most frequent pair. Cost:
//     about (total length of the words touched) per merge, so a text with very long words (no
//     spaces at all) trains slowly.
//
// Scores (as SentencePiece writes them; both engines take the highest): merge r (counting from
// 0) scores -r, so the first merge scores 0 and later merges less; base character i (in id
// order) scores -(merges + i), below every merge; specials and bytes score 0.
//
// Encoding (run.c's encode, llama.cpp's llm_tokenizer_spm): start from the characters (byte
// fallback for unknown ones), then repeatedly merge the adjacent pair whose concatenation is a
// token with the best score, the leftmost pair first on ties, until no adjacent pair is a
// token. encode() adds neither BOS nor EOS (run.c and llama.cpp put BOS first; the caller adds
// kBosId where it wants it).
//
// Decoding: the tokens' texts joined, '▁' read as ' ', runs of byte tokens reassembled into
// UTF-8 (an invalid byte sequence becomes U+FFFD), and the single leading space of the dummy
// prefix dropped. "<unk>" decodes to U+FFFD, "<s>" and "</s>" to nothing.
//
// The file format (bpe_to_json / bpe_from_json) is Hugging Face's tokenizer.json in the shape of
// Llama 2's: a BPE model with byte_fallback, the vocabulary and the merges ("left right"),
// added_tokens for the three specials, normalizer Prepend("▁") + Replace(" ", "▁"), decoder
// Replace("▁", " ") + ByteFallback + Fuse + Strip(1 leading space), post_processor adding "<s>".
// The Hugging Face tokenizers library applies the listed merges by rank, not by score: where a
// token can also be made from another split ("a"+"bc" for a token made as "ab"+"c"), it does not
// merge that split and may give other ids than glass, llama.cpp and run.c, which use the scores.
//
// Sources: Sennrich et al., "Neural Machine Translation of Rare Words with Subword Units" (2016);
// Kudo & Richardson, "SentencePiece" (2018); llama2.c's run.c (encode, decode); llama.cpp
// (llm_tokenizer_spm); Hugging Face tokenizers' documentation of tokenizer.json.

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "data/token_ids.hpp"

namespace glass {

/// One merge of the BPE vocabulary: the ids of its two parts (the merged token's text is the
/// concatenation of their texts).
struct BpeMerge {
  std::int32_t left = 0;
  std::int32_t right = 0;
  bool operator==(const BpeMerge& o) const { return left == o.left && right == o.right; }
};

/// A trained BPE vocabulary and its encoder/decoder (see the file comment for the rules).
class BpeTokenizer {
 public:
  static constexpr std::int32_t kUnknownId = 0;      ///< "<unk>"
  static constexpr std::int32_t kBosId = 1;          ///< "<s>"
  static constexpr std::int32_t kEosId = 2;          ///< "</s>"
  static constexpr std::int32_t kFirstByteId = 3;    ///< "<0x00>"; byte b has id b + 3
  static constexpr std::int32_t kFirstCharId = 259;  ///< the first base character
  static constexpr char32_t kSpaceMark = U'\u2581';  ///< '▁', a space in token texts

  /// Empty (no vocabulary): a placeholder to assign a trained or read tokenizer to.
  BpeTokenizer() = default;
  /// From its parts (as read from a file): the base characters (ids 259..) and the merges in
  /// order (merge r makes id 259 + chars.size() + r from two earlier ids). Throws
  /// std::invalid_argument for a duplicate character, a character that is not a Unicode scalar
  /// value, a space ' ' among the characters or no '▁' among them, a merge whose parts are not earlier character or merged tokens, a merged text that
  /// is longer than kMaxTokenLength characters or already a token, more than kMaxVocabSize
  /// tokens, that has a '▁' after its start, or that clashes with a special or byte
  /// token (see the file comment).
  BpeTokenizer(std::vector<char32_t> chars, std::vector<BpeMerge> merges,
               std::vector<std::u32string> added = {});
  /// A copy with `added` special tokens appended after every other token (ids vocab_size()..).
  /// Throws std::invalid_argument for an empty or repeated one, one that already is a token, or
  /// one a merged token clashes with (clashes_with; the message names the merge).
  BpeTokenizer with_added(const std::vector<std::u32string>& added) const;

  /// Trains on `text` (raw text: spaces, not '▁') until the vocabulary has vocab_size tokens.
  /// Throws std::invalid_argument for an empty text, a vocab_size below the minimum
  /// (259 + the text's distinct characters, '▁' included; the message says the minimum), or
  /// above what the text supports (no pair left to merge: the message says how many merges
  /// were possible and the largest vocab_size).
  static BpeTokenizer train(const std::u32string& text, std::size_t vocab_size);

  /// The normalization: "▁" + text with every ' ' written as '▁' ("" stays "").
  static std::u32string normalize(const std::u32string& text);
  /// Whether a merged token with this text would clash with a special or byte token.
  static bool clashes_with_reserved(const std::u32string& text);
  /// Whether a merged token with this text would clash with the special token `special`:
  /// contains it, or is a proper prefix starting with '<' or a proper suffix ending with '>' of
  /// it, 2 characters or more (the rule of the reserved tokens, for an added one).
  static bool clashes_with(const std::u32string& text, const std::u32string& special);
  /// ChatML's markers, "<|im_start|>" and "<|im_end|>", that training keeps merges from
  /// clashing with so that a trained vocabulary can always take them (with_added).
  static const std::vector<std::u32string>& chat_markers();

  /// Number of tokens: 3 specials + 256 bytes + characters + merges + added specials.
  std::size_t vocab_size() const { return texts_.size(); }
  /// The base characters; chars()[i] has id 259 + i.
  const std::vector<char32_t>& chars() const { return chars_; }
  /// The merges in order; merges()[r] makes id first_merge_id() + r.
  const std::vector<BpeMerge>& merges() const { return merges_; }
  /// Id of the first merged token (259 + chars().size()).
  std::int32_t first_merge_id() const {
    return kFirstCharId + static_cast<std::int32_t>(chars_.size());
  }
  /// The added special tokens; added()[k] has id first_added_id() + k.
  const std::vector<std::u32string>& added() const { return added_; }
  /// Id of the first added special token: the number of other tokens.
  std::int32_t first_added_id() const {
    return first_merge_id() + static_cast<std::int32_t>(merges_.size());
  }

  /// A token's text as the vocabulary stores it (UTF-8): "<s>", "<0x41>", "▁de".
  /// Throws std::out_of_range for an id outside [0, vocab_size()).
  std::string token_text(std::int32_t id) const;
  /// The same as code points.
  const std::u32string& token_text32(std::int32_t id) const;
  /// The token's score (see the file comment). Throws std::out_of_range for a bad id.
  float score(std::int32_t id) const;
  /// Id of a token text (any token, specials and bytes included), or -1.
  std::int32_t id_of_text(const std::u32string& text) const;

  /// Text -> ids (no BOS/EOS). Never fails: unknown characters go to byte tokens.
  std::vector<std::int32_t> encode(const std::u32string& text) const;
  /// Text that continues a sequence -> ids: as encode without the dummy prefix (a leading ' '
  /// stays a '▁' of the text, and the first word merges like any word).
  std::vector<std::int32_t> encode_continuation(const std::u32string& text) const;
  /// encode into compact storage (2 bytes per id up to 65536 tokens), for a whole corpus.
  TokenIds encode_compact(const std::u32string& text) const;
  /// Ids -> text. With drop_dummy_prefix, one leading space (the dummy prefix) is dropped;
  /// pass false to decode a piece from the middle of a sequence. Throws std::out_of_range for
  /// an id outside [0, vocab_size()).
  std::u32string decode(const std::vector<std::int32_t>& ids, bool drop_dummy_prefix = true) const;
  /// Ids -> UTF-8.
  std::string decode_utf8(const std::vector<std::int32_t>& ids,
                          bool drop_dummy_prefix = true) const;

 private:
  struct Scratch;  // buffers reused across the words of one encode call
  /// The greedy merges of one word (starting with '▁') appended to ids.
  void encode_word(const char32_t* word, std::size_t length, std::vector<std::int32_t>& ids,
                   Scratch& scratch) const;
  /// Id of a base character, or -1.
  std::int32_t char_id(char32_t c) const {
    if (c < low_char_ids_.size()) return low_char_ids_[c];
    const auto it = char_ids_.find(c);
    return it == char_ids_.end() ? -1 : it->second;
  }
  template <class Ids>
  void encode_into(const std::u32string& text, Ids& ids, bool dummy_prefix = true) const;
  void check_id(std::int32_t id) const;
  /// Appends added_ to texts_, checking each (the constructor's last step).
  void add_specials();

  std::vector<char32_t> chars_;
  std::vector<BpeMerge> merges_;
  std::vector<std::u32string> added_;
  std::vector<std::u32string> texts_;  ///< texts_[id]
  std::unordered_map<char32_t, std::int32_t> char_ids_;
  std::vector<std::int32_t> low_char_ids_;  ///< char_ids_ as a table below U+3000 ('▁' included)
  /// (left id, right id) -> the merged token: a flat open-addressing table (linear probing,
  /// at most half full), the encoder's most frequent lookup. Empty slots hold key ~0.
  struct PairSlot {
    std::uint64_t key = ~std::uint64_t{0};
    std::int32_t token = -1;
  };
  std::vector<PairSlot> pair_table_;
  std::uint64_t pair_mask_ = 0;
  int pair_shift_ = 63;
  /// Fibonacci hashing: the top bits of key * 2^64/phi.
  std::uint64_t pair_slot(std::uint64_t key) const {
    return (key * 0x9E3779B97F4A7C15ull) >> pair_shift_;
  }
  std::int32_t pair_token(std::uint64_t key) const {
    if (pair_table_.empty()) return -1;
    for (std::uint64_t i = pair_slot(key);; i = (i + 1) & pair_mask_) {
      const PairSlot& s = pair_table_[i];
      if (s.key == key) return s.token;
      if (s.token < 0) return -1;
    }
  }
  std::unordered_map<std::u32string, std::int32_t> text_ids_;
};

/// A tokenizer.json that cannot be read; what() names the source (e.g. the file) and the fault.
class TokenizerJsonError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The tokenizer as Hugging Face tokenizer.json text (Llama 2 style, see the file comment).
std::string bpe_to_json(const BpeTokenizer& tokenizer);
/// Reads tokenizer.json text written by bpe_to_json (or of the same shape). `source` names it in
/// messages. Throws TokenizerJsonError for invalid JSON, a duplicate key, a missing or mistyped
/// field, a model or normalizer/decoder other than the Llama 2 BPE ones, more than kMaxVocabSize
/// tokens, a token longer than kMaxTokenLength characters (naming its id and length), ids that
/// are not 0..N-1 each once, missing or misplaced specials or byte tokens, a base token that is not one
/// character, merges that refer to unknown or later tokens, whose text is not the next token's,
/// or that produce a special or byte token's text. Added special tokens beyond the three
/// (added_tokens with "special": true) must hold the last ids, in id order.
BpeTokenizer bpe_from_json(const std::string& text, const std::string& source);

}  // namespace glass
