// Training a BPE vocabulary: the most frequent adjacent pair of the training text merged again
// and again, with pair counts kept up to date around each merge (data/bpe_tokenizer.hpp has the
// rules; the tokenizer itself is in data/bpe_tokenizer.cpp).

#include "data/bpe_tokenizer.hpp"

#include <fmt/format.h>
#include <utf8.h>
#include <algorithm>
#include <queue>
#include <string_view>
#include <unordered_set>
#include <utility>
#include "data/text.hpp"

#include "data/bpe_detail.hpp"
#include "data/file_limits.hpp"

namespace glass {

using bpe_detail::is_scalar_value;
using bpe_detail::pair_key;

namespace {
constexpr char32_t kSpace = BpeTokenizer::kSpaceMark;

/// Whether a merge would keep the chat markers from being added later (with_added).
bool clashes_with_chat_markers(const std::u32string& text) {
  for (const std::u32string& m : BpeTokenizer::chat_markers())
    if (BpeTokenizer::clashes_with(text, m)) return true;
  return false;
}
}  // namespace

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
      // (A pair longer than kMaxTokenLength characters is never merged, as SentencePiece's
      // max_piece_length: a text of long runs cannot make tokens of any length.)
      const std::u32string t =
          texts[static_cast<std::size_t>(l)] + texts[static_cast<std::size_t>(r)];
      if (t.size() > kMaxTokenLength || merged_texts.count(t) || clashes_with_reserved(t) ||
          clashes_with_chat_markers(t)) {
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
          "pair of adjacent tokens is left to merge (tokens are at most {} characters long; the "
          "largest vocab_size for this text is {})",
          vocab_size, merges.size(), kMaxTokenLength, minimum + merges.size()));

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

}  // namespace glass
