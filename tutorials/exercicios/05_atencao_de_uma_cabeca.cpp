// Exercício 05 — A atenção de uma cabeça (parte 3: capítulos 14 a 20).
//
// Escreva a atenção causal com escala: notas = Q Kᵀ / √d, máscara causal com -∞, softmax,
// mistura com V (capítulo 15). Os números de referência são o triângulo de docs/atencao.md
// (onde Q = K) e um segundo caso com K ≠ Q, feito à mão no main().
#include <cmath>
#include <limits>

#include "autograd/ops.hpp"
#include "exercicios/conferir.hpp"

using namespace glass;

// Q, K, V (n, d) -> saída (n, d).
static Tensor atencao(const Tensor& Q, const Tensor& K, const Tensor& V) {
  // --- a sua parte ---
  // TODO: escreva aqui. (Uma solução: exercicios/solucoes/05_atencao_de_uma_cabeca.cpp.)
  return Tensor::zeros(V.shape());
  // --- fim ---
}

int main() {
  exercicio::titulo(5, "A atenção de uma cabeça");
  Tensor Q = Tensor::from_vector({1, 0, 1, 1, 0, 1}, {3, 2});
  Tensor V = Tensor::from_vector({2, 0, 0, 2, 2, 2}, {3, 2});
  const Tensor saida = atencao(Q, Q, V);
  // O triângulo de docs/atencao.md (NumPy, double).
  bool certo = exercicio::conferir("resposta", exercicio::valores(saida.value()),
                                   {2, 0, 0.660477, 1.339523, 1.197776, 1.604448});
  // Agora K ≠ Q: quem pergunta (Q) e quem responde (K) não são mais trocáveis.
  // K = [[0,1],[2,0],[1,1]]. À mão, notas Q Kᵀ / √2 nas posições permitidas:
  //   linha 1, q = [1,1]: [1, 2] / √2 -> pesos [0.330238, 0.669762]
  //   linha 2, q = [0,1]: [1, 0, 1] / √2 -> pesos [0.401112, 0.197776, 0.401112]
  // saída[2] = 0.401112·[2,0] + 0.197776·[0,2] + 0.401112·[2,2] = [1.604448, 1.197776].
  // (Com Q e K trocados, a linha 1 seria k1 = [2,0] contra q0, q1: notas iguais, saída [1, 1].)
  Tensor K = Tensor::from_vector({0, 1, 2, 0, 1, 1}, {3, 2});
  const Tensor saida_qk = atencao(Q, K, V);
  certo = exercicio::conferir("resposta com K ≠ Q", exercicio::valores(saida_qk.value()),
                              {2, 0, 0.660477, 1.339523, 1.604448, 1.197776}) &&
          certo;
  return exercicio::resultado(certo);
}
