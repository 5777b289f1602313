#pragma once
// A chat task set the project makes itself, from templates and the words of a bundled corpus: no
// download, the same bytes for the same seed on every machine. Portuguese conversations in five
// families, each answer checkable by exact match:
//   reverse   "inverta a palavra casa"           -> "asac"
//   count     "quantas letras a em banana?"      -> "3"
//   add       "quanto é 12 + 7?"                 -> "19"
//   spell     "soletre gato"                     -> "g-a-t-o"
//   identity  "quem é você?"                     -> a fixed short answer
// with several phrasings each, and a system message in about one conversation in four.
//
// Items, not lines, are split: a word (reverse, count and spell share the words), an unordered
// pair of numbers below 100 (add) or an identity question belongs to one split only (train,
// validation or the held-out exam), so an exam question is never one the model was trained on.
// Each JSONL line is {"messages": [...], "family": "...", "item": "..."} (data/chat_data.hpp
// reads it, keeping "family"); "item" is the word, the pair "a+b" (a <= b) or the question.
//
// Determinism: the random choices come from SplitMix64 (Steele, Lea & Flood, 2014) and an own
// Fisher-Yates shuffle, never from the standard library's distributions (their results differ
// between implementations).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace glass {

/// How many conversations of each split, and the seed.
struct ChatTaskOptions {
  std::uint64_t seed = 1;
  std::size_t n_train = 3000;  ///< training conversations
  std::size_t n_val = 250;     ///< validation conversations
  std::size_t n_exam = 250;    ///< held-out exam conversations
};

/// The three splits as JSONL text (one conversation per line, "\n" after each).
struct ChatTaskSplits {
  std::string train, val, exam;
};

/// The distinct lower-case words of 3 to 8 letters (a-z and Portuguese accented letters
/// áàâãéêíóôõúüç) of `corpus`, in order of first appearance. A word is a maximal run of letters
/// (any case); one with a capital letter is left out.
std::vector<std::u32string> chat_task_words(const std::u32string& corpus);

/// The task set from the words of `corpus` (chat_task_words). Throws std::invalid_argument when
/// the corpus has fewer than 100 such words (each split needs its own).
ChatTaskSplits make_chat_tasks(const std::u32string& corpus, const ChatTaskOptions& options);

}  // namespace glass
