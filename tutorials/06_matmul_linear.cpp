// Capítulo 06 — Multiplicação de matrizes e a camada linear.
#include "autograd/ops.hpp"
#include "common.hpp"

using namespace glass;

int main() {
  tut::capitulo(6, "Matmul e a camada linear");
  tut::novo("matmul (produto de matrizes) e linear(x, W) = x Wᵀ, a peça mais usada do modelo.");
  tut::texto(
      "(n, k) @ (k, m) -> (n, m): cada saída [i][j] é o produto escalar da linha i da\n"
      "esquerda com a coluna j da direita. A camada linear sem bias guarda W no formato\n"
      "do PyTorch, (out_features, in_features), e calcula y = x Wᵀ.\n"
      "Gradientes, com G = dL/dy:  dL/dx = G W   e   dL/dW = Gᵀ x.");

  Tensor x = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, true);  // 2 exemplos, 3 entradas
  Tensor W = Tensor::from_vector({1, 0, 0,  //
                                  0, 1, 0,  //
                                  0, 0, 1,  //
                                  1, 1, 1},
                                 {4, 3}, true);  // 4 saídas

  tut::secao("Ida");
  Tensor y = linear(x, W);
  tut::forma("x", x.value());
  tut::forma("W", W.value());
  tut::forma("y = x Wᵀ", y.value());
  tut::matriz("y", y.value(), 1);
  tut::texto("As 3 primeiras saídas copiam x; a quarta soma as entradas (1+2+3 = 6, 4+5+6 = 15).");
  Tensor y2 = matmul(x, transpose(W, 0, 1));
  tut::matriz("matmul(x, Wᵀ)", y2.value(), 1);

  tut::secao("Volta, com L = soma(y), ou seja, G = 1 em toda parte");
  Tensor L = sum(y);
  L.backward();
  tut::matriz("grad W", W.grad(), 1);
  tut::texto("Cada linha de grad W = Gᵀ x = soma das linhas de x = [5, 7, 9].");
  tut::matriz("grad x", x.grad(), 1);
  tut::texto("Cada linha de grad x = G W = soma das linhas de W = [2, 2, 2].");

  tut::secao("Em lote: (B, n, k) @ (k, m)");
  Tensor lote = reshape(Tensor::from_vector({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {12}), {2, 2, 3});
  Tensor yb = linear(lote, W);
  tut::forma("linear de (2, 2, 3)", yb.value());
  tut::texto("O mesmo W serve a todos os exemplos do lote: é assim que (B, T, d_model) passa pelo modelo.");

  tut::secao("Dimensões internas diferentes");
  try {
    matmul(x, x);
  } catch (const std::exception& e) {
    std::printf("erro: %s\n", e.what());
  }

  tut::experimente({
      "troque a última linha de W por {1, -1, 0} e preveja y à mão;",
      "use L = soma(y * y) e confira grad W = 2 yᵀ x;",
      "conte as multiplicações: (n, k) @ (k, m) faz n*k*m delas.",
  });
  return 0;
}
