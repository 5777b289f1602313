// Capítulo 07 — A verificação de gradientes (gradient check), em double e em float.
// Precisão: double e float
//
// The line above makes tutorials/CMakeLists.txt build this file twice: 07_verificacao_de_gradientes
// against the double libraries (Scalar = double) and 07_verificacao_de_gradientes_float against
// the float ones. The precision comes from the libraries a program links, not from a #define in
// the source, so the same text gives both programs.

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "autograd/gradcheck.hpp"
#include "autograd/ops.hpp"
#include "common.hpp"

using namespace glass;

using Funcao = std::function<Tensor()>;

// Compares, for every element of every input, the gradient from the tape with the central
// difference (f(x+h) - f(x-h)) / 2h. Returns the largest relative error.
static double maior_erro_relativo(const std::vector<Tensor>& entradas, const Funcao& f,
                                  double h = 1e-6) {
  for (Tensor t : entradas) t.zero_grad();
  f().backward();
  double pior = 0;
  for (Tensor t : entradas) {
    Array analitico = t.grad();
    for (std::size_t i = 0; i < t.size(); ++i) {
      Scalar& xi = t.value().data()[i];
      const Scalar guardado = xi;
      Scalar mais, menos;
      {
        NoGradGuard sem_fita;
        xi = guardado + h;
        mais = f().item();
        xi = guardado - h;
        menos = f().item();
      }
      xi = guardado;
      const double numerico = (mais - menos) / (2 * h);
      const double a = analitico.data()[i];
      const double erro =
          std::fabs(a - numerico) / std::max(1e-8, std::fabs(a) + std::fabs(numerico));
      pior = std::max(pior, erro);
    }
  }
  return pior;
}

static void verificar(const char* nome, const std::vector<Tensor>& entradas, const Funcao& f) {
  const double erro = maior_erro_relativo(entradas, f);
  std::printf("gradcheck %s: erro relativo máximo %.2e -> %s\n", nome, erro,
              erro < 1e-6 ? "PASS" : "FAIL");
}

