#pragma once
// Small printing helpers shared by the tutorial programs (their output is in Portuguese).
//
// Numbers are printed with a fixed number of decimals and a decimal POINT (not a comma), on
// lines of the form "rotulo: 0.880797 0.119203", so that a learner can paste them into Python
// and tests/cli/tutorials_test.cpp can read them back.

#include <cstdio>
#include <initializer_list>
#include <string>
#include <vector>

#include "autograd/tensor.hpp"

namespace tut {

using glass::Array;
using glass::Scalar;

/// The chapter's title line.
inline void capitulo(int numero, const char* titulo) {
  std::printf("=== Capítulo %02d — %s ===\n\n", numero, titulo);
}

/// A section title inside a chapter.
inline void secao(const char* titulo) { std::printf("\n--- %s ---\n", titulo); }

/// A paragraph of explanation (printed as is).
inline void texto(const char* paragrafo) { std::printf("%s\n", paragrafo); }

/// What this chapter adds to the previous one.
inline void novo(const char* o_que) { std::printf("Novo neste capítulo: %s\n\n", o_que); }

/// Suggestions of what to change and run again.
inline void experimente(std::initializer_list<const char*> ideias) {
  std::printf("\nExperimente:\n");
  for (const char* ideia : ideias) std::printf("  - %s\n", ideia);
}

/// The heading of the answers to the chapter's "Experimente", which the program computes after
/// the list (read the suggestion, predict, then compare).
inline void respostas() {
  std::printf("\nRespostas do Experimente (calculadas por este programa; preveja antes de ler):\n");
}

/// Numbers separated by spaces, `casas` decimals each.
inline std::string numeros(const Scalar* p, std::size_t n, int casas = 6) {
  std::string s;
  char buf[64];
  for (std::size_t i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof buf, "%s%.*f", i ? " " : "", casas, static_cast<double>(p[i]));
    s += buf;
  }
  return s;
}

/// "rotulo: v0 v1 ..." with every element of `a` in row-major order.
inline void linha(const std::string& rotulo, const Array& a, int casas = 6) {
  std::printf("%s: %s\n", rotulo.c_str(), numeros(a.data(), a.size(), casas).c_str());
}

/// "rotulo: v0 v1 ..." for plain numbers.
inline void linha(const std::string& rotulo, const std::vector<double>& v, int casas = 6) {
  std::printf("%s:", rotulo.c_str());
  for (double x : v) std::printf(" %.*f", casas, x);
  std::printf("\n");
}

/// A matrix (the last axis is a row): one line "rotulo[i]: ..." per row.
inline void matriz(const std::string& rotulo, const Array& a, int casas = 6) {
  const std::size_t cols = a.dimension() == 0 ? 1 : a.shape().back();
  const std::size_t rows = cols == 0 ? 0 : a.size() / cols;
  for (std::size_t i = 0; i < rows; ++i) {
    std::printf("%s[%zu]: %s\n", rotulo.c_str(), i,
                numeros(a.data() + i * cols, cols, casas).c_str());
  }
}

/// "rotulo: (2, 3)".
inline void forma(const std::string& rotulo, const Array& a) {
  std::printf("%s: %s\n", rotulo.c_str(), glass::shape_str(glass::shape_of(a)).c_str());
}

}  // namespace tut
