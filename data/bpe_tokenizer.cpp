// The BPE tokenizer: its vocabulary, lookups, encoding and decoding (training is in
// data/bpe_train.cpp). See data/bpe_tokenizer.hpp for the rules.

#include "data/bpe_tokenizer.hpp"

#include "data/file_limits.hpp"

#include <fmt/format.h>
#include <utf8.h>

#include <algorithm>
#include <queue>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "data/bpe_detail.hpp"
#include "data/text.hpp"

namespace glass {

namespace {

using bpe_detail::is_scalar_value;
using bpe_detail::pair_key;

constexpr char32_t kSpace = BpeTokenizer::kSpaceMark;

const char32_t* const kSpecialTexts[] = {U"<unk>", U"<s>", U"</s>"};

/// "<0xHH>" with HH in upper-case hex, as SentencePiece names byte tokens.
std::u32string byte_text(unsigned b) {
  const char* hex = "0123456789ABCDEF";
  return std::u32string{
      U'<', U'0', U'x', static_cast<char32_t>(hex[b >> 4]), static_cast<char32_t>(hex[b & 15]),
      U'>'};
}

bool is_upper_hex(char32_t c) { return (c >= U'0' && c <= U'9') || (c >= U'A' && c <= U'F'); }

/// Whether `text` matches the byte-token pattern "<0xHH>" starting at `i` (for `length` of its
/// characters: a prefix when length < 6).
bool matches_byte_pattern(const std::u32string& text, std::size_t i, std::size_t length,
                          std::size_t pattern_start = 0) {
  static const char32_t pattern[] = {U'<', U'0', U'x', 0, 0, U'>'};  // 0 = a hex digit
  for (std::size_t k = 0; k < length; ++k) {
    const char32_t want = pattern[pattern_start + k];
    const char32_t c = text[i + k];
    if (want == 0 ? !is_upper_hex(c) : c != want) return false;
  }
  return true;
}

/// A trie of token texts: add() stores a text's characters as a path ending at its token id;
/// walk() follows a text down the path and reports each length k whose first k characters are
/// a stored text, with its id. Edges are one hash map keyed by (node, character).
class TokenTrie {
 public:
  template <class It>
  void add(It first, It last, std::int32_t id) {
    std::int32_t node = 0;
    for (It c = first; c != last; ++c) {
      const auto [edge, added] = edges_.try_emplace(key(node, *c), -1);
      if (added) {
        edge->second = static_cast<std::int32_t>(token_at_.size());
        token_at_.push_back(-1);
      }
      node = edge->second;
    }
    token_at_[static_cast<std::size_t>(node)] = id;
  }
  template <class It, class Visit>
  void walk(It first, It last, Visit visit) const {
    std::int32_t node = 0;
    std::size_t k = 0;
    for (It c = first; c != last; ++c) {
      const auto edge = edges_.find(key(node, *c));
      if (edge == edges_.end()) return;
      node = edge->second;
      ++k;
      if (token_at_[static_cast<std::size_t>(node)] >= 0)
        visit(k, token_at_[static_cast<std::size_t>(node)]);
    }
  }

