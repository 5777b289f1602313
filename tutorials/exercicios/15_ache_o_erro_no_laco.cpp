// Exercício 15 — Ache o erro no laço de treino (parte 5: capítulos 25 a 30).
//
// O laço abaixo treina um número só, w, para minimizar L = (w - 3)², com a descida simples do
// capítulo 12 e lr = 0.25. Deveria chegar perto de 3 (conte à mão quanto w - 3 encolhe por
// passo), mas não chega: rode e olhe w passo a passo. Ache o erro e conserte o laço. Há mais
// de um conserto que PARECE certo; só um dá a trajetória certa.
#include "autograd/ops.hpp"
#include "exercicios/conferir.hpp"

using namespace glass;

// Os valores de w depois de cada um dos 5 passos.
static std::vector<double> treinar() {
  Tensor w = Tensor::from_vector({0}, {1}, true);
  std::vector<double> trajetoria;
  for (int passo = 0; passo < 5; ++passo) {
    // --- a sua parte ---
    // TODO: ache o erro nestas linhas. (Uma solução: exercicios/solucoes/15_ache_o_erro_no_laco.cpp.)
    Tensor erro = add(w, Scalar(-3));
    sum(erro * erro).backward();
    w.value() -= Scalar(0.25) * w.grad();
    // --- fim ---
    trajetoria.push_back(w.value()(0));
  }
  return trajetoria;
}

int main() {
  exercicio::titulo(15, "Ache o erro no laço de treino");
  // À mão: dL/dw = 2 (w - 3), então w <- w - 0.25 · 2 (w - 3) e w - 3 cai pela metade a cada
  // passo: -3 -> -1.5 -> -0.75 -> ..., w = 1.5, 2.25, 2.625, 2.8125, 2.90625.
  const bool certo =
      exercicio::conferir("resposta", treinar(), {1.5, 2.25, 2.625, 2.8125, 2.90625}, 1e-6);
  return exercicio::resultado(certo);
}
