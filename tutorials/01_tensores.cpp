// Capítulo 01 — Tensores e formas (shapes).
// Build: cmake --build build --target 01_tensores ; run: build/tutorials/01_tensores
#include "autograd/ops.hpp"
#include "common.hpp"

using namespace glass;

int main() {
  tut::capitulo(1, "Tensores e formas");
  tut::novo("tudo. Começamos pelo objeto que carrega os números: o Tensor.");
  tut::texto(
      "Um tensor é uma tabela de números com uma forma (shape): (6,) é uma lista,\n"
      "(2, 3) são 2 linhas de 3 colunas, (B, T, d_model) é o que o modelo carrega por dentro.\n"
      "Na memória os números ficam numa fila só, linha após linha (ordem row-major):\n"
      "a forma diz apenas como ler essa fila.");

  tut::secao("Uma lista de 6 números vista como (2, 3)");
  Tensor a = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3});
  tut::forma("forma de a", a.value());
  std::printf("eixos: %zu   elementos: %zu\n", a.dim(), a.size());
  tut::matriz("a", a.value(), 1);

  tut::secao("Mesma fila, outras formas");
  Tensor b = reshape(a, {3, 2});
  tut::forma("reshape para", b.value());
  tut::matriz("b", b.value(), 1);
  tut::texto("reshape não mexe na fila: só muda onde cada linha começa.");
  Tensor t = transpose(a, 0, 1);
  tut::forma("transposta", t.value());
  tut::matriz("t", t.value(), 1);
  tut::texto("Já a transposta troca linhas por colunas: a fila muda de ordem (1 4 2 5 3 6).");

  tut::secao("Somar ao longo de um eixo faz esse eixo sumir");
  tut::linha("soma no eixo 0", sum(a, 0).value(), 1);
  tut::linha("soma no eixo 1", sum(a, 1).value(), 1);
  tut::forma("forma com keepdim", sum(a, 1, true).value());
  tut::linha("soma de tudo", sum(a).value(), 1);
  std::printf("item() do total: %.1f\n", sum(a).item());
  tut::linha("média de tudo", mean(a).value(), 6);

  tut::secao("Formas erradas viram mensagens claras");
  try {
    Tensor::from_vector({1, 2, 3, 4, 5}, {2, 3});
  } catch (const std::exception& e) {
    std::printf("erro: %s\n", e.what());
  }
  try {
    reshape(a, {4, 2});
  } catch (const std::exception& e) {
    std::printf("erro: %s\n", e.what());
  }

  tut::experimente({
      "troque {2, 3} por {3, 2} ou {6} e veja a matriz mudar sem mudar a fila;",
      "some no eixo -1 (o último) e compare com o eixo 1;",
      "crie um tensor (2, 3, 4) com Tensor::zeros e olhe dim() e size().",
  });
  tut::respostas();
  tut::matriz("a como (3, 2)", reshape(a, {3, 2}).value(), 1);
  tut::linha("a como (6,)", reshape(a, {6}).value(), 1);
  std::printf("  (a fila é a mesma nas duas: 1 2 3 4 5 6)\n");
  tut::linha("soma no eixo -1", sum(a, -1).value(), 1);
  std::printf("  (o eixo -1 de uma matriz é o eixo 1: o mesmo resultado)\n");
  const Tensor cubo = Tensor::zeros({2, 3, 4});
  std::printf("zeros (2, 3, 4): dim() = %zu, size() = %zu (2 * 3 * 4)\n", cubo.dim(), cubo.size());
  return 0;
}