 private:
  static std::uint64_t key(std::int32_t node, char32_t c) {
    return (static_cast<std::uint64_t>(node) << 32) | c;
  }
  std::unordered_map<std::uint64_t, std::int32_t> edges_;
  std::vector<std::int32_t> token_at_ = {-1};  // [node]: the token whose text ends here, or -1
};

}  // namespace

std::u32string BpeTokenizer::normalize(const std::u32string& text) {
  if (text.empty()) return {};
  std::u32string out;
  out.reserve(text.size() + 1);
  out.push_back(kSpace);  // the dummy prefix
  for (char32_t c : text) out.push_back(c == U' ' ? kSpace : c);
  return out;
}

bool BpeTokenizer::clashes_with(const std::u32string& text, const std::u32string& special) {
  const std::size_t n = text.size();
  const std::u32string& s = special;
  if (text.find(s) != std::u32string::npos) return true;
  // A proper prefix starting with '<' or a proper suffix ending with '>', 2 characters or more.
  return n >= 2 && n < s.size() &&
         ((text[0] == U'<' && s.compare(0, n, text) == 0) ||
          (text[n - 1] == U'>' && s.compare(s.size() - n, n, text) == 0));
}

const std::vector<std::u32string>& BpeTokenizer::chat_markers() {
  static const std::vector<std::u32string> markers = {U"<|im_start|>", U"<|im_end|>"};
  return markers;
}

bool BpeTokenizer::clashes_with_reserved(const std::u32string& text) {
  const std::size_t n = text.size();
  for (const char32_t* special : kSpecialTexts)
    if (clashes_with(text, special)) return true;
  // Contains "<0xHH>".
  for (std::size_t i = 0; i + 6 <= n; ++i)
    if (matches_byte_pattern(text, i, 6)) return true;
  if (n >= 2 && n < 6) {
    if (matches_byte_pattern(text, 0, n, 0)) return true;      // a prefix: "<0", "<0x", ...
    if (matches_byte_pattern(text, 0, n, 6 - n)) return true;  // a suffix: "F>", "0xFF>", ...
  }
  return false;
}

BpeTokenizer::BpeTokenizer(std::vector<char32_t> chars, std::vector<BpeMerge> merges,
                           std::vector<std::u32string> added)
    : chars_(std::move(chars)), merges_(std::move(merges)), added_(std::move(added)) {
  const std::size_t n =
      static_cast<std::size_t>(kFirstCharId) + chars_.size() + merges_.size() + added_.size();
  if (n > kMaxVocabSize)
    throw std::invalid_argument(
        fmt::format("BPE vocabulary: {} tokens; the largest vocabulary glass accepts has {}", n,
                    kMaxVocabSize));
  texts_.reserve(static_cast<std::size_t>(kFirstCharId) + chars_.size() + merges_.size() +
                 added_.size());
  for (const char32_t* s : kSpecialTexts) texts_.emplace_back(s);
  for (unsigned b = 0; b < 256; ++b) texts_.push_back(byte_text(b));
  for (std::size_t i = 0; i < texts_.size(); ++i)
    text_ids_.emplace(texts_[i], static_cast<std::int32_t>(i));

  for (std::size_t i = 0; i < chars_.size(); ++i) {
    const char32_t c = chars_[i];
    const auto id = static_cast<std::int32_t>(texts_.size());
    if (!is_scalar_value(c))
      throw std::invalid_argument(
          fmt::format("BPE vocabulary: base character {} (id {}) is not a Unicode scalar value",
                      static_cast<std::uint32_t>(c), id));
    if (c == U' ')
      throw std::invalid_argument(fmt::format(
          "BPE vocabulary: a space cannot be a base character (id {}); spaces are written '▁'",
          id));
    if (!char_ids_.emplace(c, id).second)
      throw std::invalid_argument(
          fmt::format("BPE vocabulary: base character {} appears twice (ids {} and {})",
                      describe_char(c), char_ids_.at(c), id));
    texts_.emplace_back(1, c);
    text_ids_.emplace(texts_.back(), id);
  }

  for (std::size_t r = 0; r < merges_.size(); ++r) {
    const BpeMerge m = merges_[r];
    const auto id = static_cast<std::int32_t>(texts_.size());
    for (std::int32_t part : {m.left, m.right}) {
      if (part < kFirstCharId || part >= id)
        throw std::invalid_argument(fmt::format(
            "BPE vocabulary: merge {} (making id {}) refers to id {}, which is not an earlier "
            "character or merged token (ids {}..{})",
            r, id, part, kFirstCharId, id - 1));
    }
    const std::size_t length = texts_[static_cast<std::size_t>(m.left)].size() +
                               texts_[static_cast<std::size_t>(m.right)].size();
    if (length > kMaxTokenLength)
      throw std::invalid_argument(
          fmt::format("BPE vocabulary: merge {} makes token {}, {} characters long; the longest "
                      "token glass accepts has {}",
                      r, id, length, kMaxTokenLength));
    std::u32string text =
        texts_[static_cast<std::size_t>(m.left)] + texts_[static_cast<std::size_t>(m.right)];
    if (text.find(kSpace, 1) != std::u32string::npos)
      throw std::invalid_argument(fmt::format(
          "BPE vocabulary: merge {} makes \"{}\", with a '▁' after its start (a '▁' may only "
          "start a token: merges do not cross a word boundary)",
          r, u32_to_utf8(text)));
    if (clashes_with_reserved(text))
      throw std::invalid_argument(fmt::format(
          "BPE vocabulary: merge {} makes \"{}\", which clashes with a special or byte token "
          "(contains one, or is a beginning or end of one)",
          r, u32_to_utf8(text)));
    if (!text_ids_.emplace(text, id).second)
      throw std::invalid_argument(
          fmt::format("BPE vocabulary: merge {} makes \"{}\", already token {}", r,
                      u32_to_utf8(text), text_ids_.at(text)));
    texts_.push_back(std::move(text));
  }

  add_specials();

  // Every non-empty text starts with the dummy prefix '▁': without it as a token, spaces would
  // go to byte tokens and decode as '▁'.
  if (char_ids_.count(kSpace) == 0)
    throw std::invalid_argument("BPE vocabulary: '▁' (U+2581, the space) is not a base character");

  low_char_ids_.assign(0x3000, -1);
  for (const auto& [c, id] : char_ids_)
    if (c < low_char_ids_.size()) low_char_ids_[c] = id;

  // Every way two encodable tokens (characters or merged) concatenate to a merged token: the
  // pairs the encoder may merge. The specials and bytes are never a concatenation (the rule
  // of clashes_with_reserved), so this is exactly "the concatenation is in the vocabulary".
  std::vector<PairSlot> pairs;
  {
    const std::int32_t first_merge = first_merge_id();
    const std::int32_t n_tokens = first_added_id();  // the added specials are never merged
    // The encodable tokens in two tries, one reading texts forwards and one backwards: walking a
    // token's text down the first meets every prefix that is a token, down the second every
    // suffix, so all cuts of a token into two tokens cost one pass over its text. (A lookup of
    // both halves at every cut would cost its length squared: a vocabulary with long tokens
    // would take minutes to build.)
    TokenTrie forwards, backwards;
    for (std::int32_t id = kFirstCharId; id < n_tokens; ++id) {
      const std::u32string& t = texts_[static_cast<std::size_t>(id)];
      forwards.add(t.begin(), t.end(), id);
      backwards.add(t.rbegin(), t.rend(), id);
    }
    std::vector<std::int32_t> prefix_id, suffix_id;  // [k]: the token t[0, k) / t[k, n), or -1
    for (std::int32_t id = first_merge; id < n_tokens; ++id) {
      const std::u32string& t = texts_[static_cast<std::size_t>(id)];
      const std::size_t n = t.size();
      prefix_id.assign(n + 1, -1);
      suffix_id.assign(n + 1, -1);
      forwards.walk(t.begin(), t.end() - 1,
                    [&](std::size_t k, std::int32_t token) { prefix_id[k] = token; });
      backwards.walk(t.rbegin(), t.rend() - 1,
                     [&](std::size_t k, std::int32_t token) { suffix_id[n - k] = token; });
      for (std::size_t k = 1; k < n; ++k)
        if (prefix_id[k] >= 0 && suffix_id[k] >= 0)
          pairs.push_back({pair_key(prefix_id[k], suffix_id[k]), id});
    }
  }
  std::size_t capacity = 16;
  while (capacity < 2 * pairs.size()) capacity *= 2;
  pair_table_.assign(capacity, PairSlot{});
  pair_mask_ = capacity - 1;
  pair_shift_ = 64;
  for (std::size_t c = capacity; c > 1; c /= 2) --pair_shift_;
  for (const PairSlot& p : pairs) {  // each (left, right) once: the texts are distinct
    std::uint64_t i = pair_slot(p.key);
    while (pair_table_[i].token >= 0) i = (i + 1) & pair_mask_;
    pair_table_[i] = p;
  }
}

void BpeTokenizer::add_specials() {
  for (std::size_t k = 0; k < added_.size(); ++k) {
    const std::u32string& text = added_[k];
    const auto id = static_cast<std::int32_t>(texts_.size());
    if (text.empty())
      throw std::invalid_argument(fmt::format("BPE vocabulary: added token {} is empty", id));
    for (std::size_t r = 0; r < merges_.size(); ++r) {
      const std::u32string& merged = texts_[static_cast<std::size_t>(first_merge_id()) + r];
      if (clashes_with(merged, text))
        throw std::invalid_argument(fmt::format(
            "BPE vocabulary: merge {} makes \"{}\", which clashes with the added token \"{}\" "
            "(contains it, or is a beginning or end of it)",
            r, u32_to_utf8(merged), u32_to_utf8(text)));
    }
    if (!text_ids_.emplace(text, id).second)
      throw std::invalid_argument(
          fmt::format("BPE vocabulary: added token \"{}\" is already token {}", u32_to_utf8(text),
                      text_ids_.at(text)));
    texts_.push_back(text);
  }
}

BpeTokenizer BpeTokenizer::with_added(const std::vector<std::u32string>& added) const {
  std::vector<std::u32string> all = added_;
  all.insert(all.end(), added.begin(), added.end());
  return BpeTokenizer(chars_, merges_, std::move(all));
}

// ---- lookups ----------------------------------------------------------------------------------

void BpeTokenizer::check_id(std::int32_t id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= texts_.size())
    throw std::out_of_range(fmt::format("token id {} is outside the vocabulary (valid ids: 0..{})",
                                        id, texts_.size() - 1));
}

