// Exercício 12 — Ache o erro na volta (parte 4: capítulos 21 a 24).
// Precisão: double
//
// A LayerNorm (a normalização do GPT-2; o LLaMA usa a RMSNorm do capítulo 22) começa
// centrando cada linha: y = x - média(x). A operação centrar() abaixo tem ida, registro na
// fita e volta, como a gelu() do capítulo 08. A ida está certa; a volta, não. Rode: o
// gradcheck (capítulo 07) reprova. Ache o erro e conserte só a volta. Dica: cada y_i depende
// de TODOS os x_j da linha, pela média; deduza dy_i/dx_j no papel antes de mexer.
#include "autograd/gradcheck.hpp"
#include "autograd/ops.hpp"
#include "exercicios/conferir.hpp"

using namespace glass;

// x (n, d) -> cada linha menos a sua média (n, d).
static Tensor centrar(const Tensor& x) {
  const std::size_t n = x.shape()[0], d = x.shape()[1];
  Array y = x.value();
  for (std::size_t r = 0; r < n; ++r) {
    double media = 0;
    for (std::size_t c = 0; c < d; ++c) media += y(r, c) / double(d);
    for (std::size_t c = 0; c < d; ++c) y(r, c) -= media;
  }
  const bool gravar = needs_grad({&x});
  Tensor saida(y, gravar);
  if (gravar) {
    tape().record("centrar", saida, [x, n, d](const Array& g) {
      Array grad_x = g;  // g = dL/dy (n, d)
      // --- a sua parte ---
      // TODO: a volta parou aqui: dL/dx = dL/dy, como se a média não dependesse de x.
      // Conserte. (Uma solução: exercicios/solucoes/12_ache_o_erro_na_volta.cpp.)
      // --- fim ---
      accumulate_grad(x, std::move(grad_x));
    });
  }
  return saida;
}

int main() {
  exercicio::titulo(12, "Ache o erro na volta");
  Tensor x = Tensor::from_vector({1, 2, 6, 0, 0, 3}, {2, 3}, true);
  tut::linha("centrar(x)", centrar(x).value());
  tape().clear();
  // L = soma(w · y): g = dL/dy = w. (A conta à mão dos valores esperados está na solução.)
  const Tensor w = Tensor::from_vector({1, 0, 0, 1, 2, 3}, {2, 3});
  sum(centrar(x) * w).backward();
  bool certo = exercicio::conferir("resposta", exercicio::valores(x.grad()),
                                   {2.0 / 3, -1.0 / 3, -1.0 / 3, -1, 0, 1}, 1e-9);
  Rng rng(12);
  Tensor entrada = Tensor::randn({3, 4}, 1.0, rng, true);
  const GradcheckReport juiz =
      gradcheck([](const std::vector<Tensor>& in) { return centrar(in[0]); }, {entrada});
  std::printf("gradcheck centrar: %s (maior erro relativo %.1e)\n", juiz.passed ? "PASS" : "FAIL",
              juiz.max_rel_error);
  return exercicio::resultado(certo && juiz.passed);
}
