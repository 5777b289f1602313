// Solução do exercício 19 — Os escores de uma cabeça à mão (parte 7: capítulos 32 a 35).
//
// O padrão de atenção A (n, n) de uma cabeça: A[t][j] = o peso que a posição t dá à posição j
// (cada linha soma 1; nada acima da diagonal). Escreva os dois escores dos capítulos 34 e 35,
// lendo as definições lá (ou em docs/interpretabilidade.md), sem abrir interp/head_scores.cpp:
//   escore_token_anterior(A): quanto, em média, cada posição olha para a posição logo antes;
//   escore_inducao(A, P): a sonda são P tokens repetidos (n = 2P); quanto, em média, cada
//     posição da 2ª cópia olha para o token que veio DEPOIS da ocorrência anterior do seu token.
// Cuidado com quem entra na média: a posição 0 não tem anterior; só a 2ª cópia conta.
#include "exercicios/conferir.hpp"
#include "interp/head_scores.hpp"

using namespace glass;

using Padrao = std::vector<std::vector<double>>;

static double escore_token_anterior(const Padrao& A) {
  double escore = 0;
  // --- a sua parte ---
  const std::size_t n = A.size();
  for (std::size_t t = 1; t < n; ++t) escore += A[t][t - 1];  // a posição 0 não tem anterior
  escore /= double(n - 1);
  // --- fim ---
  return escore;
}

static double escore_inducao(const Padrao& A, std::size_t P) {
  double escore = 0;
  // --- a sua parte ---
  // Na 2ª cópia, a posição t lê o mesmo token que t - P; o que veio depois dele está em t - P + 1.
  for (std::size_t t = P; t < 2 * P; ++t) escore += A[t][t - P + 1];
  escore /= double(P);
  // --- fim ---
  return escore;
}

int main() {
  exercicio::titulo(19, "Os escores de uma cabeça à mão");
  // Uma sonda "a b c d a b c d" (P = 4, n = 8) e um padrão inventado, linha a linha.
  const Padrao A = {
      {1},
      {0.5, 0.5},
      {0.2, 0.6, 0.2},
      {0.1, 0.1, 0.7, 0.1},
      {0.1, 0.6, 0.1, 0.1, 0.1},
      {0.1, 0.2, 0.5, 0.0, 0.1, 0.1},
      {0.0, 0.1, 0.1, 0.4, 0.2, 0.1, 0.1},
      {0.05, 0.05, 0.1, 0.1, 0.3, 0.2, 0.1, 0.1},
  };
  const std::size_t n = A.size(), P = 4;
  Padrao cheio(n, std::vector<double>(n, 0.0));  // as linhas completadas com zeros
  Array a = Array::from_shape({n, n});
  for (std::size_t t = 0; t < n; ++t)
    for (std::size_t j = 0; j < n; ++j) {
      cheio[t][j] = j < A[t].size() ? A[t][j] : 0.0;
      a(t, j) = Scalar(cheio[t][j]);
    }
  // À mão: token anterior (0.5 + 0.6 + 0.7 + 0.1 + 0.1 + 0.1 + 0.1) / 7 = 2.2 / 7 = 0.314286;
  // indução: A[4][1] + A[5][2] + A[6][3] + A[7][4] = 0.6 + 0.5 + 0.4 + 0.3 = 1.8, / 4 = 0.45.
  const bool certo = exercicio::conferir(
      "resposta", {escore_token_anterior(cheio), escore_inducao(cheio, P)}, {2.2 / 7, 0.45}, 1e-6);
  std::printf("da biblioteca: token anterior %.6f, indução %.6f\n", previous_token_score(a),
              induction_score(a, P));
  return exercicio::resultado(certo);
}
