// Guards the chapter references of the tutorials and the docs: every "capítulo NN",
// "capítulos NN a MM" and "capítulos NN e MM" (and "chapter NN" in the English pages) names a
// chapter that exists, and where the words around it name a topic of the tutorials' index, the
// chapter referred to is one whose index row teaches it ("SiLU e RMSNorm são os capítulos 21 e
// 22" passes; the same sentence with 20 and 21 fails). The exercises print their chapter range
// from one table, tutorials/exercicios/capitulos.hpp, which must agree with the exercise table
// of tutorials/README.md.

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "test_paths.hpp"

namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// ASCII lower case (UTF-8 bytes above 127 are left alone: "ç" stays "ç").
std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The index rows of tutorials/README.md: chapter number -> the row's text (program name with
// spaces for underscores, and what it teaches), lower case.
std::map<int, std::string> index_rows() {
  std::map<int, std::string> rows;
  std::istringstream in(read_file(glass_test::source_dir("/tutorials/README.md")));
  const std::regex row(R"(^\| (\d\d) \| `(\d\d_[a-z_]+)` \| (.*))");
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (!std::regex_search(line, m, row)) continue;
    std::string name = m[2].str();
    std::replace(name.begin(), name.end(), '_', ' ');
    // The exercise table has the same shape; its rows name exercises, not chapters.
    if (fs::exists(glass_test::source_dir("/tutorials/") + m[2].str() + ".cpp")) {
      rows[std::stoi(m[1].str())] = lower(name + " " + m[3].str());
    }
  }
  return rows;
}

// The topic words the guard looks for around a reference. A word belongs to every chapter whose
// index row holds it (computed from tutorials/README.md, so the table cannot drift from the index).
const std::vector<std::string> kTopics = {"reshape",
                                          "row-major",
                                          "derivada",
                                          "fita",
                                          "regra da cadeia",
                                          "broadcasting",
                                          "matmul",
                                          "verificação de gradientes",
                                          "gelu",
                                          "softmax",
                                          "entropia cruzada",
                                          "utf-8",
                                          "tokenizador",
                                          "embeddings",
                                          "bigrama",
                                          "média do passado",
                                          "q, k e v",
                                          "três passos",
                                          "máscara causal",
                                          "rope",
                                          "várias cabeças",
                                          "gqa",
                                          "nn::attention",
                                          "silu",
                                          "swiglu",
                                          "rmsnorm",
                                          "pré-norma",
                                          "atalhos",
                                          "decoder",
                                          "742",
                                          "adamw",
                                          "aquecimento",
                                          "batchsampler",
                                          "validação",
                                          "laço de treino",
                                          "clipping",
                                          "temperatura",
                                          "top-k",
                                          "top-p",
                                          "generate()",
                                          "cache",
                                          "tracer",
                                          "dados paralelos",
                                          "mpirun",
                                          "bpe",
                                          "fusões",
                                          "byte fallback",
                                          "lente de logits",
                                          "ablação",
                                          "token anterior",
                                          "indução",
                                          "muon",
                                          "newton-schulz",
                                          "lote inteiro"};

struct Reference {
  std::string file;
  int line = 0;
  std::string text;  // the reference as written ("capítulos 21 e 22")
  std::vector<int> chapters;
  std::string clause;  // the words around it, lower case
  int index_row = 0;   // the chapter whose row of the index holds it, or 0
};

// The chapters a reference names: "NN", "NN a MM" (a range), "NN e MM", "NN, MM e PP".
std::vector<int> chapters_of(const std::string& numbers) {
  std::vector<int> out;
  const std::regex part(R"((\d+)(?:\s+a\s+(\d+))?)");
  for (auto it = std::sregex_iterator(numbers.begin(), numbers.end(), part);
       it != std::sregex_iterator(); ++it) {
    const int first = std::stoi((*it)[1].str());
    const int last = (*it)[2].matched ? std::stoi((*it)[2].str()) : first;
    for (int c = first; c <= last; ++c) out.push_back(c);
  }
  return out;
}

// Where the words that go with a reference stop: punctuation, a blank line, or the
// end of a printed line ("\\n" in a C++ string: chapter 24's table has a reference per line).
bool clause_end(const std::string& text, std::size_t i) {
  const char c = text[i];
  if (c == '\\' && i + 1 < text.size() && text[i + 1] == 'n') return true;
  if (c == ',' || c == ';' || c == ':' || c == '(' || c == ')' || c == '|' || c == '[') return true;
  if (c == '.' && (i + 1 >= text.size() || std::isspace(static_cast<unsigned char>(text[i + 1])) ||
                   text[i + 1] == '\\' || text[i + 1] == '"'))
    return true;
  return c == '\n' && i + 1 < text.size() && text[i + 1] == '\n';
}