const std::u32string& BpeTokenizer::token_text32(std::int32_t id) const {
  check_id(id);
  return texts_[static_cast<std::size_t>(id)];
}

std::string BpeTokenizer::token_text(std::int32_t id) const {
  return u32_to_utf8(token_text32(id));
}

float BpeTokenizer::score(std::int32_t id) const {
  check_id(id);
  if (id < kFirstCharId || id >= first_added_id()) return 0.0f;
  const std::int32_t first = first_merge_id();
  if (id >= first) return -static_cast<float>(id - first);
  return -static_cast<float>(merges_.size() + static_cast<std::size_t>(id - kFirstCharId));
}

std::int32_t BpeTokenizer::id_of_text(const std::u32string& text) const {
  const auto it = text_ids_.find(text);
  return it == text_ids_.end() ? -1 : it->second;
}

// ---- encoding ---------------------------------------------------------------------------------

namespace {

/// A symbol of a word being encoded: a linked list over the symbols' starting order; a merge
/// keeps the left symbol (with the merged id) and unlinks the right one.
struct Symbol {
  std::int32_t id;
  std::int32_t prev;
  std::int32_t next;
};

/// An adjacent pair whose concatenation is a token, with the ids both symbols had when queued.
struct Candidate {
  std::int32_t token, left, right, left_id, right_id;
};

/// The heap order: the best candidate is the one with the best score (the smallest merged id:
/// scores fall with the merge rank), then the leftmost.
bool worse(const Candidate& a, const Candidate& b) {
  return a.token != b.token ? a.token > b.token : a.left > b.left;
}

}  // namespace

