// Every number a concept page (docs/*.md, and its English version in docs/en/) states is checked
// here against what produces it: the tutorial program that prints it, or the library function
// that computes it. The README and the English-only manual pages (docs/en/cli.md,
// run-directory.md, build.md, testing.md; bench/README.md) are checked at the end: the README's
// two commands and first session, the code it sends the reader to, its layout table, and the
// defaults and sizes the manual quotes. Each check reads the literal as the page prints it, requires it in BOTH
// languages, and compares it with the program's line or the function's value formatted the same
// way. A page that drifts from the code, or a translation that drifts from its original, fails.
//
// The pages themselves are checked too: every relative link points to an existing file, every
// Portuguese page links to its English version at the top and back, both versions quote the same
// numbers, no page writes a decimal comma, and the functions the pages cite are defined in the
// files they name.
//
// Tutorials are found by topic (the part of the name after "NN_"), so a renumbering of the
// chapters touches the pages' text, not this file.
//
// Reference values that are not printed by a program were computed by hand or with Python's
// math module (double precision), as noted next to each check.

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "checkpoint/config_json.hpp"
#include "data/bpe_tokenizer.hpp"
#include "data/text.hpp"
#include "data/tokenizer.hpp"
#include "nn/decoder.hpp"
#include "train/adamw.hpp"
#include "train/muon.hpp"
#include "train/sae_trainer.hpp"
#include "train/schedule.hpp"
#include "train/trainer.hpp"
#include "test_paths.hpp"

namespace fs = std::filesystem;

namespace {

const fs::path kDocs = fs::path(glass_test::source_dir()) / "docs";

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

/// The .md files directly inside `dir`, sorted.
std::vector<fs::path> pages_in(const fs::path& dir) {
  std::vector<fs::path> pages;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().extension() == ".md") pages.push_back(entry.path());
  }
  std::sort(pages.begin(), pages.end());
  return pages;
}

/// The link targets of the markdown links `[text](target)` in `text`, in order.
std::vector<std::string> links_in(const std::string& text) {
  static const std::regex link(R"(\]\(([^)\s]+)\))");
  std::vector<std::string> targets;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), link); it != std::sregex_iterator();
       ++it) {
    targets.push_back((*it)[1].str());
  }
  return targets;
}

bool is_relative(const std::string& target) {
  return target.rfind("http://", 0) != 0 && target.rfind("https://", 0) != 0 &&
         target.rfind("mailto:", 0) != 0 && target.rfind("#", 0) != 0;
}

/// The file a relative link of `page` points at (its #anchor dropped), normalised.
fs::path resolve(const fs::path& page, const std::string& target) {
  const std::string file = target.substr(0, target.find('#'));
  return (page.parent_path() / file).lexically_normal();
}

/// The first relative link in the first `n` lines of `page` (the language link at the top).
std::string top_link(const fs::path& page, std::size_t n = 6) {
  const std::vector<std::string> lines = lines_of(read_file(page));
  for (std::size_t i = 0; i < std::min(n, lines.size()); ++i) {
    for (const std::string& target : links_in(lines[i])) {
      if (is_relative(target)) return target;
    }
  }
  return "";
}

/// A Portuguese page (name inside docs/) and its English version, found through the link at its top.
struct PagePair {
  std::string pt, en;
};

PagePair pages_of(const std::string& pt_name) {
  const fs::path pt = kDocs / pt_name;
  PagePair pair;
  pair.pt = read_file(pt);
  EXPECT_FALSE(pair.pt.empty()) << "no page docs/" << pt_name;
  const std::string link = top_link(pt);
  EXPECT_EQ(link.rfind("en/", 0), 0u) << "docs/" << pt_name << " has no English link at its top";
  pair.en = read_file(resolve(pt, link));
  EXPECT_FALSE(pair.en.empty()) << "docs/" << pt_name << " -> " << link;
  return pair;
}

/// The page, in both languages, states `literal` (character for character).
void expect_stated(const std::string& pt_name, const std::string& literal) {
  const PagePair pages = pages_of(pt_name);
  EXPECT_NE(pages.pt.find(literal), std::string::npos)
      << "docs/" << pt_name << " no longer says \"" << literal << "\"";
  EXPECT_NE(pages.en.find(literal), std::string::npos)
      << "the English version of docs/" << pt_name << " does not say \"" << literal << "\"";
}

/// `value` with `decimals` decimals, as the programs print it ("%.6f").
std::string fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

/// The page states `literal`, and `computed` (the library's value, formatted like the page) is it.
void expect_claim(const std::string& pt_name, const std::string& literal,
                  const std::string& computed) {
  expect_stated(pt_name, literal);
  EXPECT_EQ(computed, literal) << "docs/" << pt_name << " says " << literal << ", the code gives "
                               << computed;
}

/// The vocabulary size of a bundled corpus (data/corpora/<file>): its distinct characters plus id 0.
std::size_t corpus_vocab_size(const std::string& file) {
  const std::u32string text = glass::load_text(glass_test::source_dir("/data/corpora/") + file);
  return glass::Tokenizer::from_text(text).vocab_size();
}

/// The parameter count of the default model with a vocabulary of `vocab_size` ids.
std::size_t default_model_parameters(std::size_t vocab_size) {
  glass::ModelConfig config;
  config.vocab_size = vocab_size;
  return glass::Decoder(config, 1).num_parameters();
}

// ---- the tutorial programs -----------------------------------------------------------------------

/// The program of the chapter about `topic` (the part after "NN_", e.g. "rope" for 17_rope): chapters
/// are found by topic so that a renumbering only touches the pages.
std::string program_for(const std::string& topic) {
  const fs::path dir = fs::path(glass_test::binary_dir()) / "tutorials";
  if (!fs::is_directory(dir)) return "";
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.size() == topic.size() + 3 && std::isdigit(static_cast<unsigned char>(name[0])) &&
        std::isdigit(static_cast<unsigned char>(name[1])) && name[2] == '_' &&
        name.compare(3, std::string::npos, topic) == 0 &&
        // not a program left in the build directory by a chapter since renumbered
        fs::exists(fs::path(glass_test::source_dir()) / "tutorials" / (name + ".cpp"))) {
      return entry.path().string();
    }
  }
  return "";
}

/// Runs a program (stderr merged) and returns its output; a failed run is a test failure.
std::string run(const std::string& command) {
  std::string out;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) {
    ADD_FAILURE() << "cannot run " << command;
    return out;
  }
  char buffer[4096];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  const int status = pclose(pipe);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << command << " failed:\n" << out;
  return out;
}

/// The output of the chapter about `topic`: its saved output, tutorials/saidas/NN_topic.txt,
/// which the chapter's own test (tests/cli/tutorials_test.cpp) proves equal to what the program
/// prints, so the pages are checked against the digits a learner reads there without running
/// every chapter again.
std::string chapter_output(const std::string& topic) {
  const std::string program = program_for(topic);
  if (program.empty()) {
    ADD_FAILURE() << "no tutorial program NN_" << topic
                  << " in " + glass_test::binary_dir("/tutorials");
    return "";
  }
  const std::string name = fs::path(program).filename().string();
  const std::string saved =
      read_file(fs::path(glass_test::source_dir()) / "tutorials/saidas" / (name + ".txt"));
  EXPECT_FALSE(saved.empty()) << "no saved output tutorials/saidas/" << name << ".txt";
  return saved;
}

/// The first line of `out` that starts with `fragment` (a printed label), or else the first that
/// contains it.
std::string line_with(const std::string& out, const std::string& fragment) {
  const std::vector<std::string> lines = lines_of(out);
  for (const std::string& line : lines) {
    if (line.rfind(fragment, 0) == 0) return line;
  }
  for (const std::string& line : lines) {
    if (line.find(fragment) != std::string::npos) return line;
  }
  ADD_FAILURE() << "no line with \"" << fragment << "\" in:\n" << out;
  return "";
}

/// The numbers on a line, in order (words and punctuation skipped; "-0.5" is one number).
std::vector<double> numbers_in(const std::string& line) {
  static const std::regex number(R"(-?\d+(\.\d+)?(e-?\d+)?)");
  std::vector<double> values;
  for (auto it = std::sregex_iterator(line.begin(), line.end(), number);
       it != std::sregex_iterator(); ++it) {
    values.push_back(std::stod(it->str()));
  }
  return values;
}

/// The last number on the line of `out` with `fragment` (NaN, and a failure, when there is none).
double last_number(const std::string& out, const std::string& fragment) {
  const std::vector<double> numbers = numbers_in(line_with(out, fragment));
  if (numbers.empty()) {
    ADD_FAILURE() << "no number on the line with \"" << fragment << "\"";
    return std::nan("");
  }
  return numbers.back();
}

/// The page states `literal`, and the program's line with `fragment` prints it too.
void expect_printed(const std::string& pt_name, const std::string& literal, const std::string& out,
                    const std::string& fragment) {
  expect_stated(pt_name, literal);
  const std::string line = line_with(out, fragment);
  EXPECT_NE(line.find(literal), std::string::npos)
      << "docs/" << pt_name << " says " << literal << ", the program prints: " << line;
}

/// The claims, page by page. Most are printed by tutorials, which need them built
/// (GLASS_BUILD_TUTORIALS=ON, the default).
class DocsClaims : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::is_directory(glass_test::binary_dir("/tutorials"))) {
      GTEST_SKIP() << "no " + glass_test::binary_dir("/tutorials (GLASS_BUILD_TUTORIALS=OFF)");
    }
  }
};

// ---- the pages as files ------------------------------------------------------------------------

TEST(DocsPages, EveryRelativeLinkPointsToAnExistingFile) {
  std::size_t checked = 0;
  for (const fs::path& dir : {kDocs, kDocs / "en"}) {
    for (const fs::path& page : pages_in(dir)) {
      for (const std::string& target : links_in(read_file(page))) {
        if (!is_relative(target)) continue;
        ++checked;
        EXPECT_TRUE(fs::exists(resolve(page, target)))
            << page.lexically_relative(glass_test::source_dir()).string() << " links to " << target
            << ", which does not exist";
      }
    }
  }
  EXPECT_GT(checked, 100u) << "the link pattern found almost no links";
}

TEST(DocsPages, EveryPageHasAnEnglishVersionThatLinksBack) {
  const std::vector<fs::path> pt_pages = pages_in(kDocs);
  ASSERT_GE(pt_pages.size(), 10u);
  std::set<fs::path> translations;
  for (const fs::path& pt : pt_pages) {
    const std::string link = top_link(pt);
    ASSERT_EQ(link.rfind("en/", 0), 0u)
        << pt.filename() << ": no link to docs/en/ in its first lines";
    const fs::path en = resolve(pt, link);
    ASSERT_TRUE(fs::exists(en)) << pt.filename() << " -> " << link;
    EXPECT_TRUE(translations.insert(en).second) << "two pages claim the translation " << link;
    EXPECT_EQ(resolve(en, top_link(en)), pt.lexically_normal())
        << link << " does not link back to " << pt.filename() << " at its top";
  }
  // Every English page is a translation of a Portuguese one, except the tutorials' index, whose
  // original is tutorials/README.md, and the English-only manual pages (the program, the files it
  // writes, the BLAS core, the build, the tests).
  const std::set<std::string> english_only = {"blas-core.md", "build.md", "cli.md",
                                              "run-directory.md", "testing.md"};
  for (const fs::path& en : pages_in(kDocs / "en")) {
    if (english_only.count(en.filename().string())) {
      EXPECT_EQ(top_link(en), "") << en.filename() << " is English-only and links to no original";
      continue;
    }
    const fs::path original = resolve(en, top_link(en));
    EXPECT_TRUE(fs::exists(original)) << en.filename() << ": no link to its original at its top";
    if (en.filename() == "tutorials.md") {
      EXPECT_EQ(
          original,
          (fs::path(glass_test::source_dir()) / "tutorials" / "README.md").lexically_normal());
    } else {
      EXPECT_EQ(translations.count(en.lexically_normal()), 1u)
          << en.filename() << " is not the English version of any docs/ page";
    }
  }
}

