// Exercício 02 — A sua operação: softplus (parte 1: capítulos 01 a 09).
// Precisão: double
//
// softplus(x) = log(1 + e^x), uma ReLU suave. Derivada: e^x / (1 + e^x) = sigmoid(x).
// Escreva a ida, o registro na fita e a volta, como a gelu() do capítulo 08, e passe no
// gradcheck.
#include <cmath>

#include "autograd/gradcheck.hpp"
#include "autograd/ops.hpp"
#include "exercicios/conferir.hpp"

using namespace glass;

static Tensor softplus(const Tensor& a) {
  // --- a sua parte ---
  // TODO: escreva aqui. (Uma solução: exercicios/solucoes/02_operacao_softplus.cpp.)
  return Tensor::zeros(a.shape());
  // --- fim ---
}

int main() {
  exercicio::titulo(2, "A sua operação: softplus");
  Tensor x = Tensor::from_vector({-1, 0, 2}, {3}, true);
  Tensor y = softplus(x);
  // Referências: log(1 + e^x) e sigmoid(x) em -1, 0 e 2 (math.log1p / math.exp do Python).
  bool certo = exercicio::conferir("resposta", exercicio::valores(y.value()),
                                   {0.313262, 0.693147, 2.126928});
  if (y.requires_grad()) {
    sum(y).backward();
    certo =
        exercicio::conferir("grad x", exercicio::valores(x.grad()), {0.268941, 0.5, 0.880797}) &&
        certo;
  } else {
    std::printf("softplus(x) não entrou na fita: falta o registro.\n");
    certo = false;
  }
  Rng rng(2);
  Tensor entrada = Tensor::randn({3, 4}, 2.0, rng, true);
  bool passou = false;
  try {
    passou =
        gradcheck([](const std::vector<Tensor>& in) { return softplus(in[0]); }, {entrada}).passed;
  } catch (const std::exception& e) {
    std::printf("gradcheck: %s\n", e.what());
  }
  std::printf("gradcheck softplus: %s\n", passou ? "PASS" : "FAIL");
  return exercicio::resultado(certo && passou);
}
