// Runs every numbered tutorial program (GLASS_BINARY_DIR/tutorials/NN_topic) and checks the
// numbers it prints that matter. A tutorial that stops building, crashes, or prints a wrong
// number fails here.
//
// Reference values and how they were produced:
// - Chapter 14 (the two-token example of docs/atencao.md, tokens 'a' and 'b'): scores [2, 0]; softmax [e^2, 1] / (e^2 + 1) =
//   [0.880797, 0.119203]; output 0.880797*[10, 0] + 0.119203*[0, 10] = [8.807971, 1.192029].
//   Scaled by 1/sqrt(2): scores [1.414214, 0], weights [0.804430, 0.195570], output
//   [8.044297, 1.955703]. All computed with NumPy in double precision (/usr/bin/python3).
// - The triangle (the worked example of docs/atencao.md, Q = K = [[1,0],[1,1],[0,1]],
//   V = [[2,0],[0,2],[2,2]], scores Q K^T / sqrt(2), causal mask): the weights and outputs
//   printed there, which NumPy reproduces: weights [[1,0,0],[0.330238,0.669762,0],[0.197776,0.401112,0.401112]],
//   outputs [[2,0],[0.660477,1.339523],[1.197776,1.604448]].
// - Chapter 08: softmax([2, 1, 0.1]) = [0.659001, 0.242433, 0.098566], cross-entropy against
//   class 0 = -log(0.659001) = 0.417030 (PyTorch F.cross_entropy, float64).
// - Chapter 11: [1,2,3,4] / sqrt(7.5 + 1e-5) = [0.365148, 0.730296, 1.095444, 1.460593] (NumPy).
// - Chapter 17: RoPE of [1, 0] with head_dim 2 at position p is [cos p, sin p].
// - Chapter 20: nanoGPT's schedule formula evaluated by hand (lr_max 1e-3, min_lr 1e-4,
//   warmup 10, decay_iters 100): lr(0) = 1e-3/11 = 0.000091, lr(55) = 0.00055.
// - Chapter 22: softmax([2, 1.5, 1, 0, -1]) = [0.463063, 0.280862, 0.170351, 0.062669,
//   0.023055]; top-k 2 renormalised = [0.622459, 0.377541]; top-p 0.8 keeps 3 tokens:
//   [0.506480, 0.307196, 0.186324] (NumPy).
// Other checks are exact by construction (hand derivatives of small polynomials, sums of
// known integers) and are explained next to each assertion.

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Run {
  int exit_code = -1;
  std::string out;
};

// Runs one tutorial once per test binary and remembers its output.
const Run& run_tutorial(const std::string& name) {
  static std::map<std::string, Run> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  Run r;
  const std::string path = std::string(GLASS_BINARY_DIR) + "/tutorials/" + name;
  if (!std::filesystem::exists(path)) {
    r.out = "missing program " + path + " (build the tutorials: cmake --build <dir>)";
    return cache.emplace(name, r).first->second;
  }
  FILE* pipe = popen((path + " 2>&1").c_str(), "r");
  if (!pipe) return cache.emplace(name, r).first->second;
  char buffer[4096];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) r.out.append(buffer, n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return cache.emplace(name, r).first->second;
}

