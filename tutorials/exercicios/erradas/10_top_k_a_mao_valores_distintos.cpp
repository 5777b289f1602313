// Uma resposta ERRADA do exercício 10 — O top-k à mão: corta no k-ésimo valor DISTINTO. Com empates
// só no k-ésimo não se vê; com um empate acima dele, fica um logit a mais. O exercício tem de
// reprová-la (tests/cli/tutorials_test.cpp confere).
//
// Com os logits do capítulo 28, fique só com os k maiores (os outros viram probabilidade 0)
// e faça o softmax deles. Compare com next_token_probs da biblioteca. Cuidado: os logits não
// vêm ordenados, e quem empata com o k-ésimo maior também fica (como na biblioteca).
#include <algorithm>
#include <cmath>

#include "exercicios/conferir.hpp"
#include "sample/sampler.hpp"

using namespace glass;

static std::vector<double> top_k(const std::vector<double>& logits, std::size_t k) {
  std::vector<double> p(logits.size(), 0.0);
  // --- a sua parte ---
  std::vector<double> ordenados = logits;
  std::sort(ordenados.rbegin(), ordenados.rend());
  // o erro: os valores distintos, e o corte no k-ésimo deles
  ordenados.erase(std::unique(ordenados.begin(), ordenados.end()), ordenados.end());
  const double corte = ordenados[std::min(k, ordenados.size()) - 1];
  const double maximo = ordenados[0];
  double soma = 0;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    if (logits[i] >= corte) p[i] = std::exp(logits[i] - maximo);
    soma += p[i];
  }
  for (double& pi : p) pi /= soma;
  // --- fim ---
  return p;
}

int main() {
  exercicio::titulo(10, "O top-k à mão");
  const std::vector<double> logits = {2.0, 1.5, 1.0, 0.0, -1.0};
  SamplingOptions o;
  o.temperature = 1;
  o.top_k = 2;
  tut::linha("next_token_probs, top-k 2", next_token_probs(logits, o));
  // softmax([2, 1.5]) = [0.622459, 0.377541] (Python math, double).
  bool certo =
      exercicio::conferir("resposta", top_k(logits, 2), {0.622459, 0.377541, 0, 0, 0}, 2e-6);
  // Fora de ordem e com empate: o 2º maior é 1.5, e há dois 1.5, então ficam três logits,
  // 2, 1.5 e 1.5: softmax = [1, e^-0.5, e^-0.5] / (1 + 2 e^-0.5) = [0.451863, 0.274069, 0.274069]
  // (Python math, double).
  const std::vector<double> embaralhados = {1.0, 2.0, -1.0, 1.5, 1.5};
  tut::linha("next_token_probs, top-k 2, fora de ordem", next_token_probs(embaralhados, o));
  certo = exercicio::conferir("resposta fora de ordem", top_k(embaralhados, 2),
                              {0, 0.451863, 0, 0.274069, 0.274069}, 2e-6) &&
          certo;
  // Um empate ACIMA do k-ésimo: com k = 2, os dois 2.0 já são os 2 maiores, e o 1.0 fica de
  // fora: [0, 0.5, 0, 0.5, 0].
  const std::vector<double> empate_no_topo = {0.5, 2.0, 1.0, 2.0, -1.0};
  tut::linha("next_token_probs, top-k 2, empate no topo", next_token_probs(empate_no_topo, o));
  certo = exercicio::conferir("resposta com empate no topo", top_k(empate_no_topo, 2),
                              {0, 0.5, 0, 0.5, 0}, 2e-6) &&
          certo;
  return exercicio::resultado(certo);
}