// Every chapter reference of one file. `english` adds "chapter NN" (docs/en/, the top README).
std::vector<Reference> references_in(const fs::path& path, bool english) {
  const std::string text = read_file(path);
  // One chapter ("capítulo 27, 39 passos" names 27 alone), or a list and ranges after the plural.
  const std::regex pt(
      R"([Cc]apítulo\s+(\d\d?)(?![\d.]\d)|[Cc]apítulos\s+(\d\d?(?:(?:\s*,\s*|\s+e\s+|\s+a\s+)\d\d?)*)(?![\d.]\d))");
  const std::regex en(
      R"([Cc]hapters?\s+(\d\d?(?:(?:\s*,\s*|\s+and\s+|\s*[-–]\s*)\d\d?)*)(?![\d.]\d))");
  // An em dash ends a clause too ("capítulo 23 — o bloco do decoder"): the same bytes with a bar.
  const std::string bounds = std::regex_replace(text, std::regex("\u2014"), "|  ");
  std::vector<Reference> refs;
  for (const std::regex* re : {&pt, &en}) {
    if (re == &en && !english) continue;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), *re);
         it != std::sregex_iterator(); ++it) {
      Reference r;
      r.file = fs::relative(path, glass_test::source_dir()).string();
      const std::size_t at = static_cast<std::size_t>(it->position(0));
      r.line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + at, '\n'));
      r.text = it->str(0);
      std::string numbers = (*it)[1].matched ? (*it)[1].str() : (*it)[2].str();
      numbers = std::regex_replace(numbers, std::regex(R"(\s*[-–]\s*)"), " a ");
      numbers = std::regex_replace(numbers, std::regex(R"(\s+and\s+)"), ", ");
      r.chapters = chapters_of(numbers);
      std::size_t begin = at, end = at + it->length(0);
      while (begin > 0 && !clause_end(bounds, begin - 1)) --begin;
      while (end < text.size() && !clause_end(bounds, end)) ++end;
      // The row of the index this reference is in (tutorials/README.md), or 0.
      const std::size_t line_start = text.rfind('\n', at) + 1;
      std::smatch row;
      const std::string line = text.substr(line_start, text.find('\n', at) - line_start);
      if (std::regex_search(line, row, std::regex(R"(^\| (\d\d) \| `\d\d_)"))) {
        r.index_row = std::stoi(row[1].str());
      }
      r.clause = lower(text.substr(begin, end - begin));
      refs.push_back(r);
    }
  }
  return refs;
}

// The files whose chapter references the guard reads: the chapters and their headers, the
// exercises (with solutions and wrong answers), docs/ and the READMEs.
std::vector<fs::path> files_with_references() {
  std::vector<fs::path> files;
  const auto add_tree = [&](const std::string& folder, const std::set<std::string>& extensions) {
    for (const auto& entry : fs::recursive_directory_iterator(glass_test::source_dir(folder))) {
      if (entry.is_regular_file() && extensions.count(entry.path().extension().string())) {
        files.push_back(entry.path());
      }
    }
  };
  add_tree("/tutorials", {".cpp", ".hpp", ".md"});
  add_tree("/docs", {".md"});
  for (const char* readme : {"/README.md", "/bench/README.md", "/scripts/README.md"}) {
    if (fs::exists(glass_test::source_dir(readme))) files.push_back(glass_test::source_dir(readme));
  }
  std::sort(files.begin(), files.end());
  return files;
}

bool is_english(const fs::path& path) {
  const std::string p = path.string();
  return p.find("/docs/en/") != std::string::npos || p == glass_test::source_dir("/README.md");
}

}  // namespace

TEST(TutorialReferences, EveryTopicWordBelongsToAChapterOfTheIndex) {
  const std::map<int, std::string> rows = index_rows();
  ASSERT_GE(rows.size(), 37u) << "the index of tutorials/README.md was not found";
  for (const std::string& topic : kTopics) {
    const bool owned = std::any_of(rows.begin(), rows.end(), [&](const auto& row) {
      return row.second.find(topic) != std::string::npos;
    });
    EXPECT_TRUE(owned) << "no index row of tutorials/README.md mentions \"" << topic << "\"";
  }
}