// The program's name for chapter number `chapter` (found by globbing the sources).
std::vector<std::string> tutorial_names() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(GLASS_SOURCE_DIR "/tutorials")) {
    const std::string file = entry.path().filename().string();
    if (file.size() > 7 && std::isdigit(static_cast<unsigned char>(file[0])) &&
        std::isdigit(static_cast<unsigned char>(file[1])) && file[2] == '_' &&
        entry.path().extension() == ".cpp") {
      names.push_back(entry.path().stem().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string name_of(int chapter) {
  char prefix[8];
  std::snprintf(prefix, sizeof prefix, "%02d_", chapter);
  for (const std::string& name : tutorial_names()) {
    if (name.rfind(prefix, 0) == 0) return name;
  }
  return std::string(prefix) + "missing";
}

// The output of chapter `chapter`, after checking that the program ran and has the parts every
// chapter must have: its title, "Novo neste capítulo:", "Experimente:", and no NaN printed.
// (Each test runs in its own process under CTest, so each program runs once per test using it.)
const std::string& output_of(int chapter) {
  const Run& r = run_tutorial(name_of(chapter));
  EXPECT_EQ(r.exit_code, 0) << name_of(chapter) << " failed:\n" << r.out;
  char title[32];
  std::snprintf(title, sizeof title, "=== Capítulo %02d", chapter);
  EXPECT_NE(r.out.find(title), std::string::npos) << name_of(chapter);
  EXPECT_NE(r.out.find("Novo neste capítulo:"), std::string::npos) << name_of(chapter);
  EXPECT_NE(r.out.find("Experimente:"), std::string::npos) << name_of(chapter);
  for (const char* nan : {": nan", " nan ", " nan\n", "-nan"}) {
    EXPECT_EQ(r.out.find(nan), std::string::npos) << name_of(chapter) << " printed a NaN";
  }
  return r.out;
}

// The numbers on the line that starts with "<label>: " (they are printed space-separated).
std::vector<double> numbers_on(const std::string& out, const std::string& label) {
  std::istringstream lines(out);
  std::string line;
  const std::string prefix = label + ":";
  while (std::getline(lines, line)) {
    if (line.rfind(prefix, 0) != 0) continue;
    std::vector<double> values;
    const char* p = line.c_str() + prefix.size();
    while (*p) {
      char* end = nullptr;
      const double v = std::strtod(p, &end);
      if (end == p) break;
      values.push_back(v);
      p = end;
    }
    return values;
  }
  ADD_FAILURE() << "no line starting with \"" << prefix << "\" in:\n" << out;
  return {};
}

void expect_numbers(const std::string& out, const std::string& label,
                    const std::vector<double>& expected, double tolerance = 1.5e-6) {
  const std::vector<double> got = numbers_on(out, label);
  ASSERT_EQ(got.size(), expected.size()) << "line \"" << label << "\"";
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(got[i], expected[i], tolerance) << "line \"" << label << "\", value " << i;
  }
}

double number_on(const std::string& out, const std::string& label) {
  const std::vector<double> v = numbers_on(out, label);
  return v.empty() ? std::nan("") : v[0];
}

// Every test skips when the build has no tutorials (configured with GLASS_BUILD_TUTORIALS=OFF).
class Tutorials : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::is_directory(GLASS_BINARY_DIR "/tutorials")) {
      GTEST_SKIP() << "no " GLASS_BINARY_DIR "/tutorials (GLASS_BUILD_TUTORIALS=OFF)";
    }
  }
};

// ---- every chapter ---------------------------------------------------------------------------

TEST_F(Tutorials, ThereAreTwentyFourChapters) {
  std::vector<std::string> names = tutorial_names();
  // Chapter 30, data-parallel training, is checked in tutorial_mpi_test.cpp.
  names.erase(std::remove(names.begin(), names.end(), "30_dados_paralelos"), names.end());
  ASSERT_EQ(names.size(), 24u);
  for (int chapter = 1; chapter <= 24; ++chapter) {
    char prefix[8];
    std::snprintf(prefix, sizeof prefix, "%02d_", chapter);
    EXPECT_EQ(names[chapter - 1].rfind(prefix, 0), 0u) << names[chapter - 1];
  }
}

// ---- autograd chapters -----------------------------------------------------------------------

TEST_F(Tutorials, Ch01SumsOverAxes) {
  const std::string& out = output_of(1);
  expect_numbers(out, "soma no eixo 0", {5, 7, 9});  // [1,2,3] + [4,5,6]
  expect_numbers(out, "soma no eixo 1", {6, 15});
}

TEST_F(Tutorials, Ch02FunctionAndExactDerivative) {
  const std::string& out = output_of(2);
  expect_numbers(out, "f(1.5)", {0.375});         // 1.5^3 - 3
  expect_numbers(out, "derivada exata", {4.75});  // 3 * 1.5^2 - 2
}

TEST_F(Tutorials, Ch03TapeGradients) {
  const std::string& out = output_of(3);
  // L = (x*y + x)^2 at x = 2, y = 3: dL/dx = 2(xy + x)(y + 1) = 64, dL/dy = 2(xy + x) x = 32.
  expect_numbers(out, "grad x", {64});
  expect_numbers(out, "grad y", {32});
  EXPECT_EQ(number_on(out, "registros na fita"), 3);
}

