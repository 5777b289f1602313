// The chat task set made from templates. See data/chat_tasks.hpp.

#include "data/chat_tasks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <utility>

#include "data/text.hpp"

namespace glass {

namespace {

/// SplitMix64: a 64-bit state stepped by the golden ratio, then mixed.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// A number in [0, n) (n > 0; the modulo's bias is below n / 2^64).
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(next() % n); }

 private:
  std::uint64_t state_;
};

template <class T>
void shuffle(std::vector<T>& v, SplitMix64& rng) {
  for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.below(i)]);
}

const std::u32string kAccented = U"áàâãéêíóôõúüç";

bool is_lower_letter(char32_t c) {
  return (c >= U'a' && c <= U'z') || kAccented.find(c) != std::u32string::npos;
}
bool is_upper_letter(char32_t c) {
  return (c >= U'A' && c <= U'Z') ||
         std::u32string(U"ÁÀÂÃÉÊÍÓÔÕÚÜÇ").find(c) != std::u32string::npos;
}

const char* const kSystems[] = {
    "Você é um assistente. Responda só com a resposta, sem explicação.",
    "Responda com exatidão e brevidade.",
};

const char* const kReverse[] = {"inverta a palavra {}", "escreva {} de trás para frente",
                                "qual é o inverso de {}?", "{} ao contrário:"};
const char* const kCount[] = {"quantas letras {} em {}?", "quantas vezes a letra {} aparece em {}?",
                              "conte as letras {} na palavra {}"};
const char* const kAdd[] = {"quanto é {} + {}?", "some {} e {}", "{} mais {} é igual a quanto?"};
const char* const kSpell[] = {"soletre {}", "soletre a palavra {}",
                              "escreva {} letra por letra, separando com hífens"};
const std::pair<const char*, const char*> kIdentity[] = {
    {"quem é você?", "Sou o GlassLLM, um pequeno modelo de linguagem."},
    {"qual é o seu nome?", "Meu nome é GlassLLM."},
    {"como você se chama?", "Eu me chamo GlassLLM."},
    {"o que você é?", "Sou um modelo de linguagem pequeno, treinado para responder."},
    {"você é uma pessoa?", "Não. Sou um modelo de linguagem, o GlassLLM."},
    {"você pensa?", "Não como uma pessoa: escolho o próximo símbolo pelo que aprendi."},
    {"o que você sabe fazer?",
     "Sei inverter e soletrar palavras, contar letras e somar números pequenos."},
    {"quem treinou você?", "Fui treinado com o GlassLLM, um modelo que se pode ler por dentro."},
};

template <std::size_t N>
const char* pick(const char* const (&list)[N], SplitMix64& rng) {
  return list[rng.below(N)];
}

/// One split's items: words, number pairs and identity questions (indices into kIdentity).
struct Items {
  std::vector<std::u32string> words;
  std::vector<std::pair<int, int>> pairs;  // a <= b
  std::vector<std::size_t> identity;
};

/// A conversation line: the optional system message, the question, the answer. (The random
/// draws of a line are made one statement at a time: the order in which a call's arguments are
/// evaluated is unspecified in C++.)
std::string line(const std::string& family, const std::string& item, const std::string& question,
                 const std::string& answer, SplitMix64& rng) {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (rng.below(4) == 0) messages.push_back({{"role", "system"}, {"content", pick(kSystems, rng)}});
  messages.push_back({{"role", "user"}, {"content", question}});
  messages.push_back({{"role", "assistant"}, {"content", answer}});
  nlohmann::ordered_json j;
  j["messages"] = std::move(messages);
  j["family"] = family;
  j["item"] = item;
  return j.dump() + "\n";
}

