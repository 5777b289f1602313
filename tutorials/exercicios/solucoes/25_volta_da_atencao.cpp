// Solução do exercício 25 — A volta de uma cabeça de atenção, à mão (parte 3: capítulos 14 a 20).
// Precisão: double
//
// A ida de uma cabeça causal (capítulo 15) já está pronta em ida(): S = Q Kᵀ / √d, a máscara
// causal com -∞, P = softmax de cada linha, O = P V. Dado G = dL/dO, escreva dL/dQ, dL/dK e
// dL/dV sem fita, como o capítulo 37 faz com um neurônio: de trás para frente, uma operação de
// cada vez. Deduza no papel antes: a volta de um produto de matrizes (capítulo 06), a do
// softmax de uma linha (exercício 11: cada saída depende da linha inteira), o que acontece nas
// posições mascaradas e onde entra o 1/√d. A referência é a fita da biblioteca, em double.
#include <cmath>
#include <limits>

#include "autograd/ops.hpp"
#include "exercicios/conferir.hpp"

using namespace glass;

// Matrizes pequenas como vetores de linhas, para as contas à mão.
using Matriz = std::vector<std::vector<double>>;

// P = softmax(mascara(Q Kᵀ / √d)) (n, n): os pesos de atenção (P[i][j] = 0 para j > i).
static Matriz ida(const Matriz& Q, const Matriz& K) {
  const std::size_t n = Q.size(), d = Q[0].size();
  Matriz P(n, std::vector<double>(n, 0.0));
  for (std::size_t i = 0; i < n; ++i) {
    double maximo = -std::numeric_limits<double>::infinity(), soma = 0;
    std::vector<double> s(i + 1);
    for (std::size_t j = 0; j <= i; ++j) {
      for (std::size_t k = 0; k < d; ++k) s[j] += Q[i][k] * K[j][k];
      s[j] /= std::sqrt(double(d));
      maximo = std::max(maximo, s[j]);
    }
    for (std::size_t j = 0; j <= i; ++j) soma += (P[i][j] = std::exp(s[j] - maximo));
    for (std::size_t j = 0; j <= i; ++j) P[i][j] /= soma;
  }
  return P;
}

// dL/dQ, dL/dK e dL/dV (cada um (n, d)), em sequência, para O = P V e dL/dO = G.
static std::vector<double> volta_a_mao(const Matriz& Q, const Matriz& K, const Matriz& V,
                                       const Matriz& G) {
  const Matriz P = ida(Q, K);
  // --- a sua parte ---
  const std::size_t n = Q.size(), d = Q[0].size();
  // O = P V: dV = Pᵀ G e dP = G Vᵀ (capítulo 06).
  Matriz dV(n, std::vector<double>(d, 0.0)), dP(n, std::vector<double>(n, 0.0));
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      for (std::size_t k = 0; k < d; ++k) {
        dV[j][k] += P[i][j] * G[i][k];
        dP[i][j] += G[i][k] * V[j][k];
      }
    }
  }
  // P = softmax(S) por linha: dS_ij = P_ij (dP_ij - Σ_k P_ik dP_ik). Nas posições
  // mascaradas P = 0, então dS = 0: a máscara não deixa o gradiente passar.
  Matriz dS(n, std::vector<double>(n, 0.0));
  for (std::size_t i = 0; i < n; ++i) {
    double linha = 0;
    for (std::size_t k = 0; k < n; ++k) linha += P[i][k] * dP[i][k];
    for (std::size_t j = 0; j < n; ++j) {
      dS[i][j] = P[i][j] * (dP[i][j] - linha);  // a volta do softmax (exercício 11)
    }
  }
  const double e = 1 / std::sqrt(double(d));  // S = Q Kᵀ · e
  // S = e Q Kᵀ: dQ = e dS K e dK = e dSᵀ Q.
  Matriz dQ(n, std::vector<double>(d, 0.0)), dK(n, std::vector<double>(d, 0.0));
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      for (std::size_t k = 0; k < d; ++k) {
        dQ[i][k] += e * dS[i][j] * K[j][k];
        dK[j][k] += e * dS[i][j] * Q[i][k];
      }
    }
  }
  std::vector<double> r;
  for (const Matriz* m : {&dQ, &dK, &dV}) {
    for (const auto& l : *m) r.insert(r.end(), l.begin(), l.end());
  }
  return r;
  // --- fim ---
}

static Tensor tensor_de(const Matriz& m, bool requires_grad) {
  std::vector<Scalar> v;
  for (const auto& linha : m) v.insert(v.end(), linha.begin(), linha.end());
  return Tensor::from_vector(v, {m.size(), m[0].size()}, requires_grad);
}

// A referência: a mesma ida com as ops da biblioteca, e a fita.
static std::vector<double> volta_pela_fita(const Matriz& Q, const Matriz& K, const Matriz& V,
                                           const Matriz& G) {
  Tensor q = tensor_de(Q, true), k = tensor_de(K, true), v = tensor_de(V, true);
  const std::size_t n = Q.size(), d = Q[0].size();
  Tensor S = matmul(q, transpose(k, 0, 1)) / Scalar(std::sqrt(double(d)));
  Tensor P = softmax(masked_fill(S, causal_mask(n, n), -std::numeric_limits<Scalar>::infinity()));
  sum(matmul(P, v) * tensor_de(G, false)).backward();
  std::vector<double> r;
  for (const Tensor* t : {&q, &k, &v}) r.insert(r.end(), t->grad().begin(), t->grad().end());
  return r;
}

int main() {
  exercicio::titulo(25, "A volta de uma cabeça de atenção, à mão");
  const Matriz Q = {{1, 0.5, -1, 0}, {0.2, -0.3, 0.8, 1}, {-0.5, 1, 0.4, -0.2}};
  const Matriz K = {{0.3, -1, 0.5, 0.7}, {1, 0.2, -0.4, 0.1}, {-0.6, 0.3, 0.9, -1}};
  const Matriz V = {{1, 2, 0, -1}, {0.5, -1, 1, 0}, {-2, 0.5, 0.25, 1}};
  const Matriz G = {{1, 0, -1, 0.5}, {0.3, 2, -0.5, 1}, {-1, 0.4, 1.5, -0.2}};
  const bool certo =
      exercicio::conferir("resposta", volta_a_mao(Q, K, V, G), volta_pela_fita(Q, K, V, G), 1e-9);
  return exercicio::resultado(certo);
}