TEST_F(Tutorials, Ch04ChainRuleAndAccumulation) {
  const std::string& out = output_of(4);
  expect_numbers(out, "grad x pela fita", {1.761594});  // 2 e^2 / (e^2 + 1)
  expect_numbers(out, "grad z", {7});                   // 2z + 3 at z = 2
  expect_numbers(out, "grad z sem zerar", {14});
  expect_numbers(out, "grad z depois de zero_grad", {7});
}

TEST_F(Tutorials, Ch05BroadcastGradientsSumBack) {
  const std::string& out = output_of(5);
  expect_numbers(out, "grad b", {5, 7, 9});
  expect_numbers(out, "grad c", {6, 15});
}

TEST_F(Tutorials, Ch06LinearGradients) {
  const std::string& out = output_of(6);
  expect_numbers(out, "y[1]", {4, 5, 6, 15});
  expect_numbers(out, "grad W[3]", {5, 7, 9});
  expect_numbers(out, "grad x[0]", {2, 2, 2});
}

TEST_F(Tutorials, Ch07EveryGradientCheckPasses) {
  const std::string& out = output_of(7);
  std::istringstream lines(out);
  std::string line;
  int checks = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("gradcheck ", 0) != 0) continue;
    ++checks;
    EXPECT_NE(line.find("-> PASS"), std::string::npos) << line;
  }
  EXPECT_GE(checks, 5);
  EXPECT_EQ(out.find("FAIL"), std::string::npos);
}

TEST_F(Tutorials, Ch08SoftmaxAndCrossEntropy) {
  const std::string& out = output_of(8);
  expect_numbers(out, "probabilidades", {0.659001, 0.242433, 0.098566});
  EXPECT_NEAR(number_on(out, "perda"), 0.417030, 1.5e-6);
  expect_numbers(out, "grad logits", {-0.340999, 0.242433, 0.098566});
  expect_numbers(out, "softmax de [1000, 999, 998]", {0.665241, 0.244728, 0.090031});
  EXPECT_NEAR(number_on(out, "perda uniforme com V = 3"), std::log(3.0), 1.5e-6);
}

TEST_F(Tutorials, Ch09Utf8CharacterTokens) {
  const std::string& out = output_of(9);
  // "Olá, Capitu!": 12 characters, 13 bytes ('á' is 0xC3 0xA1); 12 distinct characters + id 0.
  EXPECT_NE(out.find("bytes: 13   caracteres: 12"), std::string::npos);
  EXPECT_EQ(number_on(out, "tamanho do vocabulário"), 13);
  EXPECT_EQ(number_on(out, "desconhecidos"), 1);         // '?' in "Capitu?"
  EXPECT_EQ(number_on(out, "posição do byte inválido"), 2);          // "ab\xC3(": the cut sequence starts at 2
  // Dom Casmurro: 82 distinct characters (counted with Python) + the unknown id.
  EXPECT_NE(out.find("vocabulário: 83"), std::string::npos);
}

TEST_F(Tutorials, Ch10EmbeddingGradientCountsUses) {
  const std::string& out = output_of(10);
  // ids {{1,3,3},{0,4,1}}: row 0 once, row 1 twice, row 2 never, row 3 twice, row 4 once.
  expect_numbers(out, "grad tabela[0]", {1, 1, 1});
  expect_numbers(out, "grad tabela[1]", {2, 2, 2});
  expect_numbers(out, "grad tabela[2]", {0, 0, 0});
  expect_numbers(out, "grad tabela[3]", {2, 2, 2});
}

TEST_F(Tutorials, Ch11RmsNorm) {
  const std::string& out = output_of(11);
  expect_numbers(out, "y", {0.365148, 0.730296, 1.095444, 1.460593}, 3e-6);
  expect_numbers(out, "y de 10x", {0.365148, 0.730296, 1.095444, 1.460593}, 3e-6);
}

TEST_F(Tutorials, Ch12BigramLossFalls) {
  const std::string& out = output_of(12);
  const double first = number_on(out, "perda inicial");
  const double last = number_on(out, "perda final");
  const double floor = number_on(out, "perda mínima possível");
  // The table starts at zero, so the first loss is log(V) (the program prints log(V)).
  EXPECT_NEAR(first, number_on(out, "log(V)"), 1e-3);
  EXPECT_LT(last, first - 1.5);  // 150 steps of gradient descent
  EXPECT_GT(last, floor - 1e-3);  // never below the exact bigram optimum
}

