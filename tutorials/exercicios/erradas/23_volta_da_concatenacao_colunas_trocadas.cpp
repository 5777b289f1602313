// Uma resposta ERRADA do exercício 23 — A volta da concatenação de embeddings: lê o pedaço da
// posição j nas colunas j, j + n, ... (como se x fosse (B, d, n)). O exercício a reprova
// (tests/cli/tutorials_test.cpp confere).
//
// No MLP do capítulo 38, o contexto (B, n) de ids vira embedding(C, contexto) (B, n, d), e os n
// vetores de cada linha são postos lado a lado: x (B, n·d). Dado o gradiente G = dL/dx (B, n·d),
// escreva dL/dC (V, d) sem fita. Pense no papel antes: que pedaço de G vai para que linha de C?
// E se o mesmo caractere aparece duas vezes no contexto (ou em duas linhas do lote)?
#include "autograd/ops.hpp"
#include "exercicios/conferir.hpp"

using namespace glass;

// contexto (B, n) de ids em [0, V); G (B, n·d) -> dL/dC (V, d).
static Array grad_C_a_mao(const Ids& contexto, const Array& G, std::size_t V, std::size_t d) {
  Array gC = Tensor::zeros({V, d}).value();
  // --- a sua parte ---
  const std::size_t B = contexto.shape()[0], n = contexto.shape()[1];
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t j = 0; j < n; ++j) {
      for (std::size_t k = 0; k < d; ++k) gC(contexto(b, j), k) += G(b, k * n + j);  // o erro
    }
  }
  // --- fim ---
  return gC;
}

int main() {
  exercicio::titulo(23, "A volta da concatenação de embeddings");
  const std::size_t V = 5, d = 2, n = 3, B = 2;
  // O caractere 1 aparece duas vezes na primeira linha; o 3, nas duas linhas; 0 e 4, em nenhuma.
  const Ids contexto = {{1, 3, 1}, {2, 3, 2}};
  Rng rng(7);
  Tensor C = Tensor::randn({V, d}, 1.0, rng, true);
  const Tensor G = Tensor::from_vector({1, 2, 3, 4, 5, 6, -1, 0.5f, 0.25f, -2, 10, 20}, {B, n * d});
  // A referência: L = soma(x · G) tem dL/dx = G; a fita dá dL/dC.
  Tensor x = reshape(embedding(C, contexto), {B, n * d});
  sum(x * G).backward();
  const bool certo =
      exercicio::conferir("resposta", exercicio::valores(grad_C_a_mao(contexto, G.value(), V, d)),
                          exercicio::valores(C.grad()));
  return exercicio::resultado(certo);
}
