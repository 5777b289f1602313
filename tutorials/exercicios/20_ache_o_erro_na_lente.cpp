// Exercício 20 — Ache o erro na lente de logits (parte 7: capítulos 32 a 35).
//
// A função abaixo deveria ler o fluxo residual x (d_model números, uma posição) como o
// capítulo 32: os logits que o modelo daria se terminasse ali. Ela dá números, mas errados:
// rode e compare com a lente da biblioteca e, no último ponto, com os logits do próprio modelo
// (que a lente tem de reproduzir). Ache o erro e conserte, sem abrir interp/logit_lens.cpp.
// Há um conserto que PARECE certo e não é: confira cada peça de Decoder::forward depois dos
// blocos (nn/decoder.cpp).
#include <cmath>

#include "exercicios/conferir.hpp"
#include "interp/logit_lens.hpp"

using namespace glass;

static std::vector<double> lente(const Decoder& modelo, const Scalar* x) {
  const std::size_t d = modelo.config().d_model, V = modelo.config().vocab_size;
  const Array& w_out = modelo.output.weight.value();  // (V, d_model)
  std::vector<double> logits(V, 0.0);
  // --- a sua parte ---
  // TODO: ache o erro nestas linhas. (Uma solução: exercicios/solucoes/20_ache_o_erro_na_lente.cpp.)
  for (std::size_t v = 0; v < V; ++v)
    for (std::size_t i = 0; i < d; ++i) logits[v] += double(w_out(v, i)) * x[i];
  // --- fim ---
  return logits;
}

int main() {
  exercicio::titulo(20, "Ache o erro na lente de logits");
  // Um modelo pequeno recém-criado (2 camadas, d_model 64, 20 ids), com o ganho da norma final
  // mudado para longe de 1, como fica depois de um treino.
  ModelConfig cfg;
  cfg.vocab_size = 20;
  cfg.d_model = 64;
  cfg.n_layers = 2;
  cfg.n_heads = 4;
  cfg.n_kv_heads = 2;
  cfg.ffn_hidden = 176;
  cfg.context_length = 16;
  Decoder modelo(cfg, 3);
  Array& ganho = modelo.norm.weight.value();
  for (std::size_t i = 0; i < cfg.d_model; ++i) ganho(i) = Scalar(1 + 0.5 * std::sin(double(i)));
  const std::vector<std::int32_t> ids = {1, 5, 9, 2, 7, 7, 3, 11};
  const LogitLens da_biblioteca = logit_lens(modelo, ids, 1);
  Tracer tracer;
  const Array logits_modelo = run_with_hooks(modelo, as_batch(ids), tracer);  // (1, T, V)
  const std::size_t T = ids.size(), V = cfg.vocab_size, d = cfg.d_model;

  bool certo = true;
  // Cada ponto do fluxo, na última posição, contra a lente da biblioteca.
  for (std::size_t s = 0; s < da_biblioteca.points.size(); ++s) {
    const Array& fluxo = tracer.get(da_biblioteca.points[s]);  // (T, d_model)
    const std::vector<double> minha = lente(modelo, fluxo.data() + (T - 1) * d);
    std::vector<double> esperado(V);
    for (std::size_t v = 0; v < V; ++v) esperado[v] = da_biblioteca.logits(s, T - 1, v);
    const std::vector<double> tres(minha.begin(), minha.begin() + 3);
    const std::vector<double> tres_esperado(esperado.begin(), esperado.begin() + 3);
    bool igual = true;
    for (std::size_t v = 0; v < V; ++v) igual = igual && std::fabs(minha[v] - esperado[v]) <= 1e-4;
    std::printf("%s, 3 primeiros logits:\n", da_biblioteca.points[s].c_str());
    exercicio::conferir(s + 1 == da_biblioteca.points.size() ? "resposta" : "  a sua lente", tres,
                        tres_esperado, 1e-4);
    certo = certo && igual;
  }
  // O último ponto é o modelo: a lente tem de dar os logits dele.
  const Array& ultimo = tracer.get(da_biblioteca.points.back());
  const std::vector<double> minha = lente(modelo, ultimo.data() + (T - 1) * d);
  double dif = 0;
  for (std::size_t v = 0; v < V; ++v)
    dif = std::max(dif, std::fabs(minha[v] - double(logits_modelo.data()[(T - 1) * V + v])));
  std::printf("diferença máxima para os logits do modelo no último ponto: %.6f\n", dif);
  certo = certo && dif <= 1e-4;
  return exercicio::resultado(certo);
}
