#pragma once
// Helpers shared by the exercises (tutorials/exercicios/): each exercise computes an answer in a
// function with a TODO, prints it on a line "resposta: ..." and compares it with a reference
// computed by the library (or written as a literal with its source). The program ends with
// "CERTO" and exit code 0, or "AINDA NÃO" and exit code 1, so the learner (and
// tests/cli/tutorials_test.cpp) can tell a finished exercise from an unfinished one.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "common.hpp"
#include "exercicios/capitulos.hpp"

namespace exercicio {

/// The exercise's title line, with the chapters it comes after and its kind
/// (exercicios/capitulos.hpp).
inline void titulo(int numero, const char* texto) {
  std::printf("=== Exercício %02d — %s ===\n(depois dos capítulos %s; tipo: %s)\n\n", numero, texto,
              capitulos_do_exercicio(numero), tipo_do_exercicio(numero));
}

/// Prints "rotulo: numbers" for the learner's answer and says whether it matches `esperado`
/// element by element within `tolerancia`. Returns true when it does.
inline bool conferir(const std::string& rotulo, const std::vector<double>& resposta,
                     const std::vector<double>& esperado, double tolerancia = 1e-5) {
  tut::linha(rotulo, resposta);
  bool igual = resposta.size() == esperado.size();
  for (std::size_t i = 0; igual && i < esperado.size(); ++i) {
    igual = std::fabs(resposta[i] - esperado[i]) <= tolerancia;  // false for nan, too
  }
  if (!igual) tut::linha("  esperado", esperado);
  return igual;
}

/// The elements of an Array as doubles.
inline std::vector<double> valores(const glass::Array& a) {
  return std::vector<double>(a.begin(), a.end());
}

/// The last line and the exit code: 0 when every check passed.
inline int resultado(bool certo) {
  std::printf("\n%s\n", certo ? "CERTO" : "AINDA NÃO: complete o TODO e rode de novo.");
  return certo ? 0 : 1;
}

}  // namespace exercicio
