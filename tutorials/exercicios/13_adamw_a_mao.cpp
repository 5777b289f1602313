// Exercício 13 — Dois passos do AdamW à mão (parte 5: capítulos 25 a 30).
//
// Escreva um passo do AdamW sobre números soltos, como o capítulo 25 e docs/treino.md o
// descrevem — sem abrir train/adamw.cpp: o decaimento desacoplado do peso (só se `decai`), as
// duas médias móveis m e v, a correção de viés do passo t (t = 1 no primeiro passo) e o passo.
// O programa dá dois passos numa matriz 2×2 e compara com os valores feitos à mão (e imprime
// os da classe AdamW da biblioteca, para você comparar).
#include <cmath>

#include "exercicios/conferir.hpp"
#include "train/adamw.hpp"

using namespace glass;

struct Momentos {
  std::vector<double> m, v;  // começam em zero, do tamanho de p
};

// Um passo (o t-ésimo) do AdamW em p, com gradiente g e taxa lr; atualiza p e os momentos.
static void passo_adamw(std::vector<double>& p, const std::vector<double>& g, Momentos& e, long t,
                        double lr, const AdamWConfig& c, bool decai) {
  // --- a sua parte ---
  // TODO: escreva aqui. (Uma solução: exercicios/solucoes/13_adamw_a_mao.cpp.)
  // --- fim ---
}

int main() {
  exercicio::titulo(13, "Dois passos do AdamW à mão");
  const std::vector<double> inicio = {1.0, -2.0, 0.5, 3.0};
  const std::vector<std::vector<double>> gradientes = {{0.1, -0.2, 0.0, 1.0},
                                                       {0.3, 0.1, -0.5, 1.0}};
  const double lr = 0.1;
  const AdamWConfig c;  // betas (0.9, 0.99), eps 1e-8, weight decay 0.1

  std::vector<double> p = inicio;
  Momentos e{std::vector<double>(4, 0.0), std::vector<double>(4, 0.0)};
  for (long t = 1; t <= 2; ++t) passo_adamw(p, gradientes[t - 1], e, t, lr, c, /*decai=*/true);

  Tensor matriz = Tensor::from_vector({1.0f, -2.0f, 0.5f, 3.0f}, {2, 2}, true);
  AdamW biblioteca({{"matriz", matriz}}, c);
  for (const auto& g : gradientes) {
    for (std::size_t i = 0; i < 4; ++i) matriz.grad().data()[i] = Scalar(g[i]);
    biblioteca.step(lr);
  }
  tut::linha("AdamW da biblioteca", matriz.value());
  // À mão (Python, double). O último número: g = 1 nos dois passos, então m̂ = v̂ = 1 e cada
  // passo anda exatamente lr depois do decaimento: 3·0.99 - 0.1 = 2.87; 2.87·0.99 - 0.1 = 2.7413.
  // O terceiro: g = 0 no passo 1 (m = v = 0, não anda), -0.5 no 2: 0.5·0.99² + 0.074246.
  const bool certo =
      exercicio::conferir("resposta", p, {0.789488, -1.834530, 0.564296, 2.741300}, 2e-6);
  return exercicio::resultado(certo);
}