struct BpeTokenizer::Scratch {
  std::vector<Symbol> sym;
  std::vector<Candidate> queue;  // a heap (std::push_heap with `worse`)
};

void BpeTokenizer::encode_word(const char32_t* word, std::size_t length,
                               std::vector<std::int32_t>& ids, Scratch& scratch) const {
  std::vector<Symbol>& sym = scratch.sym;
  std::vector<Candidate>& queue = scratch.queue;
  sym.clear();
  queue.clear();
  for (std::size_t i = 0; i < length; ++i) {
    const std::int32_t id = char_id(word[i]);
    if (id >= 0) {
      sym.push_back({id, 0, 0});
    } else {  // byte fallback: one token per UTF-8 byte
      for (unsigned char b : char_to_utf8(word[i])) sym.push_back({kFirstByteId + b, 0, 0});
    }
  }
  const auto n = static_cast<std::int32_t>(sym.size());
  for (std::int32_t i = 0; i < n; ++i) {
    sym[static_cast<std::size_t>(i)].prev = i - 1;
    sym[static_cast<std::size_t>(i)].next = i + 1 < n ? i + 1 : -1;
  }

  auto try_pair = [&](std::int32_t left) {
    if (left < 0) return;
    const std::int32_t right = sym[static_cast<std::size_t>(left)].next;
    if (right < 0) return;
    const std::int32_t a = sym[static_cast<std::size_t>(left)].id;
    const std::int32_t b = sym[static_cast<std::size_t>(right)].id;
    const std::int32_t token = pair_token(pair_key(a, b));
    if (token < 0) return;
    queue.push_back({token, left, right, a, b});
    std::push_heap(queue.begin(), queue.end(), worse);
  };
  for (std::int32_t i = 0; i + 1 < n; ++i) try_pair(i);
  while (!queue.empty()) {
    std::pop_heap(queue.begin(), queue.end(), worse);
    const Candidate c = queue.back();
    queue.pop_back();
    Symbol& left = sym[static_cast<std::size_t>(c.left)];
    // Stale when either symbol changed since the candidate was queued.
    if (left.id != c.left_id || left.next != c.right ||
        sym[static_cast<std::size_t>(c.right)].id != c.right_id)
      continue;
    Symbol& right = sym[static_cast<std::size_t>(c.right)];
    left.id = c.token;
    left.next = right.next;
    if (right.next >= 0) sym[static_cast<std::size_t>(right.next)].prev = c.left;
    right.id = -1;
    try_pair(left.prev);
    try_pair(c.left);
  }
  for (std::int32_t i = n > 0 ? 0 : -1; i >= 0; i = sym[static_cast<std::size_t>(i)].next)
    ids.push_back(sym[static_cast<std::size_t>(i)].id);
}