TEST(TutorialReferences, EveryChapterReferenceNamesAChapterThatTeachesItsTopic) {
  const std::map<int, std::string> rows = index_rows();
  ASSERT_GE(rows.size(), 37u);
  std::size_t checked = 0, with_topic = 0;
  for (const fs::path& file : files_with_references()) {
    for (const Reference& r : references_in(file, is_english(file))) {
      ++checked;
      for (int c : r.chapters) {
        EXPECT_TRUE(rows.count(c)) << r.file << ":" << r.line << ": \"" << r.text
                                   << "\" names chapter " << c << ", which does not exist";
      }
      if (is_english(file)) continue;  // the topic words are the index's, in Portuguese
      std::vector<std::string> found;
      for (const std::string& topic : kTopics) {
        // A row of the index speaks of its own chapter too ("a verificação de gradientes das
        // ops dos capítulos 01 a 06" is chapter 07's row): its own topics are not the reference's.
        const bool own = r.index_row && rows.count(r.index_row) &&
                         rows.at(r.index_row).find(topic) != std::string::npos;
        if (!own && r.clause.find(topic) != std::string::npos) found.push_back(topic);
      }
      if (found.empty()) continue;
      bool taught = false;
      for (const std::string& topic : found) {
        for (int c : r.chapters) {
          if (rows.count(c) && rows.at(c).find(topic) != std::string::npos) taught = true;
        }
      }
      ++with_topic;
      std::string topics;
      for (const std::string& t : found) topics += (topics.empty() ? "\"" : ", \"") + t + "\"";
      EXPECT_TRUE(taught) << r.file << ":" << r.line << ": \"" << r.text << "\" in \"" << r.clause
                          << "\": none of the chapters named teaches " << topics
                          << " (by the index of tutorials/README.md)";
    }
  }
  // The guard reads what it should: hundreds of references, many of them with a topic.
  EXPECT_GE(checked, 200u);
  EXPECT_GE(with_topic, 20u) << checked;
}

TEST(TutorialReferences, ExerciseRangesComeFromOneTableThatMatchesTheReadme) {
  // tutorials/exercicios/capitulos.hpp: { numero, "NN a MM" } per exercise.
  const std::string table =
      read_file(glass_test::source_dir("/tutorials/exercicios/capitulos.hpp"));
  std::map<int, std::string> from_table;
  const std::regex entry(R"re(\{(\d+), "([0-9a ]+)"\})re");
  for (auto it = std::sregex_iterator(table.begin(), table.end(), entry);
       it != std::sregex_iterator(); ++it) {
    from_table[std::stoi((*it)[1].str())] = (*it)[2].str();
  }
  // The exercise table of tutorials/README.md: | NN | `NN_topic` | range | ... |
  std::map<int, std::string> from_readme;
  std::istringstream in(read_file(glass_test::source_dir("/tutorials/README.md")));
  const std::regex row(R"(^\| (\d\d) \| `(\d\d_[a-z_]+)` \| ([0-9a ]+) \|)");
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, row) &&
        fs::exists(glass_test::source_dir("/tutorials/exercicios/") + m[2].str() + ".cpp")) {
      from_readme[std::stoi(m[1].str())] = m[3].str();
    }
  }
  std::size_t exercises = 0;
  for (const auto& entry :
       fs::directory_iterator(glass_test::source_dir("/tutorials/exercicios"))) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".cpp" || !std::isdigit(static_cast<unsigned char>(name[0])))
      continue;
    ++exercises;
    const int n = std::stoi(name.substr(0, 2));
    EXPECT_TRUE(from_table.count(n)) << name << " has no range in exercicios/capitulos.hpp";
    EXPECT_TRUE(from_readme.count(n)) << name << " has no row in tutorials/README.md";
    // The first line of the exercise and of its solution: "(parte N: capítulos X a Y)".
    for (const std::string folder : {"/tutorials/exercicios/", "/tutorials/exercicios/solucoes/"}) {
      const std::string first = read_file(glass_test::source_dir(folder) + name).substr(0, 200);
      std::smatch part;
      if (from_table.count(n) &&
          std::regex_search(first, part, std::regex(R"(\(parte \d+: capítulos? ([0-9a ]+)\))"))) {
        EXPECT_EQ(part[1].str(), from_table[n]) << folder << name << ": its first line";
      }
    }
    if (from_table.count(n) && from_readme.count(n)) {
      EXPECT_EQ(from_table[n], from_readme[n])
          << "exercise " << n << ": exercicios/capitulos.hpp and tutorials/README.md disagree";
    }
  }
  EXPECT_EQ(from_table.size(), exercises);
  // Every range names chapters that exist.
  const std::map<int, std::string> rows = index_rows();
  for (const auto& [n, range] : from_table) {
    for (int c : chapters_of(range)) EXPECT_TRUE(rows.count(c)) << "exercise " << n << ": " << c;
  }
}

