// Solução do exercício 29 — A atribuição direta aos logits à mão (parte 7: capítulo 43).
//
// O fluxo residual que entra na RMSNorm final é a soma de partes (capítulo 43): aqui, em
// d_model = 4, os embeddings, duas cabeças (cada uma já passada pela sua fatia de W_O) e um MLP.
// Depois da norma, o logit do alvo é W_out[alvo] · (x · r · g), com x = a soma das partes,
// r = 1 / sqrt(média(x²) + eps) e g o ganho da norma. Escreva a parte de cada componente no
// logit (a sua "atribuição direta") de modo que as quatro somem o logit do modelo.
// Deduza antes, no papel: qual r entra na parte de cada componente? (As partes foram escolhidas
// para as contas saírem redondas: x e r saem de cabeça.) Preveja também qual parte empurra o
// alvo para cima, qual para baixo e qual não o move.
#include <cmath>

#include "exercicios/conferir.hpp"
#include "interp/logit_attribution.hpp"

using namespace glass;

using Vetor = std::vector<double>;

// A parte de cada uma das `partes` (cada uma um vetor de d_model números) no logit do alvo,
// dados o ganho g da RMSNorm final, o seu eps e a linha u = W_out[alvo].
static Vetor partes_do_logit(const std::vector<Vetor>& partes, const Vetor& g, double eps,
                             const Vetor& u) {
  Vetor r(partes.size(), 0.0);
  // --- a sua parte ---
  // A escala r é a da SOMA x, a mesma para todas as partes: a norma age sobre o fluxo
  // inteiro, e congelar r no valor da passada torna o logit linear em x. Aqui x = [2, 2, 2, 2],
  // média(x²) = 4, r = 1/2 (menos 6e-7 do eps); u · g · r = [0.5, -1, 0.25, 0.5], e as partes
  // valem 0.5, -1, 1 e 0: a cabeça B empurra o alvo para cima, a A para baixo, o MLP não o move.
  const std::size_t d = g.size();
  Vetor x(d, 0.0);
  for (const Vetor& p : partes)
    for (std::size_t i = 0; i < d; ++i) x[i] += p[i];
  double media = 0;
  for (double v : x) media += v * v / double(d);
  const double escala = 1 / std::sqrt(media + eps);
  for (std::size_t k = 0; k < partes.size(); ++k)
    for (std::size_t i = 0; i < d; ++i) r[k] += partes[k][i] * u[i] * g[i] * escala;
  // --- fim ---
  return r;
}

int main() {
  exercicio::titulo(29, "A atribuição direta aos logits à mão");
  const std::vector<Vetor> partes = {
      {1, 0, 2, -1},    // embeddings
      {0.5, 1, -1, 0},  // cabeça A
      {-0.5, 0, 1, 2},  // cabeça B
      {1, 1, 0, 1},     // MLP
  };
  const Vetor g = {1, 2, 1, 0.5}, u = {1, -1, 0.5, 2};
  const double eps = 1e-5;
  const Vetor resposta = partes_do_logit(partes, g, eps, u);

  // A conferência: as partes pela biblioteca (interp::direct_effects, com r = rms_scale da soma)
  // e o logit do modelo, W_out[alvo] · RMSNorm(soma), calculado inteiro.
  const std::size_t d = g.size();
  Array P = Array::from_shape({partes.size(), d}), U = Array::from_shape({d}),
        G = Array::from_shape({d}), x = Array::from_shape({d});
  for (std::size_t i = 0; i < d; ++i) {
    U(i) = Scalar(u[i]);
    G(i) = Scalar(g[i]);
    x(i) = 0;
    for (std::size_t k = 0; k < partes.size(); ++k) {
      P(k, i) = Scalar(partes[k][i]);
      x(i) += Scalar(partes[k][i]);
    }
  }
  const double r = rms_scale(x, eps);
  const Vetor esperado = exercicio::valores(direct_effects(P, U, G, r));
  double logit = 0;
  for (std::size_t i = 0; i < d; ++i) logit += u[i] * double(x(i)) * r * g[i];
  double soma = 0;
  for (double v : resposta) soma += v;
  std::printf("logit do modelo: %.6f; soma das suas partes: %.6f\n", logit, soma);
  const bool certo = exercicio::conferir("resposta", resposta, esperado, 1e-5);
  return exercicio::resultado(certo && std::fabs(soma - logit) < 1e-5);
}
