// Uma resposta ERRADA do exercício 21 — A volta de um neurônio sigmoide: só a derivada da
// sigmoide, sem a de -log(o). O exercício a reprova (tests/cli/tutorials_test.cpp confere).
//
// Um neurônio de três entradas com a sigmoide, e a perda que quer a saída igual a 1:
//   n = w1 x1 + w2 x2 + w3 x3 + b,   o = sigmoid(n) = 1 / (1 + e^-n),   L = -log(o)
// Escreva dL/dw1, dL/dw2, dL/dw3 e dL/db usando só os números da ida (n e o), sem fita. Deduza
// antes, no papel: a derivada da sigmoide (escreva-a em função de o, não de n), a de -log(o), e
// o produto das duas (ele simplifica). O capítulo 37 faz o mesmo com a tanh; aqui a
// ativação e a perda são outras, e as contas também.
#include <cmath>

#include "autograd/ops.hpp"
#include "exercicios/conferir.hpp"

using namespace glass;

// {dL/dw1, dL/dw2, dL/dw3, dL/db} do neurônio acima, em x e w (3 cada) e b.
static std::vector<double> volta_a_mao(const std::vector<double>& x, const std::vector<double>& w,
                                       double b) {
  const double n = w[0] * x[0] + w[1] * x[1] + w[2] * x[2] + b;
  const double o = 1 / (1 + std::exp(-n));
  // --- a sua parte ---
  const double dL_dn = o * (1 - o);  // o erro: esquece dL/do = -1/o
  return {dL_dn * x[0], dL_dn * x[1], dL_dn * x[2], dL_dn};
  // --- fim ---
}

// O mesmo neurônio pela fita (a referência).
static std::vector<double> volta_pela_fita(const std::vector<double>& x,
                                           const std::vector<double>& w, double b) {
  Tensor xt = Tensor::from_vector({Scalar(x[0]), Scalar(x[1]), Scalar(x[2])}, {3});
  Tensor wt = Tensor::from_vector({Scalar(w[0]), Scalar(w[1]), Scalar(w[2])}, {3}, true);
  Tensor bt = Tensor::scalar(Scalar(b), true);
  Tensor L = -log(sigmoid(sum(wt * xt) + bt));
  L.backward();
  return {wt.grad()(0), wt.grad()(1), wt.grad()(2), bt.grad()()};
}

int main() {
  exercicio::titulo(21, "A volta de um neurônio sigmoide");
  // Dois casos: um neurônio que erra (o pequeno: gradientes grandes) e um que quase acerta.
  bool certo = true;
  const std::vector<std::vector<double>> xs = {{1, -1, 2}, {0.5, 2, -1}};
  const std::vector<std::vector<double>> ws = {{-0.5, 1, -0.25}, {1, 0.75, -0.5}};
  const std::vector<double> bs = {0.1, 0.2};
  for (std::size_t c = 0; c < xs.size(); ++c) {
    certo = exercicio::conferir("resposta", volta_a_mao(xs[c], ws[c], bs[c]),
                                volta_pela_fita(xs[c], ws[c], bs[c]), 1e-5) &&
            certo;
  }
  return exercicio::resultado(certo);
}