// The decimal numbers (1.5, 0.163928) and the integers of three or more digits (344, 742784) of
// a page, as written.
std::set<std::string> numbers_quoted(const std::string& text) {
  static const std::regex number(R"((^|[^\w.])(\d+\.\d+|\d{3,})(?![\w.]*\w))");
  std::set<std::string> found;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), number);
       it != std::sregex_iterator(); ++it) {
    found.insert((*it)[2].str());
  }
  return found;
}

TEST(DocsPages, BothLanguagesQuoteTheSameNumbers) {
  for (const fs::path& pt : pages_in(kDocs)) {
    const PagePair pages = pages_of(pt.filename().string());
    EXPECT_EQ(numbers_quoted(pages.pt), numbers_quoted(pages.en)) << pt.filename();
  }
}

TEST(DocsPages, OneDecimalStyleThePrintedOne) {
  // The programs print a decimal point and no thousands separator; the pages write numbers the
  // same way, in both languages ("0,9" or "742.784" would be read differently by a learner
  // comparing the page with the output).
  static const std::regex comma_decimal(R"(\d,\d)");
  for (const fs::path& dir : {kDocs, kDocs / "en"}) {
    for (const fs::path& page : pages_in(dir)) {
      const std::string text = read_file(page);
      std::smatch m;
      EXPECT_FALSE(std::regex_search(text, m, comma_decimal))
          << page.filename() << ": decimal comma near \"" << m.str() << "\"";
    }
  }
}

// The functions the concept pages send the reader to, with the file they name: the function is
// defined there, and both versions of the page name the two together.
TEST(DocsPages, CitedFunctionsAreInTheFilesNamed) {
  struct Citation {
    const char* page;
    const char* function;    // as written on the page
    const char* file;        // relative to the project's root
    const char* definition;  // how the file spells it
  };
  const std::vector<Citation> citations = {
      {"tokens-e-embeddings.md", "utf8_to_u32", "data/text.hpp", "std::u32string utf8_to_u32("},
      {"tokens-e-embeddings.md", "load_text", "data/text.hpp", "std::u32string load_text("},
      {"tokens-e-embeddings.md", "Tokenizer::from_text", "data/tokenizer.hpp",
       "static Tokenizer from_text("},
      {"tokens-e-embeddings.md", "embedding(weight, ids)", "autograd/ops_nn.cpp",
       "Tensor embedding(const Tensor& weight, const Ids& ids)"},
      {"tokens-e-embeddings.md", "Embedding::forward", "nn/layers.cpp",
       "Tensor Embedding::forward("},
      {"rmsnorm.md", "rms_norm(x, gain, eps)", "autograd/ops_nn.cpp",
       "Tensor rms_norm(const Tensor& x, const Tensor& gain, Scalar eps)"},
      {"rmsnorm.md", "RMSNorm::forward", "nn/layers.cpp", "Tensor RMSNorm::forward("},
      {"rmsnorm.md", "Block::forward", "nn/decoder.cpp", "Tensor Block::forward("},
      {"swiglu.md", "SwiGLU::forward", "nn/layers.cpp", "Tensor SwiGLU::forward("},
      {"swiglu.md", "SwiGLU::SwiGLU", "nn/layers.cpp", "SwiGLU::SwiGLU("},
      {"swiglu.md", "silu_mul", "autograd/kernels/silu_mul.cpp", "Tensor silu_mul("},
      {"bloco-e-residuos.md", "Block::forward", "nn/decoder.cpp", "Tensor Block::forward("},
      {"bloco-e-residuos.md", "Decoder::forward", "nn/decoder.cpp", "Tensor Decoder::forward("},
      {"bloco-e-residuos.md", "Decoder::Decoder", "nn/decoder.cpp", "Decoder::Decoder("},
      {"bloco-e-residuos.md", "Attention::Attention", "nn/attention.cpp", "Attention::Attention("},
      {"atencao.md", "Attention::forward_reference", "nn/attention.cpp",
       "Attention::forward_reference("},
      {"atencao.md", "Attention::forward_fast", "nn/attention_fast.cpp",
       "Attention::forward_fast("},
      {"gqa-e-cache.md", "attend_to_cache", "autograd/kernels/kv_attention.cpp",
       "attend_to_cache("},
      {"rope.md", "rope(x, start, base)", "autograd/ops_nn.cpp",
       "Tensor rope(const Tensor& x, std::size_t start, Scalar base)"},
      {"treino.md", "next_token_probs", "sample/sampler.cpp",
       "std::vector<double> next_token_probs("},
      {"treino.md", "Trainer::train_step", "train/trainer.cpp", "Trainer::train_step("},
      {"treino.md", "steps_for_time_budget", "train/time_budget.hpp",
       "long steps_for_time_budget("},
      {"bpe.md", "BpeTokenizer::train", "data/bpe_tokenizer.hpp", "static BpeTokenizer train("},
      {"bpe.md", "BpeTokenizer::encode", "data/bpe_tokenizer.hpp",
       "std::vector<std::int32_t> encode("},
      {"interpretabilidade.md", "logit_lens", "interp/logit_lens.hpp", "LogitLens logit_lens("},
      {"interpretabilidade.md", "ablated_loss", "interp/ablation.hpp", "double ablated_loss("},
      {"interpretabilidade.md", "ablation_table", "interp/ablation.hpp",
       "AblationTable ablation_table("},
      {"interpretabilidade.md", "previous_token_score", "interp/head_scores.hpp",
       "double previous_token_score("},
      {"interpretabilidade.md", "induction_score", "interp/head_scores.hpp",
       "double induction_score("},
      {"interpretabilidade.md", "patch_residual_stream", "interp/patching.hpp",
       "PatchingResult patch_residual_stream("},
      {"interpretabilidade.md", "logit_attribution", "interp/logit_attribution.hpp",
       "LogitAttribution logit_attribution("},
      {"interpretabilidade.md", "attribution_patching", "interp/attribution_patching.hpp",
       "AttributionPatching attribution_patching("},
      {"interpretabilidade.md", "exact_patching", "interp/attribution_patching.hpp",
       "PatchingEffects exact_patching("},
      {"conversar.md", "render_chat", "data/chat_template.hpp", "ChatTokens render_chat("},
      {"conversar.md", "grow_vocabulary", "train/chat_base.hpp",
       "std::unique_ptr<Decoder> grow_vocabulary("},
      {"conversar.md", "cross_entropy", "autograd/ops.hpp", "Tensor cross_entropy("},
  };
  for (const Citation& c : citations) {
    expect_stated(c.page, c.function);
    expect_stated(c.page, c.file);
    EXPECT_NE(read_file(fs::path(glass_test::source_dir()) / c.file).find(c.definition),
              std::string::npos)
        << c.file << " (cited by docs/" << c.page << ") does not define " << c.function;
  }
}

// ---- the default model's sizes, quoted across the pages ------------------------------------------

TEST(DocsModelSizes, AreModelConfigsDefaults) {
  const glass::ModelConfig c;
  const auto n = [](std::size_t v) { return std::to_string(v); };
  expect_claim("atencao.md", "d_model = 128", "d_model = " + n(c.d_model));
  expect_claim("atencao.md", "head_dim = dₖ = 32", "head_dim = dₖ = " + n(c.head_dim()));
  expect_claim("atencao.md", "(128, 128)",
               "(" + n(c.n_heads * c.head_dim()) + ", " + n(c.d_model) + ")");
  expect_claim("gqa-e-cache.md", "head_dim = 32", "head_dim = " + n(c.head_dim()));
  expect_claim("gqa-e-cache.md", "(64, 128)",
               "(" + n(c.n_kv_heads * c.head_dim()) + ", " + n(c.d_model) + ")");
  expect_claim("gqa-e-cache.md", "h / 2", "h / " + n(c.n_heads / c.n_kv_heads));
  expect_claim("rope.md", "D = 32", "D = " + n(c.head_dim()));
  expect_claim("rope.md", "base = 10000", "base = " + fixed(c.rope_base, 0));
  expect_claim("bloco-e-residuos.md", "(344, 128)",
               "(" + n(c.ffn_hidden) + ", " + n(c.d_model) + ")");
  expect_claim("bloco-e-residuos.md", "(128, 344)",
               "(" + n(c.d_model) + ", " + n(c.ffn_hidden) + ")");
  expect_claim("bloco-e-residuos.md", "0.02", fixed(c.init_std, 2));
  expect_claim("bloco-e-residuos.md", "√8", "√" + n(2 * c.n_layers));
  expect_claim("tokens-e-embeddings.md", "(V, 128)", "(V, " + n(c.d_model) + ")");
  expect_claim("gqa-e-cache.md", "(256 ", "(" + n(c.context_length) + " ");  // the whole cache
}

// ---- autograd.md ---------------------------------------------------------------------------------

TEST_F(DocsClaims, Autograd) {
  // The default model on tinyshakespeare: 65 distinct characters + id 0 = 66 ids, so
  // 4 * 181504 + 2 * 66 * 128 + 128 = 743040 parameters (by hand); Dom Casmurro: 82 + 1 = 83 ids,
  // 4 * 181504 + 2 * 83 * 128 + 128 = 747392.
  const std::size_t shakespeare = corpus_vocab_size("tinyshakespeare.txt");
  EXPECT_EQ(shakespeare, 66u);
  expect_claim("autograd.md", "V = 66", "V = " + std::to_string(shakespeare));
  expect_claim("autograd.md", "743040", std::to_string(default_model_parameters(shakespeare)));
  expect_claim("autograd.md", "747392", std::to_string(default_model_parameters(83)));

  const std::string ch02 = chapter_output("diferencas_finitas");
  expect_printed("autograd.md", "4.75", ch02, "derivada exata");
  expect_printed("autograd.md", "4.750097", ch02, "1e-02");  // the row h = 0.01, central column

  // Chapter 03: L = (x y + x)^2 at x = 2, y = 3; by hand dL/db = 2b = 16, dL/dy = 32, dL/dx = 64.
  const std::string ch03 = chapter_output("fita");
  EXPECT_EQ(last_number(ch03, "grad x"), 64);
  EXPECT_EQ(last_number(ch03, "grad y"), 32);
  EXPECT_EQ(last_number(ch03, "registros na fita"), 3);
  expect_stated("autograd.md", "dL/dy = 16·x = 32");
  expect_stated("autograd.md", "dL/dx = 16·y + 16 = 64");

  expect_printed("autograd.md", "1.761594", chapter_output("regra_da_cadeia"), "grad x pela fita");

  // Gradient checks in double with h = 1e-6: a right derivative agrees to ~1e-8 in relative error,
  // a wrong one is off by 0.1 to 1 (the chapter's wrong backward forgets the factor 2: error 1/3).
  expect_stated("autograd.md", "h = 1e-6");
  expect_stated("autograd.md", "~1e-8");
  expect_stated("autograd.md", "0.1");
  const std::string ch07 = chapter_output("verificacao_de_gradientes");
  std::size_t passed = 0;
  for (const std::string& line : lines_of(ch07)) {
    const std::vector<double> numbers = numbers_in(line);
    if (line.find("erro relativo") == std::string::npos || numbers.empty()) continue;
    const double error = numbers.back();
    if (line.find("PASS") != std::string::npos) {
      ++passed;
      EXPECT_LT(error, 1e-7) << line;
    } else if (line.find("REPROVADO") != std::string::npos) {
      EXPECT_GE(error, 0.1) << line;
      EXPECT_LE(error, 1.0) << line;
    }
  }
  EXPECT_GT(passed, 0u) << ch07;
  EXPECT_NE(line_with(ch07, "REPROVADO").find("REPROVADO"), std::string::npos);

  const std::string ch09 = chapter_output("softmax_entropia_cruzada");
  expect_printed("autograd.md", "0.659001", ch09, "probabilidades:");
  expect_printed("autograd.md", "0.417030", ch09, "perda:");
}

