// The BPE tokenizer: training, encoding, decoding. See data/bpe_tokenizer.hpp for the rules.

#include "data/bpe_tokenizer.hpp"

#include <fmt/format.h>
#include <utf8.h>

#include <algorithm>
#include <queue>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "data/text.hpp"

namespace glass {

namespace {

constexpr char32_t kSpace = BpeTokenizer::kSpaceMark;

std::uint64_t pair_key(std::int32_t left, std::int32_t right) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32) |
         static_cast<std::uint32_t>(right);
}

bool is_scalar_value(char32_t c) { return c <= 0x10FFFF && (c < 0xD800 || c > 0xDFFF); }

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

}  // namespace

std::u32string BpeTokenizer::normalize(const std::u32string& text) {
  if (text.empty()) return {};
  std::u32string out;
  out.reserve(text.size() + 1);
  out.push_back(kSpace);  // the dummy prefix
  for (char32_t c : text) out.push_back(c == U' ' ? kSpace : c);
  return out;
}

bool BpeTokenizer::clashes_with_reserved(const std::u32string& text) {
  const std::size_t n = text.size();
  for (const char32_t* special : kSpecialTexts) {
    const std::u32string s(special);
    if (text.find(s) != std::u32string::npos) return true;
    // A proper prefix starting with '<' or a proper suffix ending with '>', 2 characters or more.
    if (n >= 2 && n < s.size() &&
        (s.compare(0, n, text) == 0 || s.compare(s.size() - n, n, text) == 0))
      return true;
  }
  // Contains "<0xHH>".
  for (std::size_t i = 0; i + 6 <= n; ++i)
    if (matches_byte_pattern(text, i, 6)) return true;
  if (n >= 2 && n < 6) {
    if (matches_byte_pattern(text, 0, n, 0)) return true;      // a prefix: "<0", "<0x", ...
    if (matches_byte_pattern(text, 0, n, 6 - n)) return true;  // a suffix: "F>", "0xFF>", ...
  }
  return false;
}

