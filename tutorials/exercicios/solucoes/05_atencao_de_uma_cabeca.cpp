// Solução do exercício 05 — A atenção de uma cabeça (parte 3: capítulos 14 a 19).
//
// Escreva a atenção causal com escala: notas = Q Kᵀ / √d, máscara causal com -∞, softmax,
// mistura com V (capítulo 15). Os números de referência são o triângulo de docs/atencao.md.
#include <cmath>
#include <limits>

#include "autograd/ops.hpp"
#include "exercicios/conferir.hpp"

using namespace glass;

// Q, K, V (n, d) -> saída (n, d).
static Tensor atencao(const Tensor& Q, const Tensor& K, const Tensor& V) {
  // --- a sua parte ---
  const std::size_t n = Q.shape()[0], d = Q.shape()[1];
  Tensor notas = matmul(Q, transpose(K, 0, 1)) / std::sqrt(Scalar(d));
  Tensor pesos = softmax(masked_fill(notas, causal_mask(n, n), -std::numeric_limits<Scalar>::infinity()));
  return matmul(pesos, V);
  // --- fim ---
}

int main() {
  exercicio::titulo(5, "A atenção de uma cabeça", "14 a 19");
  Tensor Q = Tensor::from_vector({1, 0, 1, 1, 0, 1}, {3, 2});
  Tensor V = Tensor::from_vector({2, 0, 0, 2, 2, 2}, {3, 2});
  const Tensor saida = atencao(Q, Q, V);
  // O triângulo de docs/atencao.md (NumPy, double).
  const bool certo = exercicio::conferir("resposta", exercicio::valores(saida.value()),
                                         {2, 0, 0.660477, 1.339523, 1.197776, 1.604448});
  return exercicio::resultado(certo);
}