// ---- tokens-e-embeddings.md --------------------------------------------------------------------

TEST_F(DocsClaims, TokensAndEmbeddings) {
  const std::string ch10 = chapter_output("caracteres_como_tokens");
  const std::vector<double> counts = numbers_in(line_with(ch10, "bytes: "));  // "Olá, Capitu!"
  ASSERT_EQ(counts.size(), 2u);
  EXPECT_EQ(counts[0], 13);
  EXPECT_EQ(counts[1], 12);
  expect_stated("tokens-e-embeddings.md", "13");
  expect_stated("tokens-e-embeddings.md", "12 c");  // "12 caracteres" / "12 characters"
  const std::vector<double> book =
      numbers_in(line_with(ch10, "   vocabulário: "));  // the whole book
  ASSERT_EQ(book.size(), 3u);
  expect_claim("tokens-e-embeddings.md", "133196", fixed(book[1], 0));
  expect_claim("tokens-e-embeddings.md", "V = 83", "V = " + fixed(book[2], 0));
  expect_stated("tokens-e-embeddings.md", "82");
  expect_claim("treino.md", "133196", fixed(book[1], 0));
  expect_claim("treino.md", "V = 83", "V = " + fixed(book[2], 0));

  // The embedding table of the default model: vocabulary x d_model. tinyshakespeare has 65
  // distinct characters, so V = 66 and 66 * 128 = 8448 (by hand); Dom Casmurro 83 * 128 = 10624.
  glass::ModelConfig config;
  const std::size_t shakespeare = corpus_vocab_size("tinyshakespeare.txt");
  expect_claim("tokens-e-embeddings.md", "V = 66", "V = " + std::to_string(shakespeare));
  expect_claim("tokens-e-embeddings.md", "8448", std::to_string(shakespeare * config.d_model));
  expect_claim("tokens-e-embeddings.md", "10624",
               std::to_string(corpus_vocab_size("domcasmurro.txt") * config.d_model));
  expect_claim("tokens-e-embeddings.md", "1024", std::to_string(config.vocab_cap));
}

// ---- atencao.md ----------------------------------------------------------------------------------

TEST_F(DocsClaims, Attention) {
  const std::string ch15 = chapter_output("atencao_tres_passos");
  expect_printed("atencao.md", "0.330238", ch15, "triângulo de pesos[1]");
  expect_printed("atencao.md", "0.669762", ch15, "triângulo de pesos[1]");
  expect_printed("atencao.md", "0.197776", ch15, "triângulo de pesos[2]");
  expect_printed("atencao.md", "0.401112", ch15, "triângulo de pesos[2]");
  expect_printed("atencao.md", "0.660477", ch15, "triângulo de saídas[1]");
  expect_printed("atencao.md", "1.339523", ch15, "triângulo de saídas[1]");
  expect_printed("atencao.md", "1.197776", ch15, "triângulo de saídas[2]");
  expect_printed("atencao.md", "1.604448", ch15, "triângulo de saídas[2]");
  // The hand check of the second row (Python's math module): e^(1/sqrt 2), e^(sqrt 2), their sum.
  const double a = std::exp(1 / std::sqrt(2.0)), b = std::exp(std::sqrt(2.0));
  expect_claim("atencao.md", "0.707107", fixed(1 / std::sqrt(2.0), 6));
  expect_claim("atencao.md", "1.414214", fixed(std::sqrt(2.0), 6));
  expect_claim("atencao.md", "2.028115", fixed(a, 6));
  expect_claim("atencao.md", "4.113250", fixed(b, 6));
  expect_claim("atencao.md", "6.141365", fixed(a + b, 6));
  // The two-token example, rounded on the page: weights to two decimals, the output to one.
  const std::vector<double> weights = numbers_in(line_with(ch15, "pesos de a:"));
  const std::vector<double> output = numbers_in(line_with(ch15, "saída de a:"));
  ASSERT_EQ(weights.size(), 2u);
  ASSERT_EQ(output.size(), 2u);
  expect_claim("atencao.md", "[0.88, 0.12]",
               "[" + fixed(weights[0], 2) + ", " + fixed(weights[1], 2) + "]");
  expect_claim("atencao.md", "[8.8, 1.2]",
               "[" + fixed(output[0], 1) + ", " + fixed(output[1], 1) + "]");
}

// ---- rope.md -----------------------------------------------------------------------------------

TEST_F(DocsClaims, Rope) {
  const std::string ch17 = chapter_output("rope");
  // The same q·k at three pairs of positions two apart.
  for (const char* positions : {"posição  2, k na posição  0", "posição  5, k na posição  3",
                                "posição 12, k na posição 10"}) {
    expect_printed("rope.md", "0.163928", ch17, positions);
  }
  expect_stated("rope.md", "(2, 0), (5, 3)");
  expect_stated("rope.md", "(12, 10)");
  expect_printed("rope.md", "0.540302", ch17, "posição 1:");
  expect_printed("rope.md", "0.841471", ch17, "posição 1:");
  expect_printed("rope.md", "6.3", ch17, "par  0:");
  expect_printed("rope.md", "0.000178", ch17, "par 15:");
  expect_printed("rope.md", "35332.9", ch17, "par 15:");
}

// ---- gqa-e-cache.md ------------------------------------------------------------------------------

TEST_F(DocsClaims, GqaAndCache) {
  const std::string ch19 = chapter_output("gqa");
  expect_printed("gqa-e-cache.md", "49152", ch19, "parâmetros da atenção por camada, GQA");
  expect_printed("gqa-e-cache.md", "65536", ch19, "parâmetros da atenção por camada, 4 cabeças");
  expect_printed("gqa-e-cache.md", "128", ch19, "números no cache por posição");
  expect_printed("gqa-e-cache.md", "256", ch19, "números no cache por posição");
  expect_printed("gqa-e-cache.md", "512 KiB", ch19, "cache completo");
  expect_printed("gqa-e-cache.md", "1024 KiB", ch19, "cache completo");

  const std::string ch29 = chapter_output("kv_cache");
  // The small model of that chapter has a context of 32: 1 + 2 + ... + 32 = 528 against 32.
  expect_printed("gqa-e-cache.md", "528", ch29, "para encher o contexto de 32 posições");
  EXPECT_NE(line_with(ch29, "para encher o contexto").find("com cache 32"), std::string::npos);
  const glass::ModelConfig config;  // 1 + 2 + ... + T for the default context T = 256
  expect_claim("gqa-e-cache.md", "32896",
               std::to_string(config.context_length * (config.context_length + 1) / 2));
  expect_printed("gqa-e-cache.md", "textos iguais: sim", ch29, "textos iguais");
  // "of the order of 1e-6" (the printout has six decimals: 0.000001 to 0.000009).
  EXPECT_LT(last_number(ch29, "diferença máxima nos logits"), 1e-5);
  expect_stated("gqa-e-cache.md", "1e-6");
}

// ---- swiglu.md -----------------------------------------------------------------------------------

TEST_F(DocsClaims, SwiGLU) {
  const std::string ch21 = chapter_output("swiglu");
  for (const char* value : {"0.119203", "0.268941", "0.500000", "0.731059", "0.880797"}) {
    expect_printed("swiglu.md", value, ch21, "sigmoid(z):");
  }
  for (const char* value : {"-0.238406", "-0.268941", "0.000000", "0.731059", "1.761594"}) {
    expect_printed("swiglu.md", value, ch21, "silu(z):");
  }
  expect_printed("swiglu.md", "341.3", ch21, "ffn_hidden");
  expect_printed("swiglu.md", "344", ch21, "ffn_hidden");
  expect_printed("swiglu.md", "132096", ch21, "parâmetros da SwiGLU");
  // The minimum of silu: z ≈ -1.28, silu ≈ -0.28 (a grid search with Python's math module gave
  // z = -1.2785, silu = -0.278465).
  double best_z = 0, best = 0;
  for (int i = -30000; i <= 0; ++i) {
    const double z = i * 1e-4, s = z / (1 + std::exp(-z));
    if (s < best) best = s, best_z = z;
  }
  expect_claim("swiglu.md", "−0.28", "−" + fixed(-best, 2));
  expect_claim("swiglu.md", "−1.28", "−" + fixed(-best_z, 2));
  const glass::ModelConfig
      config;  // wq and wo (d_model x d_model), wk and wv (n_kv_heads * head_dim x d_model)
  expect_claim("swiglu.md", "49152",
               std::to_string(2 * config.d_model * config.d_model +
                              2 * config.n_kv_heads * config.head_dim() * config.d_model));
}

// ---- rmsnorm.md ----------------------------------------------------------------------------------

TEST_F(DocsClaims, RMSNorm) {
  const std::string ch22 = chapter_output("rmsnorm");
  expect_printed("rmsnorm.md", "2.738615", ch22, "rms = sqrt(7.5 + 1e-5)");
  const std::vector<std::string> y = {"0.365148", "0.730296", "1.095444", "1.460593"};
  for (const std::string& value : y) expect_printed("rmsnorm.md", value, ch22, "y: ");
  // 10x gives the same y to the fifth decimal; the sixth moves because 10x is [1, 2, 3, 4] divided
  // by sqrt(7.5 + 1e-7) instead of sqrt(7.5 + 1e-5) (the eps does not scale with x).
  const std::vector<double> y10 = numbers_in(line_with(ch22, "y de 10x:"));
  ASSERT_EQ(y10.size(), y.size() + 1);  // the "10" of the label and the four values
  for (std::size_t i = 0; i < y.size(); ++i) {
    EXPECT_NEAR(y10[i + 1], std::stod(y[i]), 1e-5);
    EXPECT_EQ(fixed(y10[i + 1], 6), fixed((i + 1) / std::sqrt(7.5 + 1e-7), 6));
  }
  expect_stated("rmsnorm.md", "√(7.5 + 1e-7)");
  // mean(y²) = 7.5 / (7.5 + 1e-5), printed with six decimals, quoted with seven.
  expect_printed("rmsnorm.md", "0.999999", ch22, "média(y²)");
  expect_claim("rmsnorm.md", "0.9999987", fixed(7.5 / (7.5 + 1e-5), 7));
  for (const char* value : {"0.352977", "-0.024343", "-0.036515", "-0.048686"}) {
    expect_printed("rmsnorm.md", value, ch22, "grad x (de y[0])");
  }
  // Nine RMSNorms of d_model gains: two per block and the final one.
  const glass::ModelConfig config;
  expect_claim("rmsnorm.md", "1152", std::to_string((2 * config.n_layers + 1) * config.d_model));
  expect_claim("rmsnorm.md", "1e-5",
               config.norm_eps == 1e-5 ? "1e-5" : std::to_string(config.norm_eps));
}

