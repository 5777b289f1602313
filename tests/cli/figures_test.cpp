// The figures of docs/img/ (drawn by docs/img/figuras.py): the ones that plot a chapter's numbers
// plot its saved output and nothing else, and the diagrams say what the pages say they do.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
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

struct Box {
  double x, y, w, h;
  std::string label;
};

// The boxes of figuras.py's box(): a <rect> followed by the <text> of its label.
std::vector<Box> boxes(const std::string& svg) {
  static const std::regex rect(
      R"re(<rect x="([0-9.]+)" y="([0-9.]+)" width="([0-9.]+)" height="([0-9.]+)" rx[^\n]*\n<text[^>]*>([^<]*)</text>)re");
  std::vector<Box> out;
  for (std::sregex_iterator it(svg.begin(), svg.end(), rect), end; it != end; ++it) {
    out.push_back({std::stod((*it)[1]), std::stod((*it)[2]), std::stod((*it)[3]),
                   std::stod((*it)[4]), (*it)[5]});
  }
  return out;
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

TEST(DocsFigures, TheKvCacheArrowsFromTheQueryEndOnTheKeys) {
  // q5 · k_p are the scores: each arrow from q5 ends on the edge of a key's box, one per key,
  // and none on a value.
  const std::string svg = read(glass_test::source_dir("/docs/img/kv-cache.svg"));
  const std::vector<Box> all = boxes(svg);
  const auto q = std::find_if(all.begin(), all.end(), [](const Box& b) { return b.label == "q5"; });
  ASSERT_NE(q, all.end());
  static const std::regex line(
      R"re(<line x1="([0-9.]+)" y1="([0-9.]+)" x2="([0-9.]+)" y2="([0-9.]+)")re");
  std::vector<std::string> ends;
  for (std::sregex_iterator it(svg.begin(), svg.end(), line), end; it != end; ++it) {
    const double x1 = std::stod((*it)[1]), y1 = std::stod((*it)[2]);
    const double x2 = std::stod((*it)[3]), y2 = std::stod((*it)[4]);
    if (x1 < q->x || x1 > q->x + q->w || y1 < q->y - 1 || y1 > q->y + q->h) continue;
    std::string on;
    for (const Box& b : all) {
      // Within the box's width, and at most 5 px outside its edge (the arrowhead's gap).
      if (x2 >= b.x && x2 <= b.x + b.w && y2 >= b.y - 5 && y2 <= b.y + b.h + 5) on = b.label;
    }
    ends.push_back(on);
  }
  EXPECT_EQ(ends, (std::vector<std::string>{"k0", "k1", "k2", "k3", "k4", "k5"}));
}

TEST(DocsFigures, TheResidualStreamFigureEndsWithTheFinalNormAndTheOutputHead) {
  // The decoder does not end at the last block: RMSNorm, then W_out gives the logits.
  const std::vector<Box> all = boxes(read(glass_test::source_dir("/docs/img/residuos.svg")));
  double last_block = 0, norm = -1, head = -1;
  for (const Box& b : all) {
    if (b.label == "atenção" || b.label == "SwiGLU") last_block = std::max(last_block, b.y);
    if (b.label == "RMSNorm final") norm = b.y;
    if (b.label == "W_out (saída)") head = b.y;
  }
  EXPECT_GT(norm, last_block);
  EXPECT_GT(head, norm);
}