// ---- attention chapters ----------------------------------------------------------------------

TEST_F(Tutorials, Ch14TheThreeStepsOfTheTokensAAndB) {
  const std::string& out = output_of(14);
  expect_numbers(out, "notas de a", {2, 0});
  expect_numbers(out, "pesos de a", {0.880797, 0.119203});
  expect_numbers(out, "saída de a", {8.807971, 1.192029}, 3e-6);
  expect_numbers(out, "notas escaladas de a", {1.414214, 0});
  expect_numbers(out, "pesos escalados de a", {0.804430, 0.195570});
  expect_numbers(out, "saída escalada de a", {8.044297, 1.955703}, 3e-6);
  // The causal mask: 'a' sees only itself, 'b' sees both.
  expect_numbers(out, "máscara[0]", {0, 1});
  expect_numbers(out, "pesos causais[0]", {1, 0});
  expect_numbers(out, "pesos causais[1]", {0.119203, 0.880797});
  expect_numbers(out, "saída causal[1]", {1.192029, 8.807971}, 3e-6);
}

TEST_F(Tutorials, Ch14TheTriangleOfTheAttentionPage) {
  const std::string& out = output_of(14);
  expect_numbers(out, "triângulo de pesos[0]", {1, 0, 0});
  expect_numbers(out, "triângulo de pesos[1]", {0.330238, 0.669762, 0});
  expect_numbers(out, "triângulo de pesos[2]", {0.197776, 0.401112, 0.401112});
  expect_numbers(out, "triângulo de saídas[0]", {2, 0});
  expect_numbers(out, "triângulo de saídas[1]", {0.660477, 1.339523});
  expect_numbers(out, "triângulo de saídas[2]", {1.197776, 1.604448});
}

TEST_F(Tutorials, Ch15TheCacheGivesTheSameRows) {
  const std::string& out = output_of(15);
  expect_numbers(out, "pesos sem cache[1]", {0.330238, 0.669762, 0});
  expect_numbers(out, "saída sem cache[2]", {1.197776, 1.604448});
  expect_numbers(out, "máscara (1, 3, 2)[0]", {0, 0, 0});
  expect_numbers(out, "pesos da posição 2 com cache", {0.197776, 0.401112, 0.401112});
  expect_numbers(out, "saída da posição 2 com cache", {1.197776, 1.604448});
  expect_numbers(out, "saída das posições 0 e 1[1]", {0.660477, 1.339523});
  expect_numbers(out, "pesos com start errado", {1, 0, 0});
  expect_numbers(out, "máscara (2, 3, 1)[0]", {0, 0, 1});
  expect_numbers(out, "pesos das posições 1 e 2[0]", {0.330238, 0.669762, 0});
  expect_numbers(out, "pesos das posições 1 e 2[1]", {0.197776, 0.401112, 0.401112});
}