// ---- bloco-e-residuos.md -------------------------------------------------------------------------

TEST_F(DocsClaims, BlockAndResiduals) {
  const std::string ch23 = chapter_output("bloco_residuos");
  expect_printed("bloco-e-residuos.md", "0.9999", ch23, "média de dL/dx");
  // The gradient's norm with and without the shortcuts; sqrt(6 * 128) = 27.713 by hand.
  expect_printed("bloco-e-residuos.md", "27.716", ch23, "|dL/dx| com os atalhos");
  expect_printed("bloco-e-residuos.md", "0.188", ch23, "|dL/dx| sem os atalhos");
  expect_claim("bloco-e-residuos.md", "27.713", fixed(std::sqrt(768.0), 3));
  // "A new block changes the stream by about 1 % of its size": |block(x) - x| / |x| rounds to 1 %.
  expect_stated("bloco-e-residuos.md", "1 %");
  const std::vector<double> norms = numbers_in(line_with(ch23, "|bloco(x) - x|"));
  ASSERT_GE(norms.size(), 2u);
  EXPECT_EQ(fixed(100 * norms.back() / norms.front(), 0), "1") << line_with(ch23, "|bloco(x) - x|");

  const glass::ModelConfig config;
  expect_claim("bloco-e-residuos.md", "0.007071",
               fixed(config.init_std / std::sqrt(2.0 * static_cast<double>(config.n_layers)), 6));

  // The parameter table, from the model's own named parameters (vocabulary 65).
  const glass::Decoder model(config, 1);
  std::map<std::string, std::size_t> sizes;
  for (const auto& [name, tensor] : model.named_parameters()) sizes[name] = tensor.size();
  expect_claim("bloco-e-residuos.md", "8320", std::to_string(sizes.at("tok_embeddings.weight")));
  expect_claim("bloco-e-residuos.md", "16384",
               std::to_string(sizes.at("layers.0.attention.wq.weight")));
  expect_claim("bloco-e-residuos.md", "8192",
               std::to_string(sizes.at("layers.0.attention.wk.weight")));
  expect_claim("bloco-e-residuos.md", "44032",
               std::to_string(sizes.at("layers.0.feed_forward.w2.weight")));
  std::size_t block = 0, attention = 0, ffn = 0;
  for (const auto& [name, size] : sizes) {
    if (name.rfind("layers.0.", 0) != 0) continue;
    block += size;
    if (name.rfind("layers.0.attention.", 0) == 0) attention += size;
    if (name.rfind("layers.0.feed_forward.", 0) == 0) ffn += size;
  }
  expect_claim("bloco-e-residuos.md", "181504", std::to_string(block));
  expect_claim("bloco-e-residuos.md", "49152", std::to_string(attention));
  expect_claim("bloco-e-residuos.md", "132096", std::to_string(ffn));
  expect_claim("bloco-e-residuos.md", "726016", std::to_string(config.n_layers * block));
  expect_claim("bloco-e-residuos.md", "742784", std::to_string(model.num_parameters()));
  // A text's vocabulary: its distinct characters + id 0 (tinyshakespeare 66, Dom Casmurro 83).
  expect_claim("bloco-e-residuos.md", "743040",
               std::to_string(default_model_parameters(corpus_vocab_size("tinyshakespeare.txt"))));
  expect_claim("bloco-e-residuos.md", "747392",
               std::to_string(default_model_parameters(corpus_vocab_size("domcasmurro.txt"))));
}

// ---- treino.md -----------------------------------------------------------------------------------

TEST_F(DocsClaims, Training) {
  expect_claim("treino.md", "4.42", fixed(std::log(83.0), 2));

  // The schedule example (also printed by the AdamW chapter).
  glass::LrSchedule schedule;
  schedule.lr_max = 1e-3;
  schedule.min_lr = 1e-4;
  schedule.warmup = 10;
  schedule.decay_iters = 100;
  const std::string ch25 = chapter_output("adamw_agenda");
  const std::vector<std::pair<long, std::string>> lrs = {{0, "lr(0) = 0.000091"},
                                                         {10, "lr(10) = 0.001000"},
                                                         {55, "lr(55) = 0.000550"},
                                                         {100, "lr(100) = 0.000100"}};
  for (const auto& [it, literal] : lrs) {
    expect_claim("treino.md", literal,
                 "lr(" + std::to_string(it) + ") = " + fixed(schedule.at(it), 6));
    const std::string value = literal.substr(literal.find("= ") + 2);
    char label[16];
    std::snprintf(label, sizeof label, "lr(%3ld):", it);
    EXPECT_NE(line_with(ch25, label).find(value), std::string::npos) << line_with(ch25, label);
  }

  // The narrow valley f(w) = 50 w0² + 0.5 w1²: a descent step multiplies w0 by (1 - 100 lr), which
  // stays inside [-1, 1] only for lr <= 2 / 100, and w1 by (1 - lr), so less than 2 % per step.
  expect_stated("treino.md", "50·w0² + 0.5·w1²");
  expect_stated("treino.md", "(1 − 100·lr)");
  expect_claim("treino.md", "lr = 0.02", "lr = " + fixed(2.0 / (2 * 50), 2));
  expect_claim("treino.md", "2 %", fixed(100 * 0.02, 0) + " %");

  // glass train's defaults and the optimizer's constants.
  const glass::TrainOptions options;
  expect_claim("treino.md", "2000 ", std::to_string(options.iters) + " ");
  expect_claim("treino.md", "12 ", std::to_string(options.batch_size) + " ");
  expect_claim("treino.md", "64 ", std::to_string(options.context) + " ");
  expect_claim("treino.md", "lr 1e-3", options.lr == 1e-3 ? "lr 1e-3" : std::to_string(options.lr));
  expect_claim("treino.md", "100 ", std::to_string(options.warmup) + " ");
  expect_claim("treino.md", "clipping 1.0", "clipping " + fixed(options.grad_clip, 1));
  expect_claim("treino.md", "250 ", std::to_string(options.eval_every) + " ");
  expect_claim("treino.md", "β₁ = 0.9", "β₁ = " + fixed(options.beta1, 1));
  expect_claim("treino.md", "β₂ = 0.99", "β₂ = " + fixed(options.beta2, 2));
  expect_claim("treino.md", "wd = 0.1", "wd = " + fixed(options.weight_decay, 1));

  // Muon (train/muon.hpp): its defaults, the quintic's coefficients, and the band its five steps
  // leave every singular value from 0.01 to 1 in (the scalar map on 10^4 log-spaced points).
  expect_claim("treino.md", "β = 0.95", "β = " + fixed(glass::MuonConfig().momentum, 2));
  expect_claim("treino.md", "`--muon-lr` (0.01 ",
               "`--muon-lr` (" + fixed(options.muon_lr, 2) + " ");
  expect_claim("treino.md", "3.4445", fixed(glass::kNewtonSchulzA, 4));
  expect_claim("treino.md", "4.7750", fixed(-glass::kNewtonSchulzB, 4));
  expect_claim("treino.md", "2.0315", fixed(glass::kNewtonSchulzC, 4));
  double low = HUGE_VAL, high = 0;
  for (int i = 0; i <= 10000; ++i) {
    double x = std::pow(10.0, -2.0 + 2.0 * i / 10000);
    for (int k = 0; k < glass::MuonConfig().ns_steps; ++k)
      x = glass::kNewtonSchulzA * x + glass::kNewtonSchulzB * std::pow(x, 3) +
          glass::kNewtonSchulzC * std::pow(x, 5);
    low = std::min(low, x);
    high = std::max(high, x);
  }
  expect_claim("treino.md", "0.68 ", fixed(low, 2) + " ");
  expect_claim("treino.md", "1.13.", fixed(high, 2) + ".");

  // Sampling, printed by the sampling chapter; the top-p sums by hand: 0.463063 + 0.280862 =
  // 0.743925, + 0.170351 = 0.914276.
  const std::string ch28 = chapter_output("amostragem");
  for (const char* value : {"0.463063", "0.280862", "0.170351", "0.062669", "0.023055"}) {
    expect_printed("treino.md", value, ch28, "temperatura 1:");
  }
  for (const char* value : {"0.622459", "0.377541"})
    expect_printed("treino.md", value, ch28, "top-k 2:");
  for (const char* value : {"0.506480", "0.307196", "0.186324"}) {
    expect_printed("treino.md", value, ch28, "top-p 0.8:");
  }
  expect_stated("treino.md", "0.744");
  expect_stated("treino.md", "0.914");

  // glass sample's defaults, as its --help prints them ("--tokens UINT:...=300").
  const std::string help = run(glass_test::binary_dir("/glass sample --help"));
  const std::vector<std::pair<std::string, std::string>> flags = {{"--tokens", "300"},
                                                                  {"--temperature", "0.8"},
                                                                  {"--top-k", "0"},
                                                                  {"--top-p", "1"},
                                                                  {"--seed", "1337"}};
  for (const auto& [flag, value] : flags) {
    expect_stated("treino.md", "| `" + flag);
    const std::string line = line_with(help, flag);
    EXPECT_EQ(line.substr(line.rfind('=') + 1), value) << "glass sample --help: " << line;
    const PagePair pages = pages_of("treino.md");
    for (const std::string* page : {&pages.pt, &pages.en}) {
      const std::string row = line_with(*page, "| `" + flag + " ");
      EXPECT_NE(row.find("| " + value + " |"), std::string::npos) << row;
    }
  }
}

// ---- escala.md -----------------------------------------------------------------------------------

/// `value` as the pages write a large number: "6.85e12" (three significant digits, no "+").
std::string short_e(double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2e", value);
  std::string s = buf;
  const std::size_t e = s.find('e');
  return s.substr(0, e) + "e" + std::to_string(std::stoi(s.substr(e + 1)));
}

/// The bytes of a K/V cache: K and V, per layer, per K/V head, head_dim numbers per token.
double kv_cache_bytes(double n_layers, double n_kv_heads, double head_dim, double bytes,
                      double tokens) {
  return 2 * n_layers * n_kv_heads * head_dim * bytes * tokens;
}

