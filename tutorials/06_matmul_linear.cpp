// Capítulo 06 — Multiplicação de matrizes e a camada linear.
#include <algorithm>

#include <xtensor/xmath.hpp>

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
      "Gradientes, com G = dL/dy:  dL/dx = G W   e   dL/dW = Gᵀ x (deduzidos abaixo).");

  Tensor x = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, true);  // 2 exemplos, 3 entradas
  Tensor W = Tensor::from_vector({1, 0, 0,                           //
                                  0, 1, 0,                           //
                                  0, 0, 1,                           //
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

  tut::secao("De onde vem dL/dW = Gᵀ x");
  tut::texto(
      "Escreva a ida elemento por elemento: y[i][j] = Σ_k x[i][k] · W[j][k].\n"
      "O peso W[j][k] aparece em y[i][j] para todo exemplo i, sempre multiplicado por x[i][k];\n"
      "pela regra da cadeia, dL/dW[j][k] = Σ_i dL/dy[i][j] · x[i][k] = Σ_i G[i][j] · x[i][k],\n"
      "que é o elemento [j][k] de Gᵀ x (a soma corre sobre os exemplos i: cada exemplo do lote\n"
      "contribui). Do mesmo jeito, x[i][k] aparece em y[i][j] para toda saída j, multiplicado por\n"
      "W[j][k]: dL/dx[i][k] = Σ_j G[i][j] · W[j][k] = (G W)[i][k]. As formas conferem:\n"
      "Gᵀ x é (4, 2) @ (2, 3) = (4, 3), a forma de W; G W é (2, 4) @ (4, 3) = (2, 3), a de x.");

  tut::secao("Volta com G = 1 em toda parte: L = soma(y)");
  Tensor L = sum(y);
  L.backward();
  tut::matriz("grad W", W.grad(), 1);
  tut::texto(
      "Com G = 1, toda linha de grad W = Gᵀ x é a soma das linhas de x = [5, 7, 9]: as linhas\n"
      "saem iguais, e um G uniforme não mostra qual exemplo contribui com o quê.");
  tut::matriz("grad x", x.grad(), 1);
  tut::texto("Cada linha de grad x = G W = soma das linhas de W = [2, 2, 2].");

  tut::secao("Volta com um G que muda de lugar para lugar: L = soma(y * y), G = 2y");
  x.zero_grad();
  W.zero_grad();
  Tensor y_de_novo = linear(x, W);
  sum(mul(y_de_novo, y_de_novo)).backward();
  const Array G = 2 * y.value();
  tut::matriz("G = 2y", G, 1);
  tut::matriz("grad W pela fita", W.grad(), 1);
  const Array gw = matmul(transpose(Tensor(G), 0, 1), Tensor(x.value())).value();
  tut::matriz("Gᵀ x", gw, 1);
  const Array gx = matmul(Tensor(G), Tensor(W.value())).value();
  tut::matriz("grad x pela fita", x.grad(), 1);
  tut::matriz("G W", gx, 1);
  std::printf("maior diferença, fita contra as fórmulas: %.1f\n",
              static_cast<double>(std::max(xt::amax(xt::abs(W.grad() - gw))(),
                                           xt::amax(xt::abs(x.grad() - gx))())));
  tut::texto(
      "Linha 0 de grad W à mão: G[0][0] · x[0] + G[1][0] · x[1] = 2 · [1, 2, 3] + 8 · [4, 5, 6]\n"
      "= [34, 44, 54]. Agora cada linha é diferente: a linha j soma os exemplos pesados pelo\n"
      "quanto a saída j errou em cada um.");

  tut::secao("Em lote: (B, n, k) @ (k, m)");
  Tensor lote =
      reshape(Tensor::from_vector({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {12}), {2, 2, 3});
  Tensor yb = linear(lote, W);
  tut::forma("linear de (2, 2, 3)", yb.value());
  tut::texto(
      "O mesmo W serve a todos os exemplos do lote: é assim que (B, T, d_model) passa pelo modelo.");

  tut::secao("Dimensões internas diferentes");
  try {
    matmul(x, x);
  } catch (const std::exception& e) {
    std::printf("erro: %s\n", e.what());
  }

  tut::experimente({
      "troque a última linha de W por {1, -1, 0} e preveja y à mão;",
      "use L = soma(y * y * y): qual é o G agora? confira grad W = Gᵀ x com ele;",
      "conte as multiplicações de x Wᵀ: (n, k) @ (k, m) faz n*k*m delas.",
  });
  tut::respostas();
  {
    Tensor W2 = Tensor::from_vector({1, 0, 0, 0, 1, 0, 0, 0, 1, 1, -1, 0}, {4, 3});
    tut::matriz("y com a última linha {1, -1, 0}", linear(Tensor(x.value()), W2).value(), 1);
    std::printf("  (a quarta saída vira x0 - x1: 1 - 2 = -1 e 4 - 5 = -1)\n");
    x.zero_grad();
    W.zero_grad();
    Tensor y3 = linear(x, W);
    sum(mul(mul(y3, y3), y3)).backward();
    const Array G3 = 3 * y.value() * y.value();
    const Array gw3 = matmul(transpose(Tensor(G3), 0, 1), Tensor(x.value())).value();
    std::printf("G = 3y²; maior diferença entre grad W e Gᵀ x: %.1f\n",
                static_cast<double>(xt::amax(xt::abs(W.grad() - gw3))()));
    std::printf("multiplicações de (2, 3) @ (3, 4): 2 * 3 * 4 = %d\n", 2 * 3 * 4);
  }
  return 0;
}
