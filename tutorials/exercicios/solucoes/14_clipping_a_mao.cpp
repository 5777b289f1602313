// Solução do exercício 14 — O clipping pela norma global (parte 5: capítulos 25 a 30).
//
// O capítulo 27 corta o gradiente com clip_grad_norm(parâmetros, 1.0). Escreva o seu: a norma
// é a de TODOS os gradientes juntos (como se fossem um vetor só); se ela passa de max_norm,
// todos são multiplicados pelo mesmo fator, de modo que a norma vire max_norm; se não passa,
// nada muda. Devolva a norma medida ANTES do corte (é o que o capítulo 27 imprime).
#include <cmath>

#include "exercicios/conferir.hpp"
#include "train/clip.hpp"

using namespace glass;

// Os gradientes de vários parâmetros, cada um uma lista de números.
static double meu_clip(std::vector<std::vector<double>>& grads, double max_norm) {
  double norma = 0;
  // --- a sua parte ---
  for (const auto& g : grads) {
    for (double x : g) norma += x * x;
  }
  norma = std::sqrt(norma);
  if (norma > max_norm) {
    const double fator = max_norm / norma;  // o mesmo para todos: a direção não muda
    for (auto& g : grads) {
      for (double& x : g) x *= fator;
    }
  }
  // --- fim ---
  return norma;
}

int main() {
  exercicio::titulo(14, "O clipping pela norma global");
  // Dois parâmetros: |a| = |[3, 4]| = 5, |b| = |[0, 12]| = 12, juntos √(9 + 16 + 144) = 13.
  // Cortar em 1 divide tudo por 13: [3/13, 4/13] e [0, 12/13] (à mão).
  std::vector<std::vector<double>> grads = {{3, 4}, {0, 12}};
  const double norma = meu_clip(grads, 1.0);
  bool certo = exercicio::conferir("resposta", {grads[0][0], grads[0][1], grads[1][0], grads[1][1]},
                                   {0.230769, 0.307692, 0, 0.923077}, 2e-6);
  certo = exercicio::conferir("norma antes do corte", {norma}, {13}, 1e-9) && certo;
  // Abaixo do limite nada muda: |[0.3, 0.4]| = 0.5 < 1.
  std::vector<std::vector<double>> pequenos = {{0.3, 0.4}};
  meu_clip(pequenos, 1.0);
  certo = exercicio::conferir("abaixo do limite", pequenos[0], {0.3, 0.4}, 1e-9) && certo;

  Tensor a = Tensor::zeros({2}, true), b = Tensor::zeros({2}, true);
  a.grad()(0) = 3, a.grad()(1) = 4, b.grad()(1) = 12;
  const double da_biblioteca = clip_grad_norm({a, b}, 1.0);
  std::printf("clip_grad_norm da biblioteca: norma %.6f, a = %.6f %.6f, b = %.6f %.6f\n",
              da_biblioteca, double(a.grad()(0)), double(a.grad()(1)), double(b.grad()(0)),
              double(b.grad()(1)));
  return exercicio::resultado(certo);
}
