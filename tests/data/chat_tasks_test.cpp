// The chat task set: the shipped files are what the generator writes for its documented seed,
// the splits share no item, and every answer is right.

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "data/chat_data.hpp"
#include "data/chat_tasks.hpp"
#include "data/text.hpp"
#include "test_paths.hpp"

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

const glass::ChatTaskSplits& generated() {
  static const glass::ChatTaskSplits splits = glass::make_chat_tasks(
      glass::load_text(glass_test::source_dir("/data/corpora/domcasmurro.txt")), {});
  return splits;
}

/// The items of a split's lines, by kind: "word" (reverse, count, spell), "pair", "question".
std::map<std::string, std::set<std::string>> items_of(const std::string& jsonl) {
  std::map<std::string, std::set<std::string>> items;
  std::istringstream in(jsonl);
  std::string line;
  while (std::getline(in, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    const std::string family = j["family"], item = j["item"];
    const std::string kind = family == "add" ? "pair" : family == "identity" ? "question" : "word";
    items[kind].insert(item);
  }
  return items;
}

/// The answer a family's item calls for (count: for the letter the question names).
std::string expected_answer(const glass::Conversation& c, const std::string& item) {
  const std::u32string word = glass::utf8_to_u32(item);
  const std::string& question = c.messages[c.messages.size() - 2].content;
  if (c.family == "reverse") return glass::u32_to_utf8(std::u32string(word.rbegin(), word.rend()));
  if (c.family == "spell") {
    std::string s;
    for (std::size_t i = 0; i < word.size(); ++i)
      s += (i ? "-" : "") + glass::char_to_utf8(word[i]);
    return s;
  }
  if (c.family == "add") {
    const std::size_t plus = item.find('+');
    return std::to_string(std::stoi(item.substr(0, plus)) + std::stoi(item.substr(plus + 1)));
  }
  if (c.family == "count") {  // the letter follows "letra"/"letras" in every phrasing
    const std::u32string q = glass::utf8_to_u32(question);
    const std::size_t space = q.find(U' ', q.find(U"letra"));
    return std::to_string(std::count(word.begin(), word.end(), q.at(space + 1)));
  }
  return c.messages.back().content;  // identity: a fixed answer
}

}  // namespace

TEST(ChatTasks, WordsAreLowerCaseRunsOfThreeToEightLetters) {
  EXPECT_EQ(glass::chat_task_words(U"O gato, a Casa; coração e gato! ab abcdefghi xícara2 Ilha"),
            (std::vector<std::u32string>{U"gato", U"coração", U"xícara"}));
}

TEST(ChatTasks, TheShippedFilesAreWhatTheDocumentedCommandWrites) {
  for (const auto& [name, text] :
       {std::pair{"train", &generated().train}, std::pair{"val", &generated().val},
        std::pair{"exam", &generated().exam}}) {
    const std::string path = glass_test::source_dir("/data/chat/") + name + ".jsonl";
    EXPECT_TRUE(read_text(path) == *text) << path << " differs from make_chat_tasks --seed 1";
  }
  glass::ChatTaskOptions other;
  other.seed = 2;
  EXPECT_NE(glass::make_chat_tasks(
                glass::load_text(glass_test::source_dir("/data/corpora/domcasmurro.txt")), other)
                .exam,
            generated().exam);
}

TEST(ChatTasks, SplitsShareNoItemAndEveryAnswerIsRight) {
  const auto train = items_of(generated().train), val = items_of(generated().val),
             exam = items_of(generated().exam);
  for (const char* kind : {"word", "pair", "question"}) {
    for (const auto* a : {&train, &val, &exam})
      for (const auto* b : {&train, &val, &exam}) {
        if (a == b) continue;
        for (const std::string& item : a->at(kind))
          EXPECT_EQ(b->at(kind).count(item), 0u) << kind << " " << item << " in two splits";
      }
  }
  std::map<std::string, std::size_t> exam_families;
  for (const auto* text : {&generated().train, &generated().val, &generated().exam}) {
    const std::vector<glass::Conversation> conversations = glass::parse_chat_jsonl(*text, "mem");
    std::istringstream in(*text);
    std::string line;
    for (const glass::Conversation& c : conversations) {
      std::getline(in, line);
      const std::string item = nlohmann::json::parse(line)["item"];
      const std::string& question = c.messages[c.messages.size() - 2].content;
      if (c.family != "add") {
        EXPECT_NE(question.find(item), std::string::npos) << line;
      }
      EXPECT_EQ(c.messages.back().content, expected_answer(c, item)) << line;
      if (text == &generated().exam) ++exam_families[c.family];
    }
  }
  EXPECT_GE(exam_families.size(), 4u);
  std::size_t n = 0;
  for (const auto& [family, count] : exam_families) n += count;
  EXPECT_GE(n, 200u);
}
