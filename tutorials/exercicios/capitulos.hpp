#pragma once
// The chapters each exercise comes after, and what kind of work it asks for: the tables the
// exercises print their title from (exercicio::titulo). tests/cli/tutorials_references_test.cpp
// checks the ranges against the exercise table of tutorials/README.md and that every chapter
// they name exists, and that every exercise has a kind (at least 10 derive, predict or debug).

#include <cstddef>

namespace exercicio {

struct Capitulos {
  int exercicio;
  const char* capitulos;  ///< "NN a MM" or "NN"
};

inline constexpr Capitulos kCapitulos[] = {
    {1, "01 a 09"},  {2, "01 a 09"},  {3, "10 a 13"},  {4, "10 a 13"},  {5, "14 a 20"},
    {6, "14 a 20"},  {7, "21 a 24"},  {8, "21 a 24"},  {9, "25 a 30"},  {10, "25 a 30"},
    {11, "01 a 09"}, {12, "21 a 24"}, {13, "25 a 30"}, {14, "25 a 30"}, {15, "25 a 30"},
    {16, "10 a 13"}, {17, "31"},      {18, "31"},      {19, "32 a 35"}, {20, "32 a 35"},
    {21, "37"},      {22, "37"},      {23, "38"},      {24, "39"},      {25, "14 a 20"},
    {26, "40"},      {27, "41"},      {28, "42"},      {29, "43"},
};

/// What an exercise asks for.
enum class Tipo {
  deduzir,      ///< derive on paper (a gradient, a count, a conversion), then write it down
  prever,       ///< predict a number before the program measures it
  depurar,      ///< find and fix the bug in code that looks right
  implementar,  ///< write a procedure the chapter describes in words
  transcrever,  ///< turn a formula the chapter gives into code
};

struct TipoDoExercicio {
  int exercicio;
  Tipo tipo;
};

inline constexpr TipoDoExercicio kTipos[] = {
    {1, Tipo::deduzir},      {2, Tipo::implementar},  {3, Tipo::implementar},
    {4, Tipo::implementar},  {5, Tipo::transcrever},  {6, Tipo::transcrever},
    {7, Tipo::deduzir},      {8, Tipo::transcrever},  {9, Tipo::transcrever},
    {10, Tipo::implementar}, {11, Tipo::deduzir},     {12, Tipo::depurar},
    {13, Tipo::transcrever}, {14, Tipo::transcrever}, {15, Tipo::depurar},
    {16, Tipo::deduzir},     {17, Tipo::implementar}, {18, Tipo::prever},
    {19, Tipo::transcrever}, {20, Tipo::depurar},     {21, Tipo::deduzir},
    {22, Tipo::depurar},     {23, Tipo::deduzir},     {24, Tipo::prever},
    {25, Tipo::deduzir},     {26, Tipo::transcrever}, {27, Tipo::implementar},
    {28, Tipo::deduzir},     {29, Tipo::deduzir},
};

/// The kind of exercise `numero` in words ("deduzir", ...), or "?" for a number the table lacks.
inline const char* tipo_do_exercicio(int numero) {
  for (const TipoDoExercicio& t : kTipos) {
    if (t.exercicio != numero) continue;
    switch (t.tipo) {
      case Tipo::deduzir:
        return "deduzir";
      case Tipo::prever:
        return "prever";
      case Tipo::depurar:
        return "depurar";
      case Tipo::implementar:
        return "implementar";
      case Tipo::transcrever:
        return "transcrever";
    }
  }
  return "?";
}

/// The chapters exercise `numero` comes after, or "?" for a number the table lacks.
inline const char* capitulos_do_exercicio(int numero) {
  for (const Capitulos& c : kCapitulos) {
    if (c.exercicio == numero) return c.capitulos;
  }
  return "?";
}

}  // namespace exercicio
