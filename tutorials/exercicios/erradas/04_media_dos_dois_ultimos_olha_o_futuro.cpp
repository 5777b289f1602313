// Uma resposta ERRADA do exercício 04 — A média dos dois últimos, com uma matriz: a média de t com
// t+1 (a diagonal de cima), que olha o futuro. O exercício tem de reprová-la
// (tests/cli/tutorials_test.cpp confere).
//
// O capítulo 13 tirou a média de TODO o passado com P · x, P triangular. Monte a matriz P
// (4, 4) cuja linha t faz a média só das posições t-1 e t (a posição 0, sem anterior, fica
// com o próprio vetor), e calcule P · x com matmul.
#include "autograd/ops.hpp"
#include "exercicios/conferir.hpp"

using namespace glass;

static Tensor media_dos_dois_ultimos(const Tensor& x) {
  // --- a sua parte ---
  Tensor P = Tensor::from_vector({0.5f, 0.5f, 0, 0,  // o erro: t e t+1, o futuro
                                  0, 0.5f, 0.5f, 0,  //
                                  0, 0, 0.5f, 0.5f,  //
                                  0, 0, 0, 1},
                                 {4, 4});
  return matmul(P, x);
  // --- fim ---
}

int main() {
  exercicio::titulo(4, "A média dos dois últimos, com uma matriz");
  Tensor x = Tensor::from_vector({1, 0, 0, 1, 2, 2, 4, 0}, {4, 2});  // o x do capítulo 13
  const Tensor y = media_dos_dois_ultimos(x);
  // À mão: [1,0]; ([1,0]+[0,1])/2; ([0,1]+[2,2])/2; ([2,2]+[4,0])/2.
  const bool certo = exercicio::conferir("resposta", exercicio::valores(y.value()),
                                         {1, 0, 0.5, 0.5, 1, 1.5, 3, 1});
  return exercicio::resultado(certo);
}