TEST(DocsScale, ParametersTokensFlopsAndTheCache) {
  // GlassLLM's side: the default model on tinyshakespeare (V = 66) and glass train's defaults.
  const std::size_t n = default_model_parameters(corpus_vocab_size("tinyshakespeare.txt"));
  const glass::TrainOptions options;
  const double tokens = static_cast<double>(options.iters * options.batch_size * options.context);
  expect_claim("escala.md", "743040", std::to_string(n));
  expect_claim("escala.md", "1536000", fixed(tokens, 0));
  expect_claim("escala.md", "2.07", fixed(tokens / n, 2));
  expect_claim("escala.md", "6.85e12", short_e(6 * n * tokens));
  // Llama 2 7B (Touvron et al. 2023, table 1 and the released config): 6.74e9 parameters, 2e12
  // tokens; Chinchilla (Hoffmann et al. 2022): 70e9 parameters, 1.4e12 tokens.
  const double n7 = 6.74e9, d7 = 2e12;
  expect_claim("escala.md", "| 297 |", "| " + fixed(d7 / n7, 0) + " |");
  expect_claim("escala.md", "8.09e22", short_e(6 * n7 * d7));
  expect_claim("escala.md", "5.88e23", short_e(6 * 70e9 * 1.4e12));
  expect_claim("escala.md", "1.18e10", short_e((6 * n7 * d7) / (6 * n * tokens)));
  // The K/V cache: Llama 2 7B (32 layers, 32 K/V heads, head_dim 128) in fp16 at 4096 tokens;
  // Llama 2 70B (80 layers, 8 K/V heads); GlassLLM's default model in float32 over its context.
  const double gib = 1024.0 * 1024 * 1024;
  const double llama7 = kv_cache_bytes(32, 32, 128, 2, 4096);
  expect_claim("escala.md", "2 · 32 · 32 · 128 · 2 · 4096 = 2147483648",
               "2 · 32 · 32 · 128 · 2 · 4096 = " + fixed(llama7, 0));
  expect_claim("escala.md", "**2 GiB** (2.15 GB)",
               "**" + fixed(llama7 / gib, 0) + " GiB** (" + fixed(llama7 / 1e9, 2) + " GB)");
  expect_claim("escala.md", "524288 bytes = 512 KiB",
               fixed(kv_cache_bytes(32, 32, 128, 2, 1), 0) + " bytes = 512 KiB");
  const double llama70 = kv_cache_bytes(80, 8, 128, 2, 4096);
  expect_claim("escala.md", "1342177280 bytes = 1.25 GiB",
               fixed(llama70, 0) + " bytes = " + fixed(llama70 / gib, 2) + " GiB");
  expect_claim("escala.md", "10 GiB",
               fixed(kv_cache_bytes(80, 64, 128, 2, 4096) / gib, 0) + " GiB");
  const glass::ModelConfig c;
  const double glass_cache =
      kv_cache_bytes(c.n_layers, c.n_kv_heads, c.head_dim(), 4, c.context_length);
  expect_claim("escala.md", "2 · 4 · 2 · 32 · 4 · 256 = 524288",
               "2 · " + std::to_string(c.n_layers) + " · " + std::to_string(c.n_kv_heads) + " · " +
                   std::to_string(c.head_dim()) + " · 4 · " + std::to_string(c.context_length) +
                   " = " + fixed(glass_cache, 0));
  // Decoding: 2 bytes and 2 FLOPs per weight per token; A100 80 GB SXM (NVIDIA's datasheet):
  // 312e12 FLOP/s in bf16 (dense), 2.039e12 bytes/s.
  expect_claim("escala.md", "13.48 GB", fixed(2 * n7 / 1e9, 2) + " GB");
  expect_claim("escala.md", "153 FLOPs", fixed(312e12 / 2.039e12, 0) + " FLOPs");
  expect_claim("escala.md", "151 tokens", fixed(2.039e12 / (2 * n7), 0) + " tokens");
  expect_claim("escala.md", "23145", fixed(312e12 / (2 * n7), 0));
  expect_claim("escala.md", "2972160 bytes (2.83 MiB)",
               fixed(4.0 * n, 0) + " bytes (" + fixed(4.0 * n / (1024 * 1024), 2) + " MiB)");
}

// ---- perplexidade.md -----------------------------------------------------------------------------

/// Column `column` of the row of the training log docs/img/<file> (a glass train log.csv) whose
/// step is `step`.
std::string log_value(long step, const std::string& column,
                      const std::string& file = "tinyshakespeare-log.csv") {
  const std::vector<std::string> rows = lines_of(read_file(kDocs / "img" / file));
  const auto split = [](const std::string& row) {
    std::vector<std::string> cells;
    std::istringstream in(row);
    std::string cell;
    while (std::getline(in, cell, ',')) cells.push_back(cell);
    return cells;
  };
  if (rows.empty()) {
    ADD_FAILURE() << "no docs/img/" << file;
    return "";
  }
  const std::vector<std::string> header = split(rows[0]);
  const auto col = std::find(header.begin(), header.end(), column) - header.begin();
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const std::vector<std::string> cells = split(rows[i]);
    if (!cells.empty() && cells[0] == std::to_string(step) && col < static_cast<long>(cells.size()))
      return cells[col];
  }
  ADD_FAILURE() << "no step " << step << " with a column " << column << " in " << file;
  return "";
}

TEST(DocsPerplexity, TheUniformModelAndARealRun) {
  const std::size_t v = corpus_vocab_size("tinyshakespeare.txt");
  expect_claim("perplexidade.md", "V = 66", "V = " + std::to_string(v));
  expect_claim("perplexidade.md", "ln 66 = 4.190", "ln 66 = " + fixed(std::log(66.0), 3));
  expect_claim("perplexidade.md", "(4.189655)",
               "(" + fixed(std::log(static_cast<double>(v)), 6) + ")");
  expect_claim("perplexidade.md", "6.044", fixed(std::log2(static_cast<double>(v)), 3));
  expect_claim("perplexidade.md", "ln 83 = 4.419", "ln 83 = " + fixed(std::log(83.0), 3));
  expect_claim("perplexidade.md", "6.375", fixed(std::log2(83.0), 3));
  expect_claim("perplexidade.md", "V = 83",
               "V = " + std::to_string(corpus_vocab_size("domcasmurro.txt")));
  // The rows of the saved run: loss, loss / ln 2, e^loss.
  for (long step : {0L, 2000L}) {
    const std::string val = log_value(step, "val_loss");
    const double loss = std::stod(val);
    expect_stated("perplexidade.md", "| " + std::to_string(step) + " | " + val + " | " +
                                         fixed(loss / std::log(2.0), 3) + " |");
    const std::string perplexity = fixed(std::exp(loss), step == 0 ? 2 : 3);
    expect_stated("perplexidade.md", fixed(loss / std::log(2.0), 3) + " | " + perplexity + " |");
  }
  const std::string train = log_value(2000, "train_loss");
  expect_stated("perplexidade.md", train);
  expect_claim("perplexidade.md", "4.413", fixed(std::exp(std::stod(train)), 3));
  expect_claim("perplexidade.md", "5.4",
               fixed(std::exp(std::stod(log_value(2000, "val_loss"))), 1));
}

// ---- adamw.md ------------------------------------------------------------------------------------

/// w after `steps` steps from w = 1, lr 1e-3, GlassLLM's betas and eps, with the loss gradient
/// `loss_grad(t)`: by the library's AdamW (decoupled decay) or by Adam with `lambda * w` added to
/// the gradient (L2), written out here from the equations of train/adamw.hpp.
double decayed_weight(bool decoupled, double lambda, double (*loss_grad)(long), long steps = 1000) {
  const double lr = 1e-3;
  glass::AdamWConfig config;
  config.weight_decay = decoupled ? lambda : 0.0;
  EXPECT_EQ(config.beta1, 0.9);
  EXPECT_EQ(config.beta2, 0.99);
  EXPECT_EQ(config.eps, 1e-8);
  if (decoupled) {
    glass::Tensor w = glass::Tensor::from_vector({1}, {1, 1}, true);  // a matrix: decayed
    glass::AdamW opt({{"w", w}}, config);
    for (long t = 1; t <= steps; ++t) {
      w.grad() =
          glass::Tensor::from_vector({static_cast<glass::Scalar>(loss_grad(t))}, {1, 1}).value();
      opt.step(lr);
    }
    return w.value()(0, 0);
  }
  double w = 1, m = 0, v = 0;
  for (long t = 1; t <= steps; ++t) {
    const double g = loss_grad(t) + lambda * w;
    m = config.beta1 * m + (1 - config.beta1) * g;
    v = config.beta2 * v + (1 - config.beta2) * g * g;
    w -= lr / (1 - std::pow(config.beta1, t)) * m /
         (std::sqrt(v) / std::sqrt(1 - std::pow(config.beta2, t)) + config.eps);
  }
  return w;
}

TEST(DocsAdamW, AdamWithL2DecaysByTheGradientsSizeAdamWDoesNot) {
  double (*const zero)(long) = [](long) { return 0.0; };
  double (*const noisy)(long) = [](long t) { return t % 2 ? 10.0 : -10.0; };
  const auto row = [](const char* grad, const char* lambda, double l2, double w) {
    return std::string("| ") + grad + " | " + lambda + " | " + fixed(l2, 3) + " | " + fixed(w, 3) +
           " |";
  };
  expect_claim(
      "adamw.md", "| zero | 0.1 | 0.142 | 0.905 |",
      row("zero", "0.1", decayed_weight(false, 0.1, zero), decayed_weight(true, 0.1, zero)));
  expect_claim(
      "adamw.md", "| zero | 0.01 | 0.142 | 0.990 |",
      row("zero", "0.01", decayed_weight(false, 0.01, zero), decayed_weight(true, 0.01, zero)));
  expect_claim(
      "adamw.md", "| ±10 | 0.1 | 0.988 | 0.903 |",
      row("±10", "0.1", decayed_weight(false, 0.1, noisy), decayed_weight(true, 0.1, noisy)));
  // (1 - lr λ)^1000 for λ = 0.1 and 0.01.
  expect_claim("adamw.md", "(1 − lr·λ)¹⁰⁰⁰", "(1 − lr·λ)¹⁰⁰⁰");
  EXPECT_EQ(fixed(std::pow(1 - 1e-4, 1000), 3), "0.905");
  EXPECT_EQ(fixed(std::pow(1 - 1e-5, 1000), 3), "0.990");
  const glass::TrainOptions options;
  expect_claim("adamw.md", "wd = 0.1", "wd = " + fixed(options.weight_decay, 1));
}

// ---- precisao-mista.md ---------------------------------------------------------------------------

TEST(DocsMixedPrecision, TheFormatsLimitsAndTheMemory) {
  // IEEE binary16: 10 mantissa bits, exponents -14..15; bf16: 7 mantissa bits, fp32's exponents.
  expect_claim("precisao-mista.md", "| 65504 |",
               "| " + fixed(std::ldexp(2 - std::ldexp(1, -10), 15), 0) + " |");
  expect_claim("precisao-mista.md", "2⁻¹⁴ ≈ 6.10e-5", "2⁻¹⁴ ≈ " + short_e(std::ldexp(1, -14)));
  expect_claim("precisao-mista.md", "2⁻²⁴ ≈ 5.96e-8", "2⁻²⁴ ≈ " + short_e(std::ldexp(1, -24)));
  expect_claim("precisao-mista.md", "2⁻¹⁰ ≈ 0.000977", "2⁻¹⁰ ≈ " + fixed(std::ldexp(1, -10), 6));
  expect_claim("precisao-mista.md", "2⁻⁷ = 0.0078125", "2⁻⁷ = " + fixed(std::ldexp(1, -7), 7));
  expect_claim("precisao-mista.md", "2⁻²³ ≈ 1.19e-7", "2⁻²³ ≈ " + short_e(std::ldexp(1, -23)));
  expect_claim("precisao-mista.md", "≈ 3.39e38",
               "≈ " + short_e(std::ldexp(2 - std::ldexp(1, -7), 127)));
  expect_claim("precisao-mista.md", "≈ 1.18e-38", "≈ " + short_e(std::ldexp(1, -126)));
  // 1 + 1e-4 rounds to 1 in fp16 (the gap above 1 is 2^-10); 1e-8 < 2^-25 rounds to 0; times
  // 1024 it is 1.024e-5, a subnormal of fp16 (multiple of 2^-24): 172 * 2^-24 = 1.0252e-5.
  EXPECT_LT(1e-4, std::ldexp(1, -10) / 2);
  EXPECT_LT(1e-3, std::ldexp(1, -7) / 2);
  EXPECT_LT(1e-8, std::ldexp(1, -25));
  expect_claim("precisao-mista.md", "≈ 1.03e-5",
               "≈ " + short_e(std::round(1e-8 * 1024 / std::ldexp(1, -24)) * std::ldexp(1, -24)));
  // 16 bytes per parameter.
  expect_claim("precisao-mista.md", "107.8 GB", fixed(16 * 6.74e9 / 1e9, 1) + " GB");
  const std::size_t n = default_model_parameters(corpus_vocab_size("tinyshakespeare.txt"));
  expect_claim("precisao-mista.md", "11888640", std::to_string(16 * n));
  expect_claim("precisao-mista.md", "11.3 MiB", fixed(16.0 * n / (1024 * 1024), 1) + " MiB");
}

