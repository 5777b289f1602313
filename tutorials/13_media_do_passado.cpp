// Capítulo 13 — A média do passado: um produto por uma matriz triangular.
#include <cmath>
#include <limits>

#include "autograd/ops.hpp"
#include "common.hpp"

using namespace glass;

int main() {
  tut::capitulo(13, "A média do passado");
  tut::novo(
      "misturar os vetores das posições anteriores com UMA multiplicação de matrizes (triangular), e depois com pesos do softmax.");
  tut::texto(
      "O bigrama (capítulo 12) olha só o caractere atual. O jeito mais simples de deixar a\n"
      "posição t enxergar o passado: trocar o seu vetor pela MÉDIA dos vetores das posições\n"
      "0..t. Nunca das seguintes: na hora de prever o caractere t+1, o futuro não existe.\n"
      "Exemplo: 4 posições, vetores de tamanho 2 (as linhas de x).");

  Tensor x = Tensor::from_vector({1, 0,  //
                                  0, 1,  //
                                  2, 2,  //
                                  4, 0},
                                 {4, 2});
  tut::matriz("x", x.value(), 1);

  tut::secao("1. Com um laço: a média das linhas 0..t");
  Array media_laco(Shape{4, 2});
  for (std::size_t t = 0; t < 4; ++t) {
    for (std::size_t c = 0; c < 2; ++c) {
      double soma = 0;
      for (std::size_t j = 0; j <= t; ++j) soma += x.value()(j, c);
      media_laco(t, c) = Scalar(soma / double(t + 1));
    }
  }
  tut::matriz("média com laço", media_laco);
  tut::texto("Linha 3: ([1,0] + [0,1] + [2,2] + [4,0]) / 4 = [1.75, 0.75].");

  tut::secao("2. Com uma matriz: pesos triangulares, cada linha soma 1");
  tut::texto(
      "A linha t de P · x é a soma das linhas de x pesadas pela linha t de P (capítulo 06).\n"
      "Com P[t][j] = 1/(t+1) para j <= t e 0 acima da diagonal, P · x é a média do passado:");
  const Mask futuro = causal_mask(4, 4);  // verdadeiro onde j > t (capítulo 15 a usa na atenção)
  Tensor uns = masked_fill(Tensor::ones({4, 4}), futuro, 0);  // o triângulo de uns
  Tensor P = uns / sum(uns, 1, true);                         // cada linha dividida pela sua soma
  tut::matriz("P", P.value());
  Tensor media_matriz = matmul(P, x);
  tut::matriz("P · x", media_matriz.value());
  double diferenca = 0;
  for (std::size_t i = 0; i < 8; ++i) {
    diferenca = std::max(diferenca,
                         double(std::fabs(media_matriz.value().data()[i] - media_laco.data()[i])));
  }
  std::printf("diferença máxima entre o laço e a matriz: %.6f\n", diferenca);
  tut::texto(
      "O mesmo resultado, mas numa multiplicação só: para T posições e lotes inteiros, é\n"
      "o que a biblioteca (e a BLAS por baixo) faz rápido. E a fita sabe voltar por ela.");

  tut::secao("3. Com softmax: notas, máscara, pesos");
  tut::texto(
      "Os mesmos pesos saem de um softmax: notas todas iguais (zero), -∞ acima da diagonal\n"
      "(e^(-∞) = 0), e o softmax de cada linha dá 1/(t+1) para cada posição visível.");
  const Scalar menos_infinito = -std::numeric_limits<Scalar>::infinity();
  Tensor notas = Tensor::zeros({4, 4});
  Tensor pesos = softmax(masked_fill(notas, futuro, menos_infinito));
  tut::matriz("softmax de notas iguais", pesos.value());
  tut::texto("É a matriz P de novo. A vantagem: agora as notas podem ser QUALQUER número.");

  tut::secao("4. Notas diferentes, pesos diferentes");
  tut::texto(
      "Com a nota da posição j igual a j (as mais recentes valem mais), cada linha deixa de\n"
      "ser uma média simples e vira uma média ponderada:");
  Tensor notas_j = Tensor::from_vector({0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}, {4, 4});
  Tensor pesos_j = softmax(masked_fill(notas_j, futuro, menos_infinito));
  tut::matriz("pesos com nota j", pesos_j.value());
  tut::matriz("média ponderada", matmul(pesos_j, x).value());
  tut::texto(
      "Linha 1: softmax([0, 1]) = [0.268941, 0.731059]. Cada linha continua somando 1.\n"
      "Falta só uma coisa: as notas aqui foram escolhidas à mão. Na atenção, cada posição\n"
      "CALCULA as notas a partir do conteúdo: a nota de t para j é o produto escalar de\n"
      "uma consulta Q[t] com uma chave K[j] (capítulos 14 e 15). O resto é este capítulo:\n"
      "máscara, softmax e uma multiplicação pelos vetores.");

  tut::experimente({
      "troque as notas por 10 · j: os pesos de cada linha ficam quase todos na diagonal (a posição atual);",
      "troque as notas por -j: agora a posição 0 pesa mais, e a linha 3 dá pesos [0.643914, 0.236883, 0.087144, 0.032059] e média [0.946437, 0.411171];",
      "calcule matmul(P, media_matriz): a média das médias; a linha 3 dá [1.0625, 0.5625] (confira à mão).",
  });
  tut::respostas();
  {
    Tensor pesos_10j = softmax(masked_fill(notas_j * Scalar(10), futuro, menos_infinito));
    tut::matriz("pesos com nota 10 · j", pesos_10j.value());
    Tensor pesos_menos_j = softmax(masked_fill(-notas_j, futuro, menos_infinito));
    tut::linha("pesos com nota -j, linha 3", slice(pesos_menos_j, 0, 3, 4).value());
    tut::linha("média com nota -j, linha 3", slice(matmul(pesos_menos_j, x), 0, 3, 4).value());
    tut::matriz("P · (P · x)", matmul(P, media_matriz).value());
  }
  return 0;
}