namespace {

// The learner's parts of an exercise or solution file: the lines between each
// "// --- a sua parte ---" and the "// --- fim ---" after it.
std::vector<std::vector<std::string>> learner_parts(const std::string& text) {
  std::vector<std::vector<std::string>> parts;
  std::istringstream in(text);
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.find("// --- a sua parte ---") != std::string::npos) {
      parts.emplace_back();
      inside = true;
    } else if (line.find("// --- fim ---") != std::string::npos) {
      inside = false;
    } else if (inside) {
      parts.back().push_back(line);
    }
  }
  return parts;
}

// A line of code worth comparing: not a comment, not a brace or a bare return, trimmed.
std::string code_of(const std::string& line) {
  const std::size_t first = line.find_first_not_of(' ');
  if (first == std::string::npos) return "";
  std::string code = line.substr(first);
  if (code.rfind("//", 0) == 0 || code.size() < 12 || code.rfind("return ", 0) == 0) return "";
  return code;
}

}  // namespace

TEST(TutorialReferences, EveryExerciseHasAKindAWrongAnswerAndNoWorkedAnswer) {
  // tutorials/exercicios/capitulos.hpp: { numero, Tipo::kind } per exercise.
  const std::string table =
      read_file(glass_test::source_dir("/tutorials/exercicios/capitulos.hpp"));
  std::map<int, std::string> kinds;
  const std::regex entry(R"(\{(\d+), Tipo::([a-z]+)\})");
  for (auto it = std::sregex_iterator(table.begin(), table.end(), entry);
       it != std::sregex_iterator(); ++it) {
    kinds[std::stoi((*it)[1].str())] = (*it)[2].str();
  }
  const std::set<std::string> known = {"deduzir", "prever", "depurar", "implementar",
                                       "transcrever"};
  int asks_to_think = 0;  // derive, predict or debug
  for (const auto& [n, kind] : kinds) {
    EXPECT_TRUE(known.count(kind)) << "exercise " << n << ": " << kind;
    asks_to_think += kind == "deduzir" || kind == "prever" || kind == "depurar";
  }
  EXPECT_GE(asks_to_think, 10);

  const std::string dir = glass_test::source_dir("/tutorials/exercicios/");
  std::vector<std::string> wrong;
  for (const auto& entry : fs::directory_iterator(dir + "erradas"))
    wrong.push_back(entry.path().filename().string());
  std::size_t exercises = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".cpp" || !std::isdigit(static_cast<unsigned char>(name[0])))
      continue;
    ++exercises;
    const int n = std::stoi(name.substr(0, 2));
    ASSERT_TRUE(kinds.count(n)) << name << " has no kind in exercicios/capitulos.hpp";
    const std::string stem = name.substr(0, name.size() - 4);
    EXPECT_TRUE(std::any_of(wrong.begin(), wrong.end(),
                            [&](const std::string& w) { return w.rfind(stem, 0) == 0; }))
        << name << " has no wrong answer in exercicios/erradas/";

    // The exercise's parts hold a TODO and not the solution's: they differ from the solution's
    // parts, and (unless the exercise is to debug code it shows) share no line of code with them.
    const auto mine = learner_parts(read_file(dir + name));
    const auto solved = learner_parts(read_file(dir + "solucoes/" + name));
    ASSERT_FALSE(mine.empty()) << name << " has no \"// --- a sua parte ---\"";
    EXPECT_EQ(mine.size(), solved.size()) << name;
    EXPECT_NE(mine, solved) << name << ": the exercise holds the solution";
    std::set<std::string> solution_code;
    for (const auto& part : solved)
      for (const std::string& line : part)
        if (!code_of(line).empty()) solution_code.insert(code_of(line));
    bool todo = false;
    for (const auto& part : mine) {
      for (const std::string& line : part) {
        todo = todo || line.find("TODO") != std::string::npos;
        if (kinds[n] != "depurar") {
          EXPECT_FALSE(solution_code.count(code_of(line)))
              << name << " holds a line of its solution: " << line;
        }
      }
    }
    EXPECT_TRUE(todo) << name << ": no TODO in the learner's part";
  }
  EXPECT_EQ(kinds.size(), exercises)
      << "exercicios/capitulos.hpp lists exercises that do not exist";
}
