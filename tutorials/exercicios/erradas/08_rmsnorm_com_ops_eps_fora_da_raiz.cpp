// Uma resposta ERRADA do exercício 08 — A RMSNorm com as ops: soma o eps depois da raiz, x /
// (sqrt(média(x²)) + eps). Com valores grandes não se vê; numa linha pequena, sim. O exercício tem
// de reprová-la (tests/cli/tutorials_test.cpp confere).
//
// Escreva y = x / sqrt(média(x²) + eps) * g com as ops de autograd/ops.hpp — mean (ou sum) com
// keepdim, pow (ou *) e as operações com broadcasting do capítulo 05 — e compare com
// rms_norm(x, g, eps) do capítulo 22. Não há uma op sqrt para tensores: a raiz é pow(·, 0.5).
#include <cmath>

#include "autograd/ops.hpp"
#include "exercicios/conferir.hpp"

using namespace glass;

// x (n, d), g (d) -> (n, d): a RMSNorm de cada linha.
static Tensor minha_rms_norm(const Tensor& x, const Tensor& g, double eps) {
  // --- a sua parte ---
  const std::size_t d = x.shape()[1];
  Tensor media_dos_quadrados = sum(x * x, 1, /*keepdim=*/true) / Scalar(d);  // (n, 1)
  Tensor rms = pow(media_dos_quadrados, 0.5) + Scalar(eps);  // o erro: o eps fora da raiz
  return x / rms * g;
  // --- fim ---
}

int main() {
  exercicio::titulo(8, "A RMSNorm com as ops");
  // A linha 2 é pequena (média dos quadrados 3.5e-6, perto do eps): ali se vê onde o eps entra.
  Tensor x = Tensor::from_vector({1, 2, 3, 4, 10, -2, 0, 1, 0.001f, -0.002f, 0.003f, 0}, {3, 4});
  Tensor g = Tensor::from_vector({1, 1, 0.5f, 2}, {4});
  const Tensor minha = minha_rms_norm(x, g, 1e-5);
  tut::linha("rms_norm da biblioteca", rms_norm(x, g, 1e-5).value());
  // Linha 0: [1,2,3,4] / sqrt(7.5 + 1e-5) * g (Python math, double); as outras conferem com a
  // biblioteca.
  const bool certo = exercicio::conferir("resposta", exercicio::valores(minha.value()),
                                         exercicio::valores(rms_norm(x, g, 1e-5).value())) &&
                     std::fabs(minha.value()(0, 3) - 2.921185) < 1e-5;
  return exercicio::resultado(certo);
}
