// Capítulo 02 — A derivada por diferenças finitas.
#include <cmath>

#include "autograd/ops.hpp"
#include "common.hpp"

using namespace glass;

// f(x) = x^3 - 2x, calculada com as operações da biblioteca.
static Scalar f(Scalar x_value) {
  Tensor x = Tensor::scalar(x_value);
  return (pow(x, 3) - 2 * x).item();
}

int main() {
  tut::capitulo(2, "A derivada por diferenças finitas");
  tut::novo("a derivada: quanto a saída muda quando a entrada muda um pouquinho.");
  tut::texto(
      "Treinar é ajustar números para diminuir um erro. Para saber para que lado\n"
      "ajustar, precisamos da derivada. O jeito mais direto de medi-la: empurrar x\n"
      "um pouquinho (h) e ver quanto f muda.\n"
      "  para frente:  (f(x+h) - f(x)) / h\n"
      "  central:      (f(x+h) - f(x-h)) / (2h)   (erro proporcional a h², bem menor)\n"
      "Exemplo: f(x) = x³ - 2x em x = 1.5. A derivada exata é 3x² - 2 = 4.75.");

  const Scalar x = 1.5f;
  const double exata = 3.0 * 1.5 * 1.5 - 2.0;
  std::printf("f(1.5): %.6f\n", f(x));
  std::printf("derivada exata: %.6f\n", exata);

  tut::secao("Estimativas com h cada vez menor (float, 32 bits)");
  std::printf("%10s %14s %14s %14s\n", "h", "para frente", "central", "erro central");
  for (double h : {1e-1, 1e-2, 1e-3, 1e-4, 1e-5}) {
    const Scalar hs = static_cast<Scalar>(h);
    const double frente = (f(x + hs) - f(x)) / h;
    const double central = (f(x + hs) - f(x - hs)) / (2 * h);
    std::printf("%10.0e %14.6f %14.6f %14.6f\n", h, frente, central, std::fabs(central - exata));
  }
  tut::texto(
      "\nRepare: diminuir h ajuda até certo ponto; depois o erro volta a crescer.\n"
      "Com float (cerca de 7 dígitos), f(x+h) e f(x-h) ficam quase iguais e a subtração\n"
      "perde os dígitos que importam (cancelamento). Por isso a verificação de gradientes\n"
      "do capítulo 07 usa double (cerca de 16 dígitos).");

  tut::secao("Por que não treinar assim?");
  tut::texto(
      "Cada derivada por diferenças custa duas avaliações de f. O modelo do projeto tem\n"
      "cerca de 750 mil parâmetros: seriam 1,5 milhão de passagens pela rede para UM passo de treino.\n"
      "A fita (capítulo 03) dá todas as derivadas de uma vez, com o custo de mais ou\n"
      "menos uma passagem para trás. As diferenças finitas ficam como juiz: servem\n"
      "para conferir se a fita está certa.");

  tut::experimente({
      "troque x = 1.5 por 0 ou por 10 e veja o erro da estimativa para frente;",
      "troque f por exp(x): a derivada exata é a própria exp(x);",
      "experimente h = 1e-7: o que acontece com a estimativa em float?",
  });
  tut::respostas();
  {
    // Para frente, h = 1e-2: o erro é cerca de f''(x)/2 · h = 3x · h (f'' = 6x).
    const Scalar h = 1e-2f;
    for (Scalar x0 : {0.0f, 10.0f}) {
      const double frente = (f(x0 + h) - f(x0)) / h;
      const double exata0 = 3.0 * x0 * x0 - 2.0;
      std::printf("x = %4.1f, h = 1e-2: para frente %.4f, exata %.4f, erro %.4f (3x·h = %.4f)\n",
                  static_cast<double>(x0), frente, exata0, std::fabs(frente - exata0),
                  3.0 * x0 * 1e-2);
    }
    std::printf(
        "  (o erro cresce com x, como 3x·h; em x = 0 esse termo some e sobra h² = 0.0001)\n");
    const auto g = [](Scalar v) { return exp(Tensor::scalar(v)).item(); };
    const Scalar h3 = 1e-3f;
    const double central_exp = (g(x + h3) - g(x - h3)) / (2 * 1e-3);
    std::printf("exp em 1.5, central com h = 1e-3: %.4f; exata exp(1.5) = %.4f\n", central_exp,
                std::exp(1.5));
    const Scalar h7 = 1e-7f;
    const double central7 = (f(x + h7) - f(x - h7)) / (2 * 1e-7);
    std::printf("h = 1e-7 em float: central %.6f, erro %.6f\n", central7,
                std::fabs(central7 - exata));
    std::printf(
        "  (1.5 + 1e-7 nem existe em float: vira 1.5 + 2^-23 = %.9f; a conta perde quase tudo)\n",
        static_cast<double>(x + h7));
  }
  return 0;
}
