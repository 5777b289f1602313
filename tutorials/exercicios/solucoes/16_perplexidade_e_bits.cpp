// Solução do exercício 16 — Perplexidade e bits por caractere (parte 2: capítulos 10 a 13).
//
// Para ir além: docs/perplexidade.md põe as mesmas medidas num treino do GlassLLM (ln 66 do
// modelo uniforme do tinyshakespeare, a perplexidade 5.364 depois de 2000 passos).
//
// A entropia cruzada do capítulo 09 é medida em nats (logaritmo natural). Dois jeitos de
// dizê-la que você vai encontrar em artigos:
//   - a perplexidade: o número de caracteres igualmente prováveis entre os quais um modelo
//     teria a mesma perda (um modelo que sorteia entre 4 letras por igual tem perplexidade 4);
//   - bits por caractere: a mesma perda com o logaritmo na base 2.
// Deduza as duas a partir da perda L (em nats) e confira com o modelo uniforme de Dom
// Casmurro (V = 78, a perda log(V) do capítulo 12).
#include <cmath>

#include "exercicios/conferir.hpp"

struct Medidas {
  double perplexidade = 0, bits_por_caractere = 0;
};

// A perda média L, em nats, nas duas outras medidas.
static Medidas medidas(double L) {
  Medidas r;
  // --- a sua parte ---
  // L = média de -ln p. Se todo caractere tivesse probabilidade 1/k, L = ln k: k = e^L.
  r.perplexidade = std::exp(L);
  // log2 p = ln p / ln 2: a mesma média, dividida por ln 2.
  r.bits_por_caractere = L / std::log(2.0);
  // --- fim ---
  return r;
}

int main() {
  exercicio::titulo(16, "Perplexidade e bits por caractere");
  // O modelo uniforme com V = 78: L = ln 78 = 4.356709; perplexidade 78; log2(78) = 6.285402
  // bits. Uma perda de 2 nats: e² = 7.389056; 2 / ln 2 = 2.885390 bits (Python math).
  const Medidas uniforme = medidas(std::log(78.0)), duas = medidas(2.0);
  const bool certo = exercicio::conferir("resposta",
                                         {uniforme.perplexidade, uniforme.bits_por_caractere,
                                          duas.perplexidade, duas.bits_por_caractere},
                                         {78, 6.285402, 7.389056, 2.885390}, 2e-6);
  return exercicio::resultado(certo);
}