TEST_F(Tutorials, Ch17RopeRotatesAndKeepsRelativePosition) {
  const std::string& out = output_of(17);
  expect_numbers(out, "posição 1", {0.540302, 0.841471});
  expect_numbers(out, "posição 2", {-0.416147, 0.909297});
  // Every q·k at distance 2 is the same number.
  std::istringstream lines(out);
  std::string line;
  std::vector<double> distance2;
  while (std::getline(lines, line)) {
    if (line.find("(distância 2)") == std::string::npos) continue;
    distance2.push_back(std::strtod(line.c_str() + line.rfind("= ") + 2, nullptr));
  }
  ASSERT_EQ(distance2.size(), 3u);
  EXPECT_NEAR(distance2[1], distance2[0], 1e-4);
  EXPECT_NEAR(distance2[2], distance2[0], 1e-4);
  const std::vector<double> a = numbers_on(out, "rope(seq)[3]");
  const std::vector<double> b = numbers_on(out, "rope(seq[3], start = 3)");
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(b.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(a[i], b[i], 1e-5);
}

TEST_F(Tutorials, Ch13LinearIsXWTransposed) {
  EXPECT_NEAR(number_on(output_of(13), "diferença máxima entre wq.forward(x) e linear(x, Wq)"), 0, 1e-6);
}

TEST_F(Tutorials, Ch16SharedKvHeadGetsSummedGradient) {
  // Query head h carries weight h+1 and uses KV head h/2: KV head 0 gets 1+2, KV head 1 gets 3+4.
  const std::string& out = output_of(16);
  expect_numbers(out, "grad K (cabeça K/V 0, depois 1)[0]", {3, 3, 3, 3, 3, 3});
  expect_numbers(out, "grad K (cabeça K/V 0, depois 1)[1]", {7, 7, 7, 7, 7, 7});
}

TEST_F(Tutorials, Ch18SwiGLUMatchesItsEquation) {
  const std::string& out = output_of(18);
  // silu(z) = z / (1 + e^-z), evaluated with NumPy.
  expect_numbers(out, "silu(z)", {-0.238406, -0.268941, 0, 0.731059, 1.761594});
  EXPECT_NEAR(number_on(out, "diferença máxima"), 0, 1e-6);
}

TEST_F(Tutorials, Ch19BlockAndParameterCount) {
  const std::string& out = output_of(19);
  EXPECT_NEAR(number_on(out, "diferença máxima entre bloco.forward e a conta à mão"), 0, 1e-6);
  // nn/config.hpp: the default model has 742,784 parameters with a 65-character vocabulary.
  EXPECT_EQ(number_on(out, "parâmetros (vocabulário 65)"), 742784);
  EXPECT_EQ(number_on(out, "conferência somando as formas"), 742784);
}

// ---- training chapters -----------------------------------------------------------------------

TEST_F(Tutorials, Ch20AdamWAndSchedule) {
  const std::string& out = output_of(20);
  EXPECT_NEAR(number_on(out, "lr(  0)"), 0.000091, 1e-6);
  EXPECT_NEAR(number_on(out, "lr( 10)"), 0.001, 1e-6);
  EXPECT_NEAR(number_on(out, "lr( 55)"), 0.00055, 1e-6);
  EXPECT_NEAR(number_on(out, "lr(100)"), 0.0001, 1e-6);
  EXPECT_NEAR(number_on(out, "lr(150)"), 0.0001, 1e-6);
}

TEST_F(Tutorials, Ch21DecoderLossFalls) {
  const std::string& out = output_of(21);
  const double first = number_on(out, "perda inicial");
  const double last = number_on(out, "perda final (média dos últimos 20 passos)");
  EXPECT_LT(last, first - 1.0) << out;
  const std::vector<double> val = numbers_on(out, "validação antes");
  ASSERT_EQ(val.size(), 1u);
  EXPECT_LT(number_on(out, "validação final"), val[0] - 0.8);
}

TEST_F(Tutorials, Ch22SamplingFilters) {
  const std::string& out = output_of(22);
  expect_numbers(out, "temperatura 1", {0.463063, 0.280862, 0.170351, 0.062669, 0.023055});
  expect_numbers(out, "temperatura 0", {1, 0, 0, 0, 0});
  expect_numbers(out, "top-k 2", {0.622459, 0.377541, 0, 0, 0});
  expect_numbers(out, "top-p 0.8", {0.506480, 0.307196, 0.186324, 0, 0});
  // 10000 draws: each frequency within 0.02 of its probability (about 4 standard deviations).
  expect_numbers(out, "frequências", {0.463063, 0.280862, 0.170351, 0.062669, 0.023055}, 0.02);
}

TEST_F(Tutorials, Ch23TheCacheGivesTheSameText) {
  const std::string& out = output_of(23);
  EXPECT_LT(number_on(out, "diferença máxima nos logits"), 1e-4);
  EXPECT_LT(number_on(out, "diferença máxima entre os caminhos (rápido e referência)"), 1e-4);
  EXPECT_NE(out.find("textos iguais: sim"), std::string::npos);
}

TEST_F(Tutorials, Ch24TracerSnapshotsAreConsistent) {
  const std::string& out = output_of(24);
  EXPECT_LT(number_on(out, "maior desvio de 1 na soma de uma linha"), 1e-5);
  EXPECT_EQ(number_on(out, "maior peso acima da diagonal"), 0);
  EXPECT_LT(number_on(out, "diferença máxima"), 1e-6);
  EXPECT_NEAR(number_on(out, "soma das probabilidades de saída"), 1, 1e-5);
}

}  // namespace
