// Solução do exercício 24 — A razão atualização/peso do primeiro passo, prevista (parte 5: capítulo 39).
//
// O capítulo 39 mede log10(|Δp| / |p|) de cada matriz durante o treino. Preveja-o para o
// PRIMEIRO passo do AdamW (momentos em zero, t = 1), sem rodar o otimizador: dados a matriz W,
// o seu gradiente G, o lr e o weight decay wd, quanto vale log10(|W_depois - W| / |W|)?
// Deduza no papel, a partir das fórmulas do capítulo 25: quanto valem m̂ e v̂ no passo 1, e o
// passo de cada elemento? (Ignore o eps = 1e-8: ele muda a resposta só na oitava casa. Olhe
// bem o G: nem todo elemento tem gradiente.) |A| é a norma de Frobenius: a raiz da soma dos
// quadrados.
#include <cmath>

#include "exercicios/conferir.hpp"
#include "train/adamw.hpp"

using namespace glass;

// log10(|ΔW| / |W|) do primeiro passo do AdamW (beta1 0.9, beta2 0.99, decaimento desacoplado).
static double razao_prevista(const std::vector<double>& W, const std::vector<double>& G, double lr,
                             double wd) {
  // --- a sua parte ---
  // No passo 1, m̂ = g e v̂ = g² (a correção de viés desfaz o 1 - beta): o passo é
  // g / (|g| + eps) = o sinal de g, ±1 por elemento, e 0 onde g = 0, qualquer que seja o
  // tamanho de g. Antes dele, o decaimento desacoplado tira lr · wd · W. Então
  // ΔW = -lr (wd W + sinal(G)).
  double dif = 0, peso = 0;
  for (std::size_t i = 0; i < W.size(); ++i) {
    const double passo = G[i] > 0 ? 1.0 : (G[i] < 0 ? -1.0 : 0.0);
    const double delta = -lr * wd * W[i] - lr * passo;
    dif += delta * delta;
    peso += W[i] * W[i];
  }
  return std::log10(std::sqrt(dif / peso));
  // --- fim ---
}

// O mesmo, medido: um passo da classe AdamW da biblioteca numa matriz 2×3.
static double razao_medida(const std::vector<double>& W, const std::vector<double>& G, double lr,
                           double wd) {
  std::vector<Scalar> w(W.begin(), W.end()), g(G.begin(), G.end());
  Tensor p = Tensor::from_vector(w, {2, 3}, true);
  p.grad() = Tensor::from_vector(g, {2, 3}).value();
  AdamWConfig c;
  c.weight_decay = wd;
  AdamW otimizador({{"w", p}}, c);
  otimizador.step(lr);
  double dif = 0, peso = 0;
  for (std::size_t i = 0; i < W.size(); ++i) {
    dif += std::pow(double(p.value().data()[i]) - W[i], 2);
    peso += W[i] * W[i];
  }
  return std::log10(std::sqrt(dif / peso));
}

int main() {
  exercicio::titulo(24, "A razão atualização/peso do primeiro passo, prevista");
  const std::vector<double> W = {0.5, -1, 2, 0.25, -0.5, 1};
  // Gradientes de tamanhos muito diferentes, e um elemento sem gradiente.
  const std::vector<double> G1 = {0.001, -3, 40, 0, 0.5, -0.02};
  const std::vector<double> G2 = {1, 1, 1, 1, 1, 1};
  const std::vector<double> resposta = {razao_prevista(W, G1, 1e-3, 0.1),
                                        razao_prevista(W, G1, 1e-2, 0),
                                        razao_prevista(W, G2, 1e-3, 0)};
  const std::vector<double> medida = {razao_medida(W, G1, 1e-3, 0.1), razao_medida(W, G1, 1e-2, 0),
                                      razao_medida(W, G2, 1e-3, 0)};
  const bool certo = exercicio::conferir("resposta", resposta, medida, 1e-4);
  return exercicio::resultado(certo);
}
