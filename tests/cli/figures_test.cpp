// The figures of docs/img/ (drawn by docs/img/figuras.py) that plot a chapter's numbers plot its
// saved output and nothing else.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "test_paths.hpp"

namespace {

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The text between <desc> and </desc>, with the XML escapes undone, split into lines; empty when
// the figure has no <desc>.
std::vector<std::string> desc_lines(const std::string& svg) {
  const std::size_t begin = svg.find("<desc>\n"), end = svg.find("\n</desc>");
  std::vector<std::string> lines;
  if (begin == std::string::npos || end == std::string::npos) return lines;
  std::string text = svg.substr(begin + 7, end - begin - 7);
  for (const auto& [escaped, plain] :
       {std::pair<std::string, std::string>{"&lt;", "<"}, {"&gt;", ">"}, {"&amp;", "&"}}) {
    for (std::size_t at = text.find(escaped); at != std::string::npos;
         at = text.find(escaped, at + plain.size()))
      text.replace(at, escaped.size(), plain);
  }
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++n;
  return n;
}

}  // namespace

TEST(DocsFigures, EachDataFigurePlotsLinesOfItsChaptersSavedOutput) {
  // A figure drawn from a chapter's output names the file on the first line of its <desc> and
  // lists every line it plots after it: each must be a line of that file, so the figure cannot
  // drift from the chapter (run python3 docs/img/figuras.py after regenerating the outputs).
  int figures = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(glass_test::source_dir("/docs/img"))) {
    if (entry.path().extension() != ".svg") continue;
    const std::string svg = read(entry.path().string());
    const std::vector<std::string> lines = desc_lines(svg);
    if (lines.empty()) continue;
    const std::string name = entry.path().filename().string();
    ASSERT_EQ(lines[0].rfind("tutorials/saidas/", 0), 0u) << name << ": " << lines[0];
    const std::string saved = "\n" + read(glass_test::source_dir("/" + lines[0]));
    ASSERT_GT(saved.size(), 1u) << name << ": cannot read " << lines[0];
    ASSERT_GE(lines.size(), 3u) << name << " plots fewer than two lines of numbers";
    for (std::size_t i = 1; i < lines.size(); ++i) {
      EXPECT_NE(saved.find("\n" + lines[i] + "\n"), std::string::npos)
          << name << " plots \"" << lines[i] << "\", not a line of " << lines[0]
          << " (run python3 docs/img/figuras.py)";
    }
    // One curve (<polyline>) or one bar (a filled <rect> that is neither a box of box(), with
    // rx=, nor a panel's frame, fill="none") per line plotted.
    EXPECT_EQ(count(svg, "<polyline ") + count(svg, "<rect x=\"") - count(svg, "rx=") -
                  count(svg, "fill=\"none\" stroke=\"#cbd5e0\""),
              lines.size() - 1)
        << name;
    ++figures;
  }
  EXPECT_GE(figures, 4);
}