template <class Ids>
void BpeTokenizer::encode_into(const std::u32string& text, Ids& ids, bool dummy_prefix) const {
  const std::u32string norm =
      dummy_prefix || text.empty() ? normalize(text) : normalize(text).substr(1);
  // Words (each starting at a '▁') never merge with each other: each distinct word is encoded
  // once; its ids are kept in `pool` at (offset, length) and reused.
  std::unordered_map<std::u32string_view, std::pair<std::uint32_t, std::uint32_t>> cache;
  cache.reserve(4096);
  std::vector<std::int32_t> pool;
  Scratch scratch;
  std::size_t start = 0;
  for (std::size_t i = 1; i <= norm.size(); ++i) {
    if (i < norm.size() && norm[i] != kSpace) continue;
    const std::u32string_view w(norm.data() + start, i - start);
    auto it = cache.find(w);
    if (it == cache.end()) {
      const auto offset = static_cast<std::uint32_t>(pool.size());
      encode_word(w.data(), w.size(), pool, scratch);
      it = cache.emplace(w, std::pair{offset, static_cast<std::uint32_t>(pool.size() - offset)})
               .first;
    }
    const std::int32_t* p = pool.data() + it->second.first;
    for (std::uint32_t k = 0; k < it->second.second; ++k) ids.push_back(p[k]);
    start = i;
  }
}

std::vector<std::int32_t> BpeTokenizer::encode(const std::u32string& text) const {
  std::vector<std::int32_t> ids;
  ids.reserve(text.size() / 2 + 1);
  encode_into(text, ids);
  return ids;
}

std::vector<std::int32_t> BpeTokenizer::encode_continuation(const std::u32string& text) const {
  std::vector<std::int32_t> ids;
  ids.reserve(text.size() / 2 + 1);
  encode_into(text, ids, /*dummy_prefix=*/false);
  return ids;
}

TokenIds BpeTokenizer::encode_compact(const std::u32string& text) const {
  TokenIds ids(vocab_size());
  ids.reserve(text.size() / 2 + 1);
  encode_into(text, ids);
  ids.shrink_to_fit();
  return ids;
}

// ---- decoding ---------------------------------------------------------------------------------

std::u32string BpeTokenizer::decode(const std::vector<std::int32_t>& ids,
                                    bool drop_dummy_prefix) const {
  std::u32string out;
  std::string bytes;  // a run of byte tokens, reassembled into UTF-8
  auto flush = [&] {
    if (bytes.empty()) return;
    if (utf8::is_valid(bytes.begin(), bytes.end())) {
      out += utf8_to_u32(bytes);
    } else {  // as Hugging Face's ByteFallback decoder: one U+FFFD per byte
      out.append(bytes.size(), U'\uFFFD');
    }
    bytes.clear();
  };
  for (std::int32_t id : ids) {
    check_id(id);
    if (id >= kFirstByteId && id < kFirstCharId) {
      bytes.push_back(static_cast<char>(id - kFirstByteId));
      continue;
    }
    flush();
    if (id == kUnknownId) {
      out.push_back(U'\uFFFD');
    } else if (id >= first_added_id()) {  // an added special: its marker text, as it is
      out += texts_[static_cast<std::size_t>(id)];
    } else if (id >= kFirstCharId) {
      for (char32_t c : texts_[static_cast<std::size_t>(id)]) out.push_back(c == kSpace ? U' ' : c);
    }  // BOS and EOS: nothing
  }
  flush();
  if (drop_dummy_prefix && !out.empty() && out[0] == U' ') out.erase(0, 1);
  return out;
}

std::string BpeTokenizer::decode_utf8(const std::vector<std::int32_t>& ids,
                                      bool drop_dummy_prefix) const {
  return u32_to_utf8(decode(ids, drop_dummy_prefix));
}

}  // namespace glass
