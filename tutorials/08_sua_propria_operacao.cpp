// Capítulo 08 — Escreva a sua operação: GELU com ida, volta e registro na fita.
// Precisão: double
//
// Built against the double libraries (see tutorials/CMakeLists.txt) so that gradcheck can
// judge the new op. Everything here uses only the public API of autograd/: Tensor, tape(),
// needs_grad, accumulate_grad and gradcheck.
#include <cmath>

#include "autograd/gradcheck.hpp"
#include "autograd/ops.hpp"
#include "common.hpp"

using namespace glass;

// Φ(x), a função de distribuição da normal padrão, e φ(x), a sua densidade.
static double Phi(double x) { return 0.5 * (1 + std::erf(x / std::sqrt(2.0))); }
static double phi(double x) { return std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI); }

// GELU(x) = x · Φ(x)  (Hendrycks & Gimpel, 2016), elemento por elemento.
// Derivada: d/dx [x Φ(x)] = Φ(x) + x φ(x).
static Tensor gelu(const Tensor& a) {
  // 1. A ida (forward): calcula os números, sem fita.
  Array y = a.value();
  for (std::size_t i = 0; i < y.size(); ++i) y.data()[i] = y.data()[i] * Phi(y.data()[i]);
  // 2. A saída só entra na fita se alguma entrada quer gradiente (e a gravação está ligada).
  const bool gravar = needs_grad({&a});
  Tensor saida(std::move(y), gravar);
  // 3. O registro: o nome, a saída e a volta (backward). A volta recebe dL/dsaída e SOMA
  //    dL/da = dL/dsaída · (Φ(x) + x φ(x)) no gradiente de a (accumulate_grad faz o +=).
  //    Ela guarda a entrada `a`, nunca a própria saída.
  if (gravar) {
    tape().record("gelu", saida, [a](const Array& grad_saida) {
      Array grad_a = grad_saida;
      for (std::size_t i = 0; i < grad_a.size(); ++i) {
        const double x = a.value().data()[i];
        grad_a.data()[i] *= Phi(x) + x * phi(x);
      }
      accumulate_grad(a, std::move(grad_a));
    });
  }
  return saida;
}

// A mesma operação com um erro comum na volta: a regra do produto pela metade. Esquece
// o termo x φ(x) e usa só Φ(x) (como se Φ não dependesse de x).
static Tensor gelu_errada(const Tensor& a) {
  Array y = a.value();
  for (std::size_t i = 0; i < y.size(); ++i) y.data()[i] = y.data()[i] * Phi(y.data()[i]);
  const bool gravar = needs_grad({&a});
  Tensor saida(std::move(y), gravar);
  if (gravar) {
    tape().record("gelu_errada", saida, [a](const Array& grad_saida) {
      Array grad_a = grad_saida;
      for (std::size_t i = 0; i < grad_a.size(); ++i) grad_a.data()[i] *= Phi(a.value().data()[i]);
      accumulate_grad(a, std::move(grad_a));
    });
  }
  return saida;
}

