// Uma resposta ERRADA do exercício 02 — A sua operação: softplus: a volta usa sigmoid(-x) = 1/(1 +
// e^x) no lugar de sigmoid(x) (um sinal trocado no expoente). O exercício tem de reprová-la
// (tests/cli/tutorials_test.cpp confere).
//
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
  Array y = a.value();
  for (std::size_t i = 0; i < y.size(); ++i) y.data()[i] = std::log1p(std::exp(y.data()[i]));
  const bool gravar = needs_grad({&a});
  Tensor saida(std::move(y), gravar);
  if (gravar) {
    tape().record("softplus", saida, [a](const Array& grad_saida) {
      Array grad_a = grad_saida;
      for (std::size_t i = 0; i < grad_a.size(); ++i) {
        grad_a.data()[i] *= 1 / (1 + std::exp(a.value().data()[i]));  // o erro: sigmoid(-x)
      }
      accumulate_grad(a, std::move(grad_a));
    });
  }
  return saida;
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