// ---- sobreajuste-e-dropout.md --------------------------------------------------------------------

TEST(DocsOverfitting, TheTableIsTheSavedRunsLog) {
  const std::string log = "domcasmurro-3000-log.csv";
  for (long step : {500L, 1000L, 1500L, 2000L, 2500L, 3000L}) {
    const std::string train = log_value(step, "train_loss", log),
                      val = log_value(step, "val_loss", log);
    const double gap = std::stod(val) - std::stod(train);
    const std::string gap_text = gap < 0 ? "−" + fixed(-gap, 6) : fixed(gap, 6);
    expect_stated("sobreajuste-e-dropout.md", "| " + std::to_string(step) + " | " + train + " | " +
                                                  val + " | " + gap_text + " |");
  }
  // Validation rises after its best (step 2000) while training keeps falling.
  const double best = std::stod(log_value(2000, "val_loss", log));
  for (long step = 0; step <= 3000; step += 250)
    EXPECT_GE(std::stod(log_value(step, "val_loss", log)), best) << step;
  EXPECT_GT(std::stod(log_value(3000, "val_loss", log)), best);
  EXPECT_LT(std::stod(log_value(3000, "train_loss", log)),
            std::stod(log_value(2000, "train_loss", log)));
  expect_stated("sobreajuste-e-dropout.md", "(1.566202 → 1.615765)");
  expect_stated("sobreajuste-e-dropout.md", "(1.320620 → 1.135083)");
  // The corpus and the passes over the training text: 90% of the characters, floor (as split_train_val).
  const glass::TrainOptions options;
  const double per_step = static_cast<double>(options.batch_size * options.context);
  const std::size_t book =
      glass::load_text(glass_test::source_dir("/data/corpora/domcasmurro.txt")).size();
  const std::size_t book_train =
      static_cast<std::size_t>(std::floor(0.9 * static_cast<double>(book)));
  expect_claim("sobreajuste-e-dropout.md", "133196", std::to_string(book));
  expect_claim("sobreajuste-e-dropout.md", "119876", std::to_string(book_train));
  expect_claim("sobreajuste-e-dropout.md", "12.8",
               fixed(2000 * per_step / static_cast<double>(book_train), 1));
  expect_claim("sobreajuste-e-dropout.md", "19.2",
               fixed(3000 * per_step / static_cast<double>(book_train), 1));
  const std::size_t plays =
      glass::load_text(glass_test::source_dir("/data/corpora/tinyshakespeare.txt")).size();
  const std::size_t plays_train =
      static_cast<std::size_t>(std::floor(0.9 * static_cast<double>(plays)));
  expect_claim("sobreajuste-e-dropout.md", "1003854", std::to_string(plays_train));
  expect_claim("sobreajuste-e-dropout.md", "1.53",
               fixed(2000 * per_step / static_cast<double>(plays_train), 2));
  expect_claim(
      "sobreajuste-e-dropout.md", "0.195",
      fixed(std::stod(log_value(2000, "val_loss")) - std::stod(log_value(2000, "train_loss")), 3));
  EXPECT_EQ(fixed(static_cast<double>(plays) / static_cast<double>(book), 0),
            "8");  // "eight times larger"
  expect_stated("sobreajuste-e-dropout.md", "`--weight-decay`, 0.1");
  EXPECT_EQ(options.weight_decay, 0.1);
}

// ---- interpretabilidade.md -----------------------------------------------------------------------

TEST_F(DocsClaims, Interpretability) {
  // The baselines of a head with no preference (1/(t+1) at row t), printed by chapters 34 and 35:
  // previous-token over 32 positions (H_32 - 1) / 31 = 0.098661, induction with P = 16
  // (H_32 - H_16) / 16 = 0.042360 (Python's fractions module).
  const std::string ch34 = chapter_output("cabeca_do_token_anterior");
  expect_printed("interpretabilidade.md", "0.0987", ch34, "escore do padrão uniforme");
  const std::string ch35 = chapter_output("cabecas_de_inducao");
  expect_printed("interpretabilidade.md", "0.0424", ch35,
                 "régua: escore de indução do padrão uniforme");
  // The default model's best induction score was measured once with glass train (not recomputed
  // here): the page quotes the number chapter 35 quotes, and both say "below 0.02".
  expect_printed("interpretabilidade.md", "0.0161", ch35, "O maior escore de indução das 16");
  EXPECT_NE(line_with(ch35, "0.0161").find("todas abaixo de"), std::string::npos);
  expect_stated("interpretabilidade.md", "0.02");
  const glass::TrainOptions options;
  expect_claim("interpretabilidade.md", "2000", std::to_string(options.iters));
  // Attribution patching against exact patching on chapter 43's model: the spread over 20
  // pairs with the trained attention and with layer 1's W_q times 10, as the chapter prints it.
  const std::string ch43 = chapter_output("atribuicao_aos_logits");
  for (const char* number : {"0.929", "1.000"})
    expect_printed("interpretabilidade.md", number, ch43,
                   "atenção como treinada, Spearman das cabeças");
  for (const char* number : {"0.988", "0.310"})
    expect_printed("interpretabilidade.md", number, ch43,
                   "atenção da camada 1 × 10, Spearman das cabeças");
  // The default model's figures were measured once with bench/attribution_agreement.py (not
  // recomputed here): the page quotes the table of bench/README.md.
  for (const char* figure : {"| 24 | 0.832 | 0.123 | 0.846 | 0.556 | 0.994 | 9 |",
                             "| 24 | 0.832 | 0.124 | 0.865 | 0.574 | 0.988 | 9 |"}) {
    expect_stated("interpretabilidade.md", figure);
    EXPECT_NE(read_file(fs::path(glass_test::source_dir()) / "bench/README.md").find(figure),
              std::string::npos)
        << "bench/README.md does not hold the row " << figure;
  }
  // The default model's SAE was trained and measured once (glass sae train, glass sae eval; not
  // recomputed here): the pages quote bench/README.md's figures and its k and layer table, and
  // the settings they name are glass sae train's defaults.
  const std::string bench = read_file(fs::path(glass_test::source_dir()) / "bench/README.md");
  for (const char* figure : {"0.0306", "1.5777", "1.5975", "+0.0198", "0.036", "+0.028",
                             "| layers.1.out | 8 | 0.0610 | 0 | 56 | 1.6405 (+0.0628) | 76 s |",
                             "| layers.1.out | 16 | 0.0473 | 0 | 1 | 1.6199 (+0.0421) | 85 s |",
                             "| layers.1.out | 32 | 0.0412 | 0 | 1 | 1.6162 (+0.0384) | 105 s |",
                             "| layers.0.out | 16 | 0.0240 | 0 | 11 | 1.5897 (+0.0119) | 82 s |",
                             "| layers.3.out | 16 | 0.0664 | 0 | 1 | 1.6174 (+0.0397) | 98 s |"}) {
    expect_stated("interpretabilidade.md", figure);
    EXPECT_NE(bench.find(figure), std::string::npos) << "bench/README.md does not say " << figure;
  }
  const glass::SaeTrainOptions sae;
  expect_stated("interpretabilidade.md", "at " + sae.point + " (" + std::to_string(sae.n_latents) +
                                             " latents, k " + std::to_string(sae.k) + ")");
  expect_claim("interpretabilidade.md", "3000", std::to_string(sae.steps));
  expect_claim("interpretabilidade.md", "1000000", std::to_string(sae.dead_after));
  // "At the last layer the lens is exactly the model (chapter 32 prints a difference of 0)".
  EXPECT_EQ(last_number(chapter_output("lente_de_logits"),
                        "diferença máxima entre a lente em layers.1.out e os logits do modelo"),
            0);
}

// ---- the README and the manual pages -------------------------------------------------------------

const fs::path kRoot = fs::path(glass_test::source_dir());

/// A page of the project by its path from the root (README.md, docs/en/cli.md, ...).
std::string project_page(const std::string& path) {
  const std::string text = read_file(kRoot / path);
  EXPECT_FALSE(text.empty()) << "no page " << path;
  return text;
}

/// `text` with every run of whitespace made one space, so a phrase the page wraps over two lines
/// is still found.
std::string flat(const std::string& text) {
  static const std::regex spaces(R"(\s+)");
  return std::regex_replace(text, spaces, " ");
}

/// The page states `literal` (line breaks inside it do not matter).
void expect_on_page(const std::string& path, const std::string& literal) {
  EXPECT_NE(flat(project_page(path)).find(flat(literal)), std::string::npos)
      << path << " no longer says \"" << literal << "\"";
}

/// The page states `literal`, and `computed` (the code's value, written like the page) is it.
void expect_page_claim(const std::string& path, const std::string& literal,
                       const std::string& computed) {
  expect_on_page(path, literal);
  EXPECT_EQ(computed, literal) << path << " says " << literal << ", the code gives " << computed;
}

TEST(Readme, IsAFrontDoorWithTheTwoCommandsFirst) {
  const std::vector<std::string> lines = lines_of(project_page("README.md"));
  EXPECT_LE(lines.size(), 250u) << "README.md is a front door: the manual goes to docs/en/";
  // The first code block holds the two commands, in this order (.ci/run and the tests rely on them).
  std::size_t fence = 0;
  while (fence < lines.size() && lines[fence].rfind("```", 0) != 0) ++fence;
  ASSERT_LT(fence + 2, lines.size()) << "README.md has no code block";
  EXPECT_EQ(lines[fence + 1].rfind("bash scripts/train.sh ", 0), 0u) << lines[fence + 1];
  EXPECT_EQ(lines[fence + 2].rfind("bash scripts/test.sh ", 0), 0u) << lines[fence + 2];
  EXPECT_TRUE(fs::exists(kRoot / "scripts" / "train.sh"));
  EXPECT_TRUE(fs::exists(kRoot / "scripts" / "test.sh"));
  // It sends the reader on to every page the manual moved to.
  const std::vector<std::string> links = links_in(project_page("README.md"));
  for (const char* page :
       {"docs/en/cli.md", "docs/en/run-directory.md", "docs/en/build.md", "docs/en/testing.md",
        "bench/README.md", "docs/en/README.md", "tutorials/README.md"}) {
    EXPECT_NE(std::find(links.begin(), links.end(), page), links.end())
        << "README.md does not link " << page;
  }
}

TEST(Readme, FirstSessionBuildsWhatItRuns) {
  // scripts/train.sh builds the program; a tutorial the README runs is built by a command of the
  // README before it (on a fresh clone, ./build/tutorials/... would not exist: exit code 127).
  EXPECT_NE(project_page("scripts/train.sh").find("scripts/build.sh glass"), std::string::npos);
  const std::vector<std::string> lines = lines_of(project_page("README.md"));
  static const std::regex run(R"(\./build/tutorials/([0-9A-Za-z_]+))");
  std::size_t runs = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    if (!std::regex_search(lines[i], m, run)) continue;
    ++runs;
    const std::string name = m[1].str();
    EXPECT_TRUE(fs::exists(kRoot / "tutorials" / (name + ".cpp"))) << "no tutorial " << name;
    bool built = false;
    for (std::size_t j = 0; j < i; ++j) {
      const std::size_t at = lines[j].find("scripts/build.sh ");
      built = built || (at != std::string::npos && lines[j].find(name, at) != std::string::npos);
    }
    EXPECT_TRUE(built) << "README.md runs ./build/tutorials/" << name
                       << " without building it first";
  }
  EXPECT_GT(runs, 0u) << "the first session runs no tutorial";
}

