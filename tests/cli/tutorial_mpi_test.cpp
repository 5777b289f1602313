// The chapter on data-parallel training (tutorials/NN_dados_paralelos.cpp): its numbers.
//
// Reference values (PyTorch 1.13, float64, /usr/bin/python3): W = [[0.5,-0.2],[0.1,0.3],[-0.4,0.6]],
// x = [[1,2],[0.5,-1],[-1.5,0.5],[2,1]], y = [0,2,1,1], loss = F.cross_entropy(x[a:b] @ W.T, y[a:b]):
//   whole batch: loss 1.452031, dW = [[0.067678,-0.404511],[0.083193,-0.136241],[-0.150871,0.540751]]
//   rows 0-1:    loss 1.702205, dW = [[-0.256400,-1.073624],[0.258020,0.237544],[-0.001620,0.836080]]
//   rows 2-3:    loss 1.201856, dW = [[0.391757,0.264603],[-0.091634,-0.510026],[-0.300122,0.245423]]
//   rows 0 | 1-3: max |(g1 + g3)/2 - dW| = 0.393971; max |(g1 + 3 g3)/4 - dW| = 0 (5.6e-17).

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "test_paths.hpp"

namespace {

/// The chapter's program (its number may change; its name does not) and its output.
std::string chapter_output(int* exit_code) {
  std::string program;
  for (const auto& entry :
       std::filesystem::directory_iterator(glass_test::source_dir("/tutorials"))) {
    const std::string stem = entry.path().stem().string();
    if (entry.path().extension() == ".cpp" && stem.size() > 3 &&
        stem.substr(2) == "_dados_paralelos")
      program = std::string(glass_test::binary_dir()) + "/tutorials/" + stem;
  }
  std::string out;
  *exit_code = -1;
  if (program.empty()) return "no tutorials/NN_dados_paralelos.cpp";
  FILE* pipe = popen((program + " 2>&1").c_str(), "r");
  if (!pipe) return "cannot run " + program;
  char buffer[4096];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  const int status = pclose(pipe);
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

/// The numbers after "<label>:" on the first line that starts with it.
std::vector<double> numbers_on(const std::string& out, const std::string& label) {
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(label + ":", 0) != 0) continue;
    std::vector<double> values;
    const char* p = line.c_str() + label.size() + 1;
    for (char* end = nullptr;; p = end) {
      const double v = std::strtod(p, &end);
      if (end == p) break;
      values.push_back(v);
    }
    return values;
  }
  ADD_FAILURE() << "no line starting with \"" << label << ":\" in:\n" << out;
  return {};
}

void expect_numbers(const std::string& out, const std::string& label,
                    const std::vector<double>& want, double tolerance = 2e-6) {
  const std::vector<double> got = numbers_on(out, label);
  ASSERT_EQ(got.size(), want.size()) << label;
  for (std::size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tolerance) << label << " [" << i << "]";
}

}  // namespace

TEST(TutorialDataParallel, TheMeanOfTheHalfBatchGradientsIsTheBatchGradient) {
  if (!std::filesystem::is_directory(glass_test::binary_dir("/tutorials")))
    GTEST_SKIP() << "no " + glass_test::binary_dir("/tutorials (GLASS_BUILD_TUTORIALS=OFF)");
  int code = 0;
  const std::string out = chapter_output(&code);
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("Novo neste capítulo:"), std::string::npos);
  EXPECT_NE(out.find("Experimente:"), std::string::npos);
  // Section 1, against PyTorch (above).
  expect_numbers(out, "perda do lote", {1.452031});
  expect_numbers(out, "perdas das metades", {1.702205, 1.201856});
  expect_numbers(out, "média das perdas", {1.452031});
  const std::vector<std::vector<double>> whole = {
      {0.067678, -0.404511}, {0.083193, -0.136241}, {-0.150871, 0.540751}};
  const std::vector<std::vector<double>> half0 = {
      {-0.256400, -1.073624}, {0.258020, 0.237544}, {-0.001620, 0.836080}};
  const std::vector<std::vector<double>> half1 = {
      {0.391757, 0.264603}, {-0.091634, -0.510026}, {-0.300122, 0.245423}};
  for (int i = 0; i < 3; ++i) {
    const std::string row = "[" + std::to_string(i) + "]";
    expect_numbers(out, "dW do lote" + row, whole[i]);
    expect_numbers(out, "dW metade 0" + row, half0[i]);
    expect_numbers(out, "dW metade 1" + row, half1[i]);
    expect_numbers(out, "dW média das metades" + row, whole[i]);
  }
  EXPECT_LT(numbers_on(out, "maior diferença |média - lote|").at(0), 1e-6);
  // Section 2: the plain mean of unequal pieces is wrong, the weighted one right.
  expect_numbers(out, "maior diferença, média simples (g1 + g3) / 2", {0.393971});
  expect_numbers(out, "maior diferença, média pesada (1 g1 + 3 g3) / 4", {0.0});
  // Section 3: the decoder's gradients agree to float rounding, and so do the losses.
  const std::vector<double> losses = numbers_on(out, "perda do lote, média das metades");
  ASSERT_EQ(losses.size(), 2u);
  EXPECT_NEAR(losses[0], losses[1], 1e-5);
  EXPECT_LT(numbers_on(out, "maior diferença relativa dos gradientes").at(0), 1e-4);
}
