#pragma once
// The chapters each exercise comes after: the one table the exercises print their title from
// (exercicio::titulo). tests/cli/tutorials_references_test.cpp checks it against the exercise
// table of tutorials/README.md and that every chapter it names exists.

#include <cstddef>

namespace exercicio {

struct Capitulos {
  int exercicio;
  const char* capitulos;  ///< "NN a MM" or "NN"
};

inline constexpr Capitulos kCapitulos[] = {
    {1, "01 a 09"},  {2, "01 a 09"},  {3, "10 a 13"},  {4, "10 a 13"},  {5, "14 a 20"},
    {6, "14 a 20"},  {7, "21 a 24"},  {8, "21 a 24"},  {9, "25 a 30"},  {10, "25 a 30"},
    {11, "01 a 09"}, {12, "21 a 24"}, {13, "25 a 31"}, {14, "25 a 31"}, {15, "25 a 31"},
    {16, "10 a 13"}, {17, "32"},      {18, "32"},      {19, "33 a 36"}, {20, "33 a 36"},
    {21, "38"},      {22, "38"},      {23, "39"},      {24, "40"},      {25, "14 a 20"},
    {26, "41"},      {27, "42"},
};

/// The chapters exercise `numero` comes after, or "?" for a number the table lacks.
inline const char* capitulos_do_exercicio(int numero) {
  for (const Capitulos& c : kCapitulos) {
    if (c.exercicio == numero) return c.capitulos;
  }
  return "?";
}

}  // namespace exercicio