// "Read the code in this order": each function the README names is defined in the file it names.
TEST(Readme, CodeToReadIsWhereItSays) {
  struct Citation {
    const char* function;    // as the README writes it
    const char* file;        // relative to the project's root, as the README writes it
    const char* definition;  // how the file spells it
  };
  const std::vector<Citation> citations = {
      {"Tape::record", "autograd/tape.cpp", "void Tape::record("},
      {"Tape::backward", "autograd/tape.cpp", "void Tape::backward("},
      {"TapeRecord", "autograd/tape.hpp", "struct TapeRecord"},
      {"Tensor::backward", "autograd/tensor.cpp", "void Tensor::backward("},
      {"silu", "autograd/ops_elementwise.cpp", "Tensor silu(const Tensor& a)"},
      {"Attention::forward_reference", "nn/attention.cpp", "Attention::forward_reference("},
      {"Block::forward", "nn/decoder.cpp", "Tensor Block::forward("},
      {"Decoder::forward", "nn/decoder.cpp", "Tensor Decoder::forward("},
      {"Trainer::train_step", "train/trainer.cpp", "Trainer::train_step("},
      {"DataParallel::loss_and_grad", "train/data_parallel.cpp",
       "double DataParallel::loss_and_grad("},
      {"clip_grad_norm", "train/clip.cpp", "double clip_grad_norm("},
      {"AdamW::step", "train/adamw.cpp", "void AdamW::step("},
      {"LrSchedule::at", "train/schedule.cpp", "double LrSchedule::at("},
  };
  const std::string readme = project_page("README.md");
  for (const Citation& c : citations) {
    EXPECT_NE(readme.find(std::string("`") + c.function + "`"), std::string::npos)
        << "README.md: " << c.function;
    EXPECT_NE(readme.find(std::string("`") + c.file + "`"), std::string::npos)
        << "README.md: " << c.file;
    EXPECT_NE(read_file(kRoot / c.file).find(c.definition), std::string::npos)
        << c.file << " (named by README.md) does not define " << c.function;
  }
  // The nine steps are numbered in the reference path, 1. to 9.
  const std::string attention = read_file(kRoot / "nn" / "attention.cpp");
  for (int step = 1; step <= 9; ++step) {
    EXPECT_NE(attention.find("// " + std::to_string(step) + ". "), std::string::npos)
        << "nn/attention.cpp has no step " << step;
  }
  EXPECT_TRUE(fs::exists(kRoot / "tutorials" / "README.md"));
}

TEST(Readme, LayoutTableIsTheTree) {
  // The folders of the layout table exist, and every top-level folder with a CMakeLists.txt (a
  // room of the build) is in the table.
  const std::vector<std::string> lines = lines_of(project_page("README.md"));
  std::set<std::string> listed;
  bool in_layout = false;
  static const std::regex folder("`([a-z_]+)/`");
  for (const std::string& line : lines) {
    if (line.rfind("## ", 0) == 0) in_layout = line == "## Layout";
    if (!in_layout || line.rfind("| `", 0) != 0) continue;
    const std::string first_cell = line.substr(0, line.find(" |", 2));
    for (auto it = std::sregex_iterator(first_cell.begin(), first_cell.end(), folder);
         it != std::sregex_iterator(); ++it) {
      listed.insert((*it)[1].str());
    }
  }
  EXPECT_GE(listed.size(), 10u) << "no layout table under \"## Layout\"";
  for (const std::string& name : listed) {
    EXPECT_TRUE(fs::is_directory(kRoot / name))
        << "README.md's layout table lists " << name << "/, which does not exist";
  }
  for (const auto& entry : fs::directory_iterator(kRoot)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory() || name[0] == '.' || !fs::exists(entry.path() / "CMakeLists.txt"))
      continue;
    EXPECT_EQ(listed.count(name), 1u)
        << name << "/ is a room of the build, missing from README.md's layout table";
  }
}

TEST(ManualPages, RelativeLinksPointToExistingFiles) {
  // docs/ and docs/en/ are checked above; these are the pages outside them.
  for (const char* path : {"README.md", "bench/README.md"}) {
    const fs::path page = kRoot / path;
    std::size_t checked = 0;
    for (const std::string& target : links_in(project_page(path))) {
      if (!is_relative(target)) continue;
      ++checked;
      EXPECT_TRUE(fs::exists(resolve(page, target)))
          << path << " links to " << target << ", which does not exist";
    }
    EXPECT_GT(checked, 3u) << path;
  }
}

TEST(ManualPages, ModelConfigMembersTheyNameExist) {
  // Every `ModelConfig::name` of the README, the manual and the concept pages is a member of
  // ModelConfig (nn/config.hpp): a field ("ops_path =") or a function ("validate(").
  const std::string header = read_file(kRoot / "nn" / "config.hpp");
  const std::string config = header.substr(header.find("struct ModelConfig {"));
  static const std::regex cited(R"(ModelConfig::([A-Za-z_]+))");
  std::vector<fs::path> pages = {kRoot / "README.md", kRoot / "bench" / "README.md"};
  for (const fs::path& dir : {kDocs, kDocs / "en"})
    for (const fs::path& page : pages_in(dir)) pages.push_back(page);
  std::size_t checked = 0;
  for (const fs::path& page : pages) {
    const std::string text = read_file(page);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), cited);
         it != std::sregex_iterator(); ++it) {
      const std::string name = (*it)[1].str();
      ++checked;
      const std::regex member("[ *&]" + name + R"((\s*=|\())");
      EXPECT_TRUE(std::regex_search(config, member))
          << page.lexically_relative(kRoot).string() << " names ModelConfig::" << name
          << ", which nn/config.hpp does not declare";
    }
  }
  EXPECT_GT(checked, 3u);
}

TEST(ManualPages, TheOpsSwitchIsCalledOpsAndItsOldNameStillWorks) {
  // The switch is --ops in both commands' help; --attention, its former name, is still accepted
  // (the help names it), and config.json keeps its "attention" key.
  for (const char* command : {"train", "sample"}) {
    const std::string help =
        run(glass_test::binary_dir(std::string("/glass ") + command + " --help"));
    EXPECT_NE(help.find("--ops"), std::string::npos) << "glass " << command << " --help:\n" << help;
    EXPECT_NE(help.find("--attention"), std::string::npos) << help;
  }
  for (const char* page : {"docs/en/cli.md", "docs/en/training.md", "docs/en/attention.md"}) {
    EXPECT_NE(project_page(page).find("`--ops"), std::string::npos) << page;
  }
  glass::ModelConfig reference;
  reference.ops_path = glass::OpsPath::reference;
  EXPECT_NE(glass::model_config_to_json(reference).find("\"attention\": \"reference\""),
            std::string::npos);
}

TEST(ManualPages, TrainFlagDefaultsAreTrainOptions) {
  // The row of each flag in docs/en/cli.md's table of glass train, against TrainOptions.
  const glass::TrainOptions o;
  const glass::ModelConfig c;
  const auto n = [](auto v) { return std::to_string(v); };
  const std::string cli = project_page("docs/en/cli.md");
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"| `--iters N` ", n(o.iters)},
      {"| `--batch-size B` ", n(o.batch_size)},
      {"| `--context T` ", n(o.context)},
      {"| `--lr X` / `--min-lr X` ",
       (o.lr == 1e-3 ? "1e-3" : n(o.lr)) + (o.min_lr < 0 ? " / lr/10" : " / " + n(o.min_lr))},
      {"| `--warmup N` ", n(o.warmup)},
      {"| `--muon-lr X` ", fixed(o.muon_lr, 2)},
      {"| `--weight-decay X` ", fixed(o.weight_decay, 1)},
      {"| `--grad-clip X` ", fixed(o.grad_clip, 1)},
      {"| `--eval-every N` / `--eval-iters N` ", n(o.eval_every) + " / " + n(o.eval_iters)},
      {"| `--sample-tokens N` ", n(o.sample_tokens)},
      {"| `--seed S` ", n(o.seed)},
      {"| `--vocab-cap N` ", n(c.vocab_cap)},
      {"| `--d-model --n-layers --n-heads --n-kv-heads --ffn-hidden` ",
       n(c.d_model) + ", " + n(c.n_layers) + ", " + n(c.n_heads) + ", " + n(c.n_kv_heads) + ", " +
           n(c.ffn_hidden)},
  };
  for (const auto& [flag, value] : rows) {
    const std::string row = line_with(cli, flag);
    EXPECT_NE(row.find("| " + value + " |"), std::string::npos)
        << "docs/en/cli.md: " << row << " (the code: " << value << ")";
  }
  expect_page_claim("docs/en/cli.md", "≤ the model's context length, 256",
                    "≤ the model's context length, " + n(c.context_length));
  // Step 0 of "Is my loss normal?": ln V for the two bundled corpora (ln 83 = 4.4188, ln 66 =
  // 4.1897 with Python's math module).
  const std::size_t dom = corpus_vocab_size("domcasmurro.txt"),
                    shakespeare = corpus_vocab_size("tinyshakespeare.txt");
  expect_page_claim("docs/en/cli.md", "ln 83 = 4.419",
                    "ln " + n(dom) + " = " + fixed(std::log(double(dom)), 3));
  expect_page_claim("docs/en/cli.md", "ln 66 = 4.190",
                    "ln " + n(shakespeare) + " = " + fixed(std::log(double(shakespeare)), 3));
  expect_page_claim("docs/en/cli.md", "82 characters + the unknown id",
                    n(dom - 1) + " characters + the unknown id");
}

TEST(ManualPages, ModelSizesAreModelConfigsDefaults) {
  // The default model as README.md and docs/en/cli.md (*The model*) describe it.
  const glass::ModelConfig c;
  const auto n = [](std::size_t v) { return std::to_string(v); };
  const std::string sizes = "`d_model` " + n(c.d_model) + ", " + n(c.n_layers) + " layers, " +
                            n(c.n_heads) + " query heads of `head_dim` " + n(c.head_dim()) + ", " +
                            n(c.n_kv_heads) + " KV heads (query head h uses KV head h / " +
                            n(c.n_heads / c.n_kv_heads) + "), SwiGLU hidden " + n(c.ffn_hidden) +
                            ", RMSNorm eps " + (c.norm_eps == 1e-5 ? "1e-5" : fixed(c.norm_eps, 6));
  const std::size_t shakespeare = corpus_vocab_size("tinyshakespeare.txt");
  const std::string parameters =
      "length " + n(c.context_length) + " — " + n(default_model_parameters(c.vocab_size)) +
      " parameters with the default `vocab_size` " + n(c.vocab_size) + " (" +
      n(default_model_parameters(shakespeare)) + " on tinyshakespeare: " + n(shakespeare - 1) +
      " distinct characters + the unknown id 0 = " + n(shakespeare) + ")";
  const std::string rope = "RoPE base " + fixed(c.rope_base, 0) + " on interleaved pairs";
  for (const char* page : {"README.md", "docs/en/cli.md"}) {
    expect_on_page(page, sizes);
    expect_on_page(page, parameters);
    expect_on_page(page, rope);
  }
}

