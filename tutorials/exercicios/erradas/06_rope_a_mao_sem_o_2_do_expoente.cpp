// Uma resposta ERRADA do exercício 06 — O RoPE à mão: o ângulo p · base^(-i/D), sem o 2 do expoente
// (as frequências do par 1 em diante saem erradas). O exercício tem de reprová-la
// (tests/cli/tutorials_test.cpp confere).
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
  const std::size_t D = v.size();
  for (std::size_t i = 0; i < D / 2; ++i) {
    const double angulo = p * std::pow(base, -double(i) / double(D));  // o erro: sem o 2
    y[2 * i] = v[2 * i] * std::cos(angulo) - v[2 * i + 1] * std::sin(angulo);
    y[2 * i + 1] = v[2 * i] * std::sin(angulo) + v[2 * i + 1] * std::cos(angulo);
  }
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
