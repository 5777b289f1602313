// Uma resposta ERRADA do exercício 01 — O gradiente de uma camada linear, à mão: esquece o 2 da
// derivada do quadrado (G = r em vez de G = 2r). O exercício tem de reprová-la
// (tests/cli/tutorials_test.cpp confere).
//
// L = soma((x Wᵀ - y)²). Escreva dL/dW com as ops (matmul, transpose, linear, ...), sem
// backward, e compare com o que a fita calcula. Dica: com r = x Wᵀ - y, dL/dr = 2r, e o
// capítulo 06 diz como um gradiente G da saída de linear volta para W.
#include "autograd/ops.hpp"
#include "exercicios/conferir.hpp"

using namespace glass;

// dL/dW para L = soma((x Wᵀ - y)²); x (n, k), W (m, k), y (n, m) -> (m, k).
static Tensor grad_W_a_mao(const Tensor& x, const Tensor& W, const Tensor& y) {
  // --- a sua parte ---
  Tensor r = linear(x, W) - y;           // (n, m)
  return matmul(transpose(r, 0, 1), x);  // o erro: G = r, sem o 2 de d(r²)/dr
  // --- fim ---
}

int main() {
  exercicio::titulo(1, "O gradiente de uma camada linear, à mão");
  Tensor x = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor W = Tensor::from_vector({1, 0, -1, 0.5f, 1, 0}, {2, 3}, true);
  Tensor y = Tensor::from_vector({0, 1, 2, 3}, {2, 2});

  Tensor L = sum(pow(linear(x, W) - y, 2));
  L.backward();  // a referência: a fita
  const std::vector<double> pela_fita = exercicio::valores(W.grad());

  Tensor a_mao;
  {
    NoGradGuard sem_fita;
    a_mao = grad_W_a_mao(x, W, y);
  }
  const bool certo = exercicio::conferir("resposta", exercicio::valores(a_mao.value()), pela_fita);
  return exercicio::resultado(certo);
}