BpeTokenizer::BpeTokenizer(std::vector<char32_t> chars, std::vector<BpeMerge> merges)
    : chars_(std::move(chars)), merges_(std::move(merges)) {
  texts_.reserve(static_cast<std::size_t>(kFirstCharId) + chars_.size() + merges_.size());
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
  for (std::size_t id = static_cast<std::size_t>(first_merge_id()); id < texts_.size(); ++id) {
    const std::u32string& t = texts_[id];
    for (std::size_t k = 1; k < t.size(); ++k) {
      const auto a = text_ids_.find(t.substr(0, k));
      if (a == text_ids_.end() || a->second < kFirstCharId) continue;
      const auto b = text_ids_.find(t.substr(k));
      if (b == text_ids_.end() || b->second < kFirstCharId) continue;
      pairs.push_back({pair_key(a->second, b->second), static_cast<std::int32_t>(id)});
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

// ---- training ---------------------------------------------------------------------------------

BpeTokenizer BpeTokenizer::train(const std::u32string& text, std::size_t vocab_size) {
  if (text.empty()) throw std::invalid_argument("BPE training: the training text is empty");
  const std::u32string norm = normalize(text);

  // 1. The base characters, most frequent first (ties: smaller code point first).
  std::unordered_map<char32_t, std::size_t> char_counts;
  for (std::size_t i = 0; i < norm.size(); ++i) {
    if (!is_scalar_value(norm[i]))
      throw std::invalid_argument(
          fmt::format("BPE training: character {} at position {} is not a Unicode scalar value",
                      static_cast<std::uint32_t>(norm[i]), i));
    ++char_counts[norm[i]];
  }
  std::vector<std::pair<char32_t, std::size_t>> by_count(char_counts.begin(), char_counts.end());
  std::sort(by_count.begin(), by_count.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  std::vector<char32_t> chars;
  for (const auto& [c, n] : by_count) chars.push_back(c);
  const std::size_t minimum = static_cast<std::size_t>(kFirstCharId) + chars.size();
  if (vocab_size < minimum)
    throw std::invalid_argument(fmt::format(
        "BPE training: vocab_size {} is too small for this text: 3 special tokens + 256 byte "
        "tokens + its {} distinct characters ('▁' included) need at least {}",
        vocab_size, chars.size(), minimum));
  std::unordered_map<char32_t, std::int32_t> char_ids;
  for (std::size_t i = 0; i < chars.size(); ++i)
    char_ids.emplace(chars[i], kFirstCharId + static_cast<std::int32_t>(i));

  // 2. The distinct words (each starts at a '▁') with their frequencies, as id sequences.
  struct Word {
    std::vector<std::int32_t> symbols;
    std::int64_t freq = 0;
  };
  std::vector<Word> words;
  {
    std::unordered_map<std::u32string_view, std::size_t> index;
    std::size_t start = 0;
    for (std::size_t i = 1; i <= norm.size(); ++i) {
      if (i < norm.size() && norm[i] != kSpace) continue;
      const std::u32string_view w(norm.data() + start, i - start);
      const auto [it, inserted] = index.emplace(w, words.size());
      if (inserted) {
        Word word;
        for (char32_t c : w) word.symbols.push_back(char_ids.at(c));
        words.push_back(std::move(word));
      }
      ++words[it->second].freq;
      start = i;
    }
  }

  // 3. Pair counts (frequency-weighted, overlaps counted), the words holding each pair, and a
  //    heap of (count, pair) entries; an entry whose count is no longer the pair's is stale.
  std::unordered_map<std::uint64_t, std::int64_t> counts;
  std::unordered_map<std::uint64_t, std::vector<std::int32_t>> where;
  auto note_word = [&where](std::uint64_t key, std::int32_t w) {
    auto& list = where[key];
    if (list.empty() || list.back() != w) list.push_back(w);
  };
  for (std::size_t w = 0; w < words.size(); ++w) {
    const auto& s = words[w].symbols;
    for (std::size_t j = 0; j + 1 < s.size(); ++j) {
      const std::uint64_t key = pair_key(s[j], s[j + 1]);
      counts[key] += words[w].freq;
      note_word(key, static_cast<std::int32_t>(w));
    }
  }
  struct Entry {
    std::int64_t count;
    std::uint64_t key;  // (left << 32 | right): smaller key = smaller left, then smaller right
  };
  // The top is the largest count; among equal counts, the smallest (left, right).
  auto lower = [](const Entry& a, const Entry& b) {
    return a.count != b.count ? a.count < b.count : a.key > b.key;
  };
  std::priority_queue<Entry, std::vector<Entry>, decltype(lower)> heap(lower);
  for (const auto& [key, n] : counts) heap.push({n, key});

  // Token texts so far, to refuse a merge whose text exists or clashes with a reserved token.
  std::vector<std::u32string> texts(static_cast<std::size_t>(kFirstCharId));
  for (char32_t c : chars) texts.emplace_back(1, c);
  std::unordered_set<std::u32string> merged_texts;
  std::unordered_set<std::uint64_t> refused;

  std::vector<BpeMerge> merges;
  std::vector<std::int32_t> visited(words.size(), -1);  // the last merge that rewrote each word
  std::vector<std::uint64_t> changed;
  std::vector<std::int32_t> out;
  const std::size_t wanted = vocab_size - minimum;
  while (merges.size() < wanted) {
    // 4. The most frequent allowed pair.
    bool found = false;
    std::uint64_t key = 0;
    while (!heap.empty()) {
      const Entry top = heap.top();
      heap.pop();
      const auto it = counts.find(top.key);
      if (it == counts.end() || it->second != top.count || top.count <= 0) continue;  // stale
      if (refused.count(top.key)) continue;
      const auto l = static_cast<std::int32_t>(top.key >> 32);
      const auto r = static_cast<std::int32_t>(top.key & 0xFFFFFFFFu);
      const std::u32string t =
          texts[static_cast<std::size_t>(l)] + texts[static_cast<std::size_t>(r)];
      if (merged_texts.count(t) || clashes_with_reserved(t)) {
        refused.insert(top.key);
        continue;
      }
      merged_texts.insert(t);
      texts.push_back(t);
      key = top.key;
      found = true;
      break;
    }
    if (!found)
      throw std::invalid_argument(fmt::format(
          "BPE training: vocab_size {} is larger than this text supports: after {} merges no "
          "pair of adjacent tokens is left to merge (the largest vocab_size for this text is {})",
          vocab_size, merges.size(), minimum + merges.size()));

    // 5. Rewrite every word holding the pair; update the counts of the pairs around each site.
    const auto l = static_cast<std::int32_t>(key >> 32);
    const auto r = static_cast<std::int32_t>(key & 0xFFFFFFFFu);
    const auto merged = static_cast<std::int32_t>(minimum + merges.size());
    const auto stamp = static_cast<std::int32_t>(merges.size());
    merges.push_back({l, r});
    std::vector<std::int32_t> holders = std::move(where[key]);
    where.erase(key);
    changed.clear();
    for (std::int32_t w : holders) {
      if (visited[static_cast<std::size_t>(w)] == stamp) continue;
      visited[static_cast<std::size_t>(w)] = stamp;
      Word& word = words[static_cast<std::size_t>(w)];
      const std::vector<std::int32_t>& s = word.symbols;
      const std::int64_t f = word.freq;
      auto add = [&](std::int32_t a, std::int32_t b, std::int64_t delta) {
        const std::uint64_t k = pair_key(a, b);
        counts[k] += delta;
        changed.push_back(k);
        if (delta > 0) note_word(k, w);
      };
      out.clear();
      bool last_is_new = false;  // whether out.back() is a merged symbol of this pass
      const std::size_t n = s.size();
      for (std::size_t i = 0; i < n;) {
        if (i + 1 < n && s[i] == l && s[i + 1] == r) {
          // The old pairs touching the site: (l, r), its left neighbour (unless the previous
          // site already removed it as its right neighbour) and its right neighbour.
          add(l, r, -f);
          if (i > 0 && !last_is_new) add(s[i - 1], l, -f);
          if (i + 2 < n) add(r, s[i + 2], -f);
          if (!out.empty()) add(out.back(), merged, f);  // the new pair on the left
          out.push_back(merged);
          last_is_new = true;
          i += 2;
        } else {
          if (last_is_new) add(merged, s[i], f);  // the new pair on the right
          out.push_back(s[i]);
          last_is_new = false;
          i += 1;
        }
      }
      word.symbols.assign(out.begin(), out.end());
    }
    std::sort(changed.begin(), changed.end());
    changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
    for (std::uint64_t k : changed) {
      const auto it = counts.find(k);
      if (it->second > 0) {
        heap.push({it->second, k});
      } else {
        counts.erase(it);
        where.erase(k);
      }
    }
  }
  return BpeTokenizer(std::move(chars), std::move(merges));
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
  if (id < kFirstCharId) return 0.0f;
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
void BpeTokenizer::encode_into(const std::u32string& text, Ids& ids) const {
  const std::u32string norm = normalize(text);
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