int main() {
  tut::capitulo(7, "A verificação de gradientes");
  tut::novo("o juiz: comparar a fita com diferenças finitas, elemento por elemento, em double.");
  std::printf("este programa: Scalar = %s (%zu bytes por número)\n\n",
              sizeof(Scalar) == 8 ? "double" : "float", sizeof(Scalar));
  tut::texto(
      "Uma derivada escrita errada no backward não dá erro de compilação: o modelo só\n"
      "treina pior. Por isso cada operação é conferida assim:\n"
      "  1. calcule os gradientes pela fita (backward);\n"
      "  2. para cada número de cada entrada, empurre-o +h e -h e meça (f+ - f-) / 2h;\n"
      "  3. compare: erro relativo = |fita - numérico| / (|fita| + |numérico|).\n"
      "Em double (16 dígitos) e h = 1e-6, uma derivada certa dá erro de 1e-8 ou menor;\n"
      "uma derivada errada dá erro da ordem de 0.1 a 1. O critério aqui: erro < 1e-6.\n"
      "O mesmo arquivo é compilado duas vezes: 07_verificacao_de_gradientes (double) e\n"
      "07_verificacao_de_gradientes_float (float). Rode os dois e compare.");

  Rng rng(7);
  Tensor x = Tensor::randn({3, 4}, 1.0, rng, true);
  Tensor W = Tensor::randn({5, 4}, 0.5, rng, true);
  Tensor c = Tensor::randn({3, 5}, 1.0, rng);  // pesos fixos para misturar a saída num escalar
  Tensor g = Tensor::randn({4}, 1.0, rng, true);

  tut::secao("Conferindo as operações dos capítulos 01 a 06");
  verificar("linear (capítulo 06)", {x, W}, [&] { return sum(linear(x, W) * c); });
  verificar("matmul com a transposta", {x, W},
            [&] { return sum(matmul(x, transpose(W, 0, 1)) * c); });
  verificar("exp e log (capítulo 04)", {x}, [&] { return sum(log(exp(x * 0.5) + 1)); });
  verificar("broadcasting (3, 4) + (4,) (capítulo 05)", {x, g},
            [&] { return sum((x + g) * (x + g) * x); });
  verificar("média de sigmoid(linear) * c", {x, W},
            [&] { return mean(sigmoid(linear(x, W)) * c); });
  tut::texto(
      "As operações dos próximos capítulos passam pelo mesmo juiz no capítulo que as ensina:\n"
      "softmax e entropia cruzada no capítulo 09, a atenção com máscara causal no capítulo 15,\n"
      "a silu no capítulo 21, a RMSNorm no capítulo 22.");

  tut::secao("E quando o gradiente está errado?");
  tut::texto(
      "Simulamos um erro comum: esquecer o fator 2 na derivada de x². A fita diz 2x;\n"
      "nosso 'backward errado' diria x. Comparando com as diferenças finitas (aqui em\n"
      "double, com h = 1e-6, nas duas versões do programa):");
  Tensor s = Tensor::scalar(1.5, true);
  const double h = 1e-6;
  const double numerico = ((1.5 + h) * (1.5 + h) - (1.5 - h) * (1.5 - h)) / (2 * h);
  const double errado = 1.5;
  std::printf("numérico: %.6f   errado: %.6f   erro relativo: %.6f -> REPROVADO\n", numerico,
              errado, std::fabs(errado - numerico) / (std::fabs(errado) + std::fabs(numerico)));
  Tensor quad = s * s;
  quad.backward();
  std::printf("numérico: %.6f   fita:   %.6f   (a fita acerta)\n", numerico, s.grad().data()[0]);
  tut::texto(
      "O erro relativo 0.333333 = |1.5 - 3| / (1.5 + 3). No capítulo 08 você escreve uma\n"
      "operação inteira, com um backward errado de verdade, e vê o juiz reprová-la.");

  tut::secao("O mesmo juiz na biblioteca: autograd/gradcheck.hpp");
  tut::texto(
      "Os testes do projeto (tests/autograd, tests/nn) e o comando `glass gradcheck` usam\n"
      "gradcheck(), que faz o mesmo laço; uma saída que não é escalar é reduzida a\n"
      "soma(saída * R), com R aleatório fixo. Critério: |fita - numérico| <= atol + rtol·|numérico|.\n"
      "Ela foi feita para double: em float as diferenças finitas têm ruído demais para\n"
      "essas tolerâncias.");
  const GradcheckReport relatorio = gradcheck(
      [](const std::vector<Tensor>& in) { return sigmoid(linear(in[0], in[1])); }, {x, W});
  std::printf("gradcheck da biblioteca, sigmoid(linear): erro absoluto máximo %.2e -> %s\n",
              relatorio.max_abs_error, relatorio.passed ? "PASS" : "FAIL");

  tut::secao("Em float");
  if (sizeof(Scalar) == 8) {
    tut::texto(
        "Esta é a versão double. Rode build/tutorials/07_verificacao_de_gradientes_float:\n"
        "com os mesmos gradientes certos, as linhas acima passam a dar FAIL. Com 7 dígitos,\n"
        "f(x+h) - f(x-h) com h = 1e-6 perde quase todos os dígitos (capítulo 02).");
  } else {
    tut::texto(
        "Esta é a versão float: os gradientes da fita são os mesmos e estão certos, mas\n"
        "com h = 1e-6 as diferenças finitas em float são ruído (capítulo 02), e o juiz\n"
        "reprova contas certas. Por isso os testes do projeto verificam em double.");
  }
  tut::texto(
      "O GlassLLM treina em float e confere em double; os LLMs grandes treinam com números\n"
      "de 16 bits (fp16, bf16) e precisam de truques para não perder gradientes pequenos:\n"
      "docs/precisao-mista.md.");

  tut::experimente({
      "troque h (o padrão 1e-6 de maior_erro_relativo) por 1e-3 e por 1e-10 e veja o erro crescer dos dois lados;",
      "na versão float, troque h por 1e-2 e compare os erros com os de h = 1e-6 (a tabela do capítulo 02 explica a diferença);",
      "verifique uma conta sua, por exemplo sum(log(sigmoid(x))).",
  });
  tut::respostas();
  const Funcao exp_log = [&] { return sum(log(exp(x * 0.5) + 1)); };
  for (double h_teste : {1e-2, 1e-3, 1e-6, 1e-10}) {
    std::printf("exp e log com h = %.0e: erro relativo máximo %.2e\n", h_teste,
                maior_erro_relativo({x}, exp_log, h_teste));
  }
  if (sizeof(Scalar) == 8) {
    std::printf(
        "  (em double: h grande erra pelo termo h² da diferença central, h = 1e-10 pelo\n"
        "  arredondamento; o meio, 1e-6, é o melhor dos dois)\n");
  } else {
    std::printf("  (em float: h = 1e-2 fica perto do melhor possível; h = 1e-6 já é ruído)\n");
  }
  verificar("sum(log(sigmoid(x)))", {x}, [&] { return sum(log(sigmoid(x))); });
  return 0;
}