int main() {
  tut::capitulo(8, "Escreva a sua operação: GELU");
  tut::novo(
      "uma operação nova escrita por você: ida, volta, registro na fita, e o juiz (gradcheck).");
  tut::texto(
      "Toda operação da biblioteca (exp, matmul, softmax...) tem três partes:\n"
      "  1. a ida: calcular a saída a partir dos valores das entradas;\n"
      "  2. o registro: se alguma entrada quer gradiente, gravar na fita o nome, a saída e\n"
      "     uma função de volta;\n"
      "  3. a volta: receber dL/dsaída e SOMAR dL/dentrada no gradiente de cada entrada.\n"
      "Vamos escrever a GELU, a ativação do GPT-2 (o LLaMA usa a SiLU, capítulo 21):\n"
      "  GELU(x) = x · Φ(x),   Φ = distribuição acumulada da normal padrão\n"
      "  derivada: Φ(x) + x · φ(x),   φ(x) = e^(-x²/2) / √(2π)\n"
      "Abra este arquivo: a função gelu() tem 20 linhas e usa só a API pública\n"
      "(Tensor, tape().record, needs_grad, accumulate_grad).");

  tut::secao("A ida");
  Tensor x = Tensor::from_vector({-2, -1, 0, 1, 2}, {5}, true);
  Tensor y = gelu(x);
  tut::linha("x", x.value(), 1);
  tut::linha("gelu(x)", y.value());
  tut::texto("GELU(1) = 1 · Φ(1) = 0.841345; para x muito negativo vai a 0, para x grande, a x.");
  std::printf("registros na fita: %zu (o último: %s)\n", tape().size(),
              tape().records().back().op.c_str());

  tut::secao("A volta");
  sum(y).backward();
  tut::linha("grad x", x.grad());
  std::printf("à mão, em x = 1: Φ(1) + 1 · φ(1) = %.6f + %.6f = %.6f\n", Phi(1), phi(1),
              Phi(1) + phi(1));

  tut::secao("O juiz: gradcheck (capítulo 07)");
  Rng rng(8);
  Tensor entrada = Tensor::randn({3, 4}, 1.5, rng, true);
  const GradcheckReport certa =
      gradcheck([](const std::vector<Tensor>& in) { return gelu(in[0]); }, {entrada});
  std::printf("gradcheck gelu: erro absoluto máximo %.2e -> %s\n", certa.max_abs_error,
              certa.passed ? "PASS" : "FAIL");
  const GradcheckReport composta =
      gradcheck([](const std::vector<Tensor>& in) { return softmax(gelu(linear(in[0], in[1]))); },
                {entrada, Tensor::randn({2, 4}, 1.0, rng, true)});
  std::printf("gradcheck softmax(gelu(linear)): erro absoluto máximo %.2e -> %s\n",
              composta.max_abs_error, composta.passed ? "PASS" : "FAIL");
  tut::texto("A sua operação se encaixa nas outras: a fita encadeia as voltas (capítulo 04).");

  tut::secao("Um backward errado é reprovado");
  const GradcheckReport errada =
      gradcheck([](const std::vector<Tensor>& in) { return gelu_errada(in[0]); }, {entrada});
  std::printf("gradcheck gelu_errada: erro absoluto máximo %.2e -> %s\n", errada.max_abs_error,
              errada.passed ? "PASS" : "FAIL");
  Tensor x1 = Tensor::from_vector({1}, {1}, true);
  sum(gelu_errada(x1)).backward();
  std::printf("em x = 1, a volta errada diz %.6f; o certo é %.6f\n", x1.grad()(0), Phi(1) + phi(1));
  tut::texto(
      "A ida está certa, os números de gelu_errada(x) são os mesmos; só a volta erra.\n"
      "Nada quebra na hora: um modelo com essa operação treinaria, só que pior. É por isso\n"
      "que toda operação da biblioteca passa pelo gradcheck nos testes (tests/autograd/).");

  tut::experimente({
      "troque Phi(x) + x * phi(x) por Phi(x) + phi(x) na volta de gelu() e rode: os dois gradcheck de gelu passam a reprovar (o erro só some em x = 1);",
      "aproxime a GELU com as ops prontas, x * sigmoid(1.702 * x), e compare com gelu(x) em x = 1 (0.845796 contra 0.841345);",
      "escreva a operação softplus(x) = log(1 + e^x) do mesmo jeito: é o exercício 02 (tutorials/exercicios/).",
  });
  tut::respostas();
  {
    for (double xv : {-1.0, 1.0, 2.0}) {
      std::printf("x = %4.1f: volta certa Phi + x·phi = %.6f, trocada Phi + phi = %.6f\n", xv,
                  Phi(xv) + xv * phi(xv), Phi(xv) + phi(xv));
    }
    std::printf("  (iguais só em x = 1: o gradcheck, que sorteia x, reprova a trocada)\n");
    Tensor um = Tensor::from_vector({1}, {1});
    std::printf("em x = 1: x * sigmoid(1.702 x) = %.6f, gelu(x) = %.6f\n",
                double(mul(um, sigmoid(um * Scalar(1.702))).item()), double(gelu(um).item()));
  }
  return 0;
}
