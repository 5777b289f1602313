// Exercício 06 — O RoPE à mão (parte 3: capítulos 14 a 20).
//
// Gire o vetor v (D = 4) da posição p como o capítulo 17 explica: o par i, (v[2i], v[2i+1]),
// gira pelo ângulo p · base^(-2i/D):
//   y[2i]   = v[2i] cos - v[2i+1] sin
//   y[2i+1] = v[2i] sin + v[2i+1] cos
// e compare com rope() da biblioteca.
#include <cmath>

#include "autograd/ops.hpp"
#include "exercicios/conferir.hpp"

using namespace glass;

static std::vector<double> girar(const std::vector<double>& v, double p, double base) {
  std::vector<double> y(v.size());
  // --- a sua parte ---
  // TODO: escreva aqui. (Uma solução: exercicios/solucoes/06_rope_a_mao.cpp.)
  // --- fim ---
  return y;
}

int main() {
  exercicio::titulo(6, "O RoPE à mão");
  const std::vector<double> v = {1, 2, 3, 4};
  const Tensor pela_biblioteca = rope(Tensor::from_vector({1, 2, 3, 4}, {1, 1, 1, 4}), 3);
  tut::linha("rope() na posição 3", exercicio::valores(pela_biblioteca.value()));
  const bool certo = exercicio::conferir("resposta", girar(v, 3, 10000),
                                         exercicio::valores(pela_biblioteca.value()));
  return exercicio::resultado(certo);
}