/// The `i`th conversation of a split (families in turn: reverse, count, add, spell).
std::string task(std::size_t i, const Items& items, SplitMix64& rng) {
  const std::size_t family = i % 4, k = i / 4;
  if (family == 2) {
    auto [a, b] = items.pairs[k % items.pairs.size()];
    const std::string item = fmt::format("{}+{}", a, b);
    if (rng.below(2) == 1) std::swap(a, b);
    const std::string question = fmt::format(fmt::runtime(pick(kAdd, rng)), a, b);
    return line("add", item, question, std::to_string(a + b), rng);
  }
  const std::u32string& word = items.words[k % items.words.size()];
  const std::string w = u32_to_utf8(word);
  if (family == 0) {
    const std::u32string reversed(word.rbegin(), word.rend());
    const std::string question = fmt::format(fmt::runtime(pick(kReverse, rng)), w);
    return line("reverse", w, question, u32_to_utf8(reversed), rng);
  }
  if (family == 1) {  // a letter of the word two times in three, else any letter a-z
    const char32_t letter = rng.below(3) < 2 ? word[rng.below(word.size())]
                                             : static_cast<char32_t>(U'a' + rng.below(26));
    const auto n = std::count(word.begin(), word.end(), letter);
    const std::string question =
        fmt::format(fmt::runtime(pick(kCount, rng)), char_to_utf8(letter), w);
    return line("count", w, question, std::to_string(n), rng);
  }
  std::string spelled;
  for (std::size_t c = 0; c < word.size(); ++c) spelled += (c ? "-" : "") + char_to_utf8(word[c]);
  const std::string question = fmt::format(fmt::runtime(pick(kSpell, rng)), w);
  return line("spell", w, question, spelled, rng);
}

/// A split: n conversations in turn over the families, each identity question `identity_repeats`
/// times, shuffled.
std::string split(const Items& items, std::size_t n, std::size_t identity_repeats,
                  SplitMix64& rng) {
  std::vector<std::string> lines;
  for (std::size_t i = 0; i < n; ++i) lines.push_back(task(i, items, rng));
  for (std::size_t q : items.identity)
    for (std::size_t r = 0; r < identity_repeats; ++r)
      lines.push_back(
          line("identity", kIdentity[q].first, kIdentity[q].first, kIdentity[q].second, rng));
  shuffle(lines, rng);
  std::string text;
  for (const std::string& l : lines) text += l;
  return text;
}

}  // namespace

std::vector<std::u32string> chat_task_words(const std::u32string& corpus) {
  std::vector<std::u32string> words;
  std::set<std::u32string> seen;
  std::size_t i = 0;
  while (i < corpus.size()) {
    if (!is_lower_letter(corpus[i]) && !is_upper_letter(corpus[i])) {
      ++i;
      continue;
    }
    std::size_t j = i;
    bool lower = true;
    while (j < corpus.size() && (is_lower_letter(corpus[j]) || is_upper_letter(corpus[j]))) {
      lower = lower && is_lower_letter(corpus[j]);
      ++j;
    }
    const std::u32string word = corpus.substr(i, j - i);
    if (lower && word.size() >= 3 && word.size() <= 8 && seen.insert(word).second)
      words.push_back(word);
    i = j;
  }
  return words;
}

ChatTaskSplits make_chat_tasks(const std::u32string& corpus, const ChatTaskOptions& options) {
  SplitMix64 rng(options.seed);
  std::vector<std::u32string> words = chat_task_words(corpus);
  if (words.size() < 100)
    throw std::invalid_argument(fmt::format(
        "the corpus has {} lower-case words of 3 to 8 letters; the task set needs at least 100",
        words.size()));
  shuffle(words, rng);
  std::vector<std::pair<int, int>> pairs;
  for (int a = 0; a < 100; ++a)
    for (int b = a; b < 100; ++b) pairs.emplace_back(a, b);
  shuffle(pairs, rng);
  std::vector<std::size_t> identity(std::size(kIdentity));
  for (std::size_t q = 0; q < identity.size(); ++q) identity[q] = q;
  shuffle(identity, rng);

  // Items: 20% of the words and pairs to the exam, 10% to validation, the rest to training;
  // one identity question each to the exam and validation.
  Items exam, val, train;
  const std::size_t w20 = words.size() / 5, w10 = words.size() / 10;
  exam.words.assign(words.begin(), words.begin() + w20);
  val.words.assign(words.begin() + w20, words.begin() + w20 + w10);
  train.words.assign(words.begin() + w20 + w10, words.end());
  const std::size_t p20 = pairs.size() / 5, p10 = pairs.size() / 10;
  exam.pairs.assign(pairs.begin(), pairs.begin() + p20);
  val.pairs.assign(pairs.begin() + p20, pairs.begin() + p20 + p10);
  train.pairs.assign(pairs.begin() + p20 + p10, pairs.end());
  exam.identity = {identity[0]};
  val.identity = {identity[1]};
  train.identity.assign(identity.begin() + 2, identity.end());

  ChatTaskSplits splits;
  splits.train = split(train, options.n_train, 10, rng);
  splits.val = split(val, options.n_val, 1, rng);
  splits.exam = split(exam, options.n_exam, 1, rng);
  return splits;
}

}  // namespace glass