// ---- bpe.md --------------------------------------------------------------------------------------

TEST_F(DocsClaims, Bpe) {
  const std::string ch31 = chapter_output("bpe");
  // The tiny text by hand (the chapter's test checks these against the hand count): 35 symbols,
  // then 30, 27 and 25 tokens after the merges ▁+r (5 times), ▁r+o (3), ▁+d (2).
  expect_stated("bpe.md", "35 ");
  expect_stated("bpe.md", "30, 27 ");
  expect_stated("bpe.md", "25 tokens");
  EXPECT_EQ(last_number(ch31, "tokens no início"), 35);
  EXPECT_EQ(last_number(ch31, "tokens depois do passo 1"), 30);
  EXPECT_EQ(last_number(ch31, "tokens depois do passo 2"), 27);
  EXPECT_EQ(last_number(ch31, "tokens depois do passo 3"), 25);
  for (const char* merge :
       {"passo 1, junta: ▁ + r -> ▁r (5 vezes)", "passo 2, junta: ▁r + o -> ▁ro (3 vezes)",
        "passo 3, junta: ▁ + d -> ▁d (2 vezes)"}) {
    EXPECT_NE(ch31.find(merge), std::string::npos) << merge;
  }
  // The book's size and the smallest vocabulary.
  const std::vector<double> size = numbers_in(line_with(ch31, "caracteres: "));
  ASSERT_EQ(size.size(), 2u);
  expect_claim("bpe.md", "133196 ", fixed(size[0], 0) + " ");
  expect_claim("bpe.md", "136169 ", fixed(size[1], 0) + " ");
  expect_claim("bpe.md", "341 ",
               fixed(numbers_in(line_with(ch31, "vocabulário mínimo"))[0], 0) + " ");
  // The table: vocabulary, merges, tokens, each row as the chapter prints it.
  for (const char* v : {"384", "512", "1024", "2048"}) {
    const std::vector<double> row =
        numbers_in(line_with(ch31, std::string("tokens com vocabulário ") + v + ":"));
    ASSERT_EQ(row.size(), 4u) << v;  // vocabulary, tokens, merges, characters per token
    const std::string literal =
        std::string("| ") + v + " | " + fixed(row[2], 0) + " | " + fixed(row[1], 0) + " |";
    expect_stated("bpe.md", literal);
    if (std::string(v) == "1024") expect_claim("bpe.md", "2.607", fixed(row[3], 3));
  }
  // The first merges, as the chapter prints them (the page quotes the first 13).
  const std::string merges = "▁+a ▁+d ▁+e r+a o+s ▁+p ▁+m q+u ▁+c a+s qu+e e+s n+t";
  expect_stated("bpe.md", "`" + merges + "`");
  EXPECT_NE(line_with(ch31, "primeiras fusões:").find("primeiras fusões: " + merges + " "),
            std::string::npos);
  // Byte fallback of the emoji, and which tokenizer wins per token and per byte.
  expect_stated("bpe.md", "🙂");
  expect_printed("bpe.md", "<0xF0> <0x9F> <0x99> <0x82>", ch31, "tokens: ");
  EXPECT_NE(ch31.find("por token, a menor perda: caracteres\n"), std::string::npos);
  EXPECT_NE(ch31.find("por byte, a menor perda: BPE\n"), std::string::npos);
  // The byte ids: 256 bytes after the 3 specials, 3..258; the first character is 259.
  expect_stated("bpe.md", "258 ");
  EXPECT_EQ(glass::BpeTokenizer::kFirstByteId, 3);
  EXPECT_EQ(glass::BpeTokenizer::kFirstCharId, 3 + 256);
}

TEST_F(DocsClaims, BpeAgainstCharactersMeasured) {
  // The two models of the comparison differ only in the vocabulary (83 characters + id 0
  // against 512 BPE tokens): their sizes are the library's.
  expect_claim("bpe.md", "747392 ", std::to_string(default_model_parameters(83)) + " ");
  expect_claim("bpe.md", "857216", std::to_string(default_model_parameters(512)));
  EXPECT_EQ(default_model_parameters(512) - default_model_parameters(83), 2u * (512 - 83) * 128)
      << "the embedding and the output head, (V, d_model) each";
  // The times and bits per byte were measured (two trainings of 2000 steps, about half an hour
  // on the 2-core machine the page names), not recomputed here: both languages quote the same.
  expect_stated("bpe.md", "| 747392 | 775 s | 2.2263 | 2.2204 (");
  expect_stated("bpe.md", "| 857216 | 917 s | 2.6909 | 2.2576 (");
  expect_stated("bpe.md", "38.2 s");
  expect_stated("bpe.md", "43.9 s");
  expect_stated("bpe.md", "Intel Xeon");
}

TEST_F(DocsClaims, BpeInspectorChips) {
  // The chips of `glass inspect` on 'Capitu olhou 🙂' for a model of `glass train --tokenizer bpe
  // --vocab-size 512` on the bundled book: its tokenizer is trained on the training split (the
  // text up to the first space at or after 90% of the characters, split_point in data/text_tokenizer.cpp), and
  // the three rows are the terminal view's (inspect/render_terminal.cpp, prompt_rows): each column
  // right-aligned to its widest entry, columns separated by '|'. Every label here is one column
  // per character ('▁', ASCII).
  const std::u32string book =
      glass::load_text(glass_test::source_dir("/data/corpora/domcasmurro.txt"));
  const std::size_t at =
      static_cast<std::size_t>(std::floor(static_cast<double>(book.size()) * 0.9));
  const std::size_t space = book.find(U' ', at);
  const glass::BpeTokenizer bpe =
      glass::BpeTokenizer::train(book.substr(0, space == std::u32string::npos ? at : space), 512);
  const std::vector<std::int32_t> ids = bpe.encode(glass::utf8_to_u32("Capitu olhou 🙂"));
  std::string pos = "  position  ", text = "  token     ", id_row = "  token id  ";
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::string p = std::to_string(i), t = bpe.token_text(ids[i]), d = std::to_string(ids[i]);
    const std::size_t width = std::max({p.size(), glass::utf8_to_u32(t).size(), d.size()});
    const auto pad = [width](const std::string& s) {
      return std::string(width - glass::utf8_to_u32(s).size(), ' ') + s;
    };
    const std::string sep = i ? "|" : "";
    pos += sep + pad(p);
    text += sep + pad(t);
    id_row += sep + pad(d);
  }
  for (const std::string& row : {pos, text, id_row}) expect_stated("bpe.md", "  " + row + "\n");
  // Capitu is three tokens on the page; the emoji four bytes.
  EXPECT_EQ(bpe.token_text(ids[0]) + bpe.token_text(ids[1]) + bpe.token_text(ids[2]),
            "\u2581Capitu");
  expect_stated("bpe.md", "`\u2581C`, `apit`");
}

TEST_F(DocsClaims, Chat) {
  const std::string out = chapter_output("conversar");
  // The mask of chapter 41's conversation, line for line as the chapter prints it, and its count.
  for (const char* row : {"tokens: ", "máscara:"})
    expect_stated("conversar.md", line_with(out, row));
  EXPECT_EQ(numbers_in(line_with(out, "alvos contados e tokens da conversa")),
            (std::vector<double>{5, 37}));
  const PagePair pages = pages_of("conversar.md");
  EXPECT_NE(pages.pt.find("5 alvos em 37 tokens"), std::string::npos);
  EXPECT_NE(pages.en.find("Five targets out of 37 tokens"), std::string::npos);
  EXPECT_NE(pages.pt.find("usuário que digita `<|im_start|>` escreve 12 ids"), std::string::npos);
  EXPECT_NE(line_with(out, "o usuário digita").find("12 ids, nenhum especial"), std::string::npos);
  expect_printed("conversar.md", "104640", out, "parâmetros do modelo");
  // The experiment's table: base, with the mask, without it; on the answers and off them.
  const std::vector<double> on = numbers_in(line_with(out, "perda nas respostas: base"));
  const std::vector<double> off = numbers_in(line_with(out, "perda fora das respostas: base"));
  ASSERT_EQ(on.size(), 3u);
  ASSERT_EQ(off.size(), 3u);
  const char* rows_pt[] = {"| base (sem ajuste) | ", "| ajustado com a máscara | ",
                           "| ajustado sem a máscara | "};
  const char* rows_en[] = {"| base, not fine-tuned | ", "| fine-tuned with the mask | ",
                           "| fine-tuned without it | "};
  for (std::size_t i = 0; i < 3; ++i) {
    const std::string cells = fixed(on[i], 3) + " | " + fixed(off[i], 3) + " |";
    EXPECT_NE(pages.pt.find(rows_pt[i] + cells), std::string::npos) << rows_pt[i] << cells;
    EXPECT_NE(pages.en.find(rows_en[i] + cells), std::string::npos) << rows_en[i] << cells;
  }
  // "75 das 80": the unmasked model opens another turn after <|im_end|>; the masked one never.
  // The two score alike on the exam: 11 of 20 letter counts, nothing in the other families.
  const std::vector<double> ends_without =
      numbers_in(line_with(out, "~ sem máscara, terminam com <|im_end|>, abrem outro turno"));
  const std::vector<double> ends_with =
      numbers_in(line_with(out, "~ com máscara, terminam com <|im_end|>, abrem outro turno"));
  ASSERT_FALSE(ends_without.empty());
  ASSERT_FALSE(ends_with.empty());
  EXPECT_EQ(ends_without.back(), 75);
  EXPECT_EQ(ends_with.back(), 0);
  EXPECT_NE(pages.pt.find("em 75 das 80 respostas"), std::string::npos);
  EXPECT_NE(pages.en.find("in 75 of the 80 answers"), std::string::npos);
  for (const char* who : {"~ com máscara, acertos", "~ sem máscara, acertos"}) {
    const std::vector<double> right = numbers_in(line_with(out, who));
    ASSERT_GE(right.size(), 4u) << who;
    EXPECT_EQ(std::vector<double>(right.end() - 4, right.end()), (std::vector<double>{0, 11, 0, 0}))
        << who;
  }
  EXPECT_NE(pages.pt.find("11 de 20 na contagem de letras"), std::string::npos);
  EXPECT_NE(pages.en.find("11 of 20 letter counts"), std::string::npos);
}

TEST(DocsChat, TheExamTableIsTheReadmes) {
  // The exam's figures live in the README's table; the chat pages quote its two rows cell for
  // cell (every cell after the row's name), so a new recipe's figures cannot reach one and not
  // the other.
  const std::vector<std::string> readme =
      lines_of(read_file(fs::path(glass_test::source_dir()) / "README.md"));
  std::vector<std::string> rows;
  for (const char* name :
       {"| base model, prompted with the template | ", "| fine-tuned (`scripts/chat.sh`) | "}) {
    for (const std::string& line : readme)
      if (line.rfind(name, 0) == 0) rows.push_back(line.substr(std::string(name).size()));
  }
  ASSERT_EQ(rows.size(), 2u) << "the README's chat exam table lost a row";
  const PagePair pages = pages_of("conversar.md");
  for (const std::string& cells : rows) {
    EXPECT_NE(pages.pt.find(cells), std::string::npos) << "docs/conversar.md lacks " << cells;
    EXPECT_NE(pages.en.find(cells), std::string::npos) << "docs/en/chat.md lacks " << cells;
  }
}

}  // namespace
