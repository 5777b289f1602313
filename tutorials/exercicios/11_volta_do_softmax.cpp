// Exercício 11 — A volta do softmax (parte 1: capítulos 01 a 09).
// Precisão: double
//
// Até aqui toda volta que você escreveu era elemento a elemento: a saída i só dependia da
// entrada i, e dL/dx_i = g_i · f'(x_i). No softmax, cada saída depende da linha inteira:
//   y_i = e^(x_i) / Σ_k e^(x_k)
// A ida e o registro na fita estão prontos. Escreva a volta: dado g = dL/dy (n, d), calcule
// dL/dx (n, d), linha por linha. Deduza antes, no papel, dy_i/dx_j nos dois casos (i = j e
// i ≠ j) e some: dL/dx_j = Σ_i g_i · dy_i/dx_j. (O capítulo 09 mostra o softmax; o 07, o juiz.)
#include <cmath>

#include "autograd/gradcheck.hpp"
#include "autograd/ops.hpp"
#include "exercicios/conferir.hpp"

using namespace glass;

// x (n, d) -> softmax de cada linha (n, d), com a volta escrita à mão.
static Tensor meu_softmax(const Tensor& x) {
  const std::size_t n = x.shape()[0], d = x.shape()[1];
  Array y = x.value();
  for (std::size_t r = 0; r < n; ++r) {
    double maximo = y(r, 0), soma = 0;
    for (std::size_t c = 0; c < d; ++c) maximo = std::max(maximo, double(y(r, c)));
    for (std::size_t c = 0; c < d; ++c) soma += (y(r, c) = std::exp(y(r, c) - maximo));
    for (std::size_t c = 0; c < d; ++c) y(r, c) /= soma;
  }
  const bool gravar = needs_grad({&x});
  Tensor saida(y, gravar);
  if (gravar) {
    tape().record("meu_softmax", saida, [x, y, n, d](const Array& g) {
      Array grad_x = Array::from_shape({n, d});
      grad_x.fill(0);
      // --- a sua parte ---
      // TODO: escreva aqui. (Uma solução: exercicios/solucoes/11_volta_do_softmax.cpp.)
      // --- fim ---
      accumulate_grad(x, std::move(grad_x));
    });
  }
  return saida;
}

int main() {
  exercicio::titulo(11, "A volta do softmax");
  // Linha 0: x = [0, ln 2, 0] -> y = [1, 2, 1] / 4 = [0.25, 0.5, 0.25]. Linha 1: y = 1/3 cada.
  Tensor x = Tensor::from_vector({0, Scalar(std::log(2.0)), 0, 0, 0, 0}, {2, 3}, true);
  // L = soma(w · y): g = dL/dy = w.
  const Tensor w = Tensor::from_vector({1, 0, 0, 1, 2, 3}, {2, 3});
  sum(meu_softmax(x) * w).backward();
  // Os valores esperados vêm da fórmula que você deduz (a conta à mão está na solução).
  bool certo = exercicio::conferir("resposta", exercicio::valores(x.grad()),
                                   {0.1875, -0.125, -0.0625, -1.0 / 3, 0, 1.0 / 3}, 1e-9);
  Rng rng(11);
  Tensor entrada = Tensor::randn({3, 5}, 2.0, rng, true);
  const GradcheckReport juiz =
      gradcheck([](const std::vector<Tensor>& in) { return meu_softmax(in[0]); }, {entrada});
  std::printf("gradcheck meu_softmax: %s (maior erro relativo %.1e)\n",
              juiz.passed ? "PASS" : "FAIL", juiz.max_rel_error);
  return exercicio::resultado(certo && juiz.passed);
}
