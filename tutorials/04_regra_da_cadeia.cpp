// Capítulo 04 — Regra da cadeia e acumulação de gradientes.
#include <cmath>

#include "autograd/ops.hpp"
#include "common.hpp"

using namespace glass;

int main() {
  tut::capitulo(4, "Regra da cadeia e acumulação");
  tut::novo("funções encadeadas (exp, log) e a soma (+=) dos gradientes.");
  tut::texto(
      "Regra da cadeia: se L depende de v, que depende de u, que depende de x,\n"
      "  dL/dx = dL/dv * dv/du * du/dx.\n"
      "Cada operação só precisa conhecer a SUA derivada local; a fita multiplica tudo\n"
      "na volta. Exemplo: u = 2x, v = exp(u), L = log(v + 1), em x = 1.");

  tut::secao("Uma cadeia de três elos");
  Tensor x = Tensor::scalar(1, true);
  Tensor u = 2 * x;
  Tensor v = exp(u);
  Tensor L = log(v + 1);
  L.backward();
  const double e2 = std::exp(2.0);
  std::printf("L: %.6f\n", L.item());
  std::printf("à mão: dL/dv = 1/(v+1) = %.6f, dv/du = v = %.6f, du/dx = 2\n", 1 / (e2 + 1), e2);
  std::printf("à mão, o produto: %.6f\n", 2 * e2 / (e2 + 1));
  tut::linha("grad x pela fita", x.grad());
  std::printf("o fator dL/dv · dv/du = e²/(e²+1): %.6f\n", e2 / (e2 + 1));
  tut::texto(
      "(Este 0.880797 reaparece no capítulo 15, como peso de atenção, e no capítulo 21, em\n"
      "silu(2).)");

  tut::secao("Um tensor usado duas vezes: as contribuições somam");
  tut::texto("f(x) = x*x + 3x em x = 2. A derivada é 2x + 3 = 7.");
  Tensor z = Tensor::scalar(2, true);
  Tensor f = z * z + 3 * z;
  f.backward();
  tut::linha("grad z", z.grad());

  tut::secao("A acumulação também atravessa passos: zero_grad");
  tut::texto(
      "backward() SOMA no grad que já existe (+=). Se repetirmos a conta sem zerar,\n"
      "o gradiente dobra. É por isso que todo laço de treino chama zero_grad().");
  Tensor f2 = z * z + 3 * z;
  f2.backward();
  tut::linha("grad z sem zerar", z.grad());
  z.zero_grad();
  Tensor f3 = z * z + 3 * z;
  f3.backward();
  tut::linha("grad z depois de zero_grad", z.grad());

  tut::experimente({
      "troque log(v + 1) por sigmoid(u) e compare com sigmoid(2)(1 - sigmoid(2)) * 2;",
      "use z três vezes (z*z*z) e confira 3z² = 12;",
      "chame backward() numa conta com dois elementos: leia a mensagem de erro.",
  });
  tut::respostas();
  {
    Tensor x2 = Tensor::scalar(1, true);
    Tensor s2 = sigmoid(2 * x2);
    s2.backward();
    const double sg = 1 / (1 + std::exp(-2.0));
    std::printf(
        "sigmoid(2x) em x = 1: grad x = %.6f; à mão sigmoid(2)(1 - sigmoid(2)) · 2 = %.6f\n",
        static_cast<double>(x2.grad().data()[0]), sg * (1 - sg) * 2);
    Tensor z2 = Tensor::scalar(2, true);
    (z2 * z2 * z2).backward();
    std::printf("z*z*z em z = 2: grad z = %.6f (3z² = 12)\n",
                static_cast<double>(z2.grad().data()[0]));
    try {
      Tensor dois = Tensor::from_vector({1, 2}, {2}, true);
      Tensor d2 = dois * dois;
      d2.backward();
    } catch (const std::exception& e) {
      std::printf("backward() em 2 elementos: erro: %s\n", e.what());
    }
  }
  return 0;
}
