// Uma resposta ERRADA do exercício 07 — Contar os parâmetros de um Decoder: conta wk e wv com
// d_model colunas de saída, como se houvesse tantas cabeças K/V quanto de consulta (esquece o GQA).
// O exercício tem de reprová-la (tests/cli/tutorials_test.cpp confere).
//
// Escreva o número de parâmetros de um Decoder a partir da ModelConfig, peça por peça
// (capítulo 24), e compare com Decoder::num_parameters(). O modelo tem a configuração
// pequena do capítulo 27 (tut::config_pequena), com um vocabulário de 70 caracteres.
#include "exercicios/conferir.hpp"
#include "nn/decoder.hpp"
#include "treino_rapido.hpp"

using namespace glass;

static double contar(const ModelConfig& c) {
  // --- a sua parte ---
  const double d = double(c.d_model), kv = double(c.n_kv_heads * c.head_dim());
  (void)kv;
  const double atencao = 4 * d * d;                      // o erro: wk e wv (d, d), sem o GQA
  const double swiglu = 3 * double(c.ffn_hidden) * d;    // w1, w2, w3
  const double normas = 2 * d;                           // attention_norm, ffn_norm
  const double fora = 2 * double(c.vocab_size) * d + d;  // embeddings, saída, norma final
  return double(c.n_layers) * (atencao + swiglu + normas) + fora;
  // --- fim ---
}

int main() {
  exercicio::titulo(7, "Contar os parâmetros de um Decoder");
  const ModelConfig cfg = tut::config_pequena(70);
  const Decoder modelo(cfg, 7);
  std::printf("Decoder::num_parameters(): %zu\n", modelo.num_parameters());
  // À mão: por bloco 2·64·64 + 2·32·64 + 3·176·64 + 2·64 = 46208; 2 blocos + 2·70·64 + 64.
  const bool certo =
      exercicio::conferir("resposta", {contar(cfg)}, {double(modelo.num_parameters())}, 0) &&
      modelo.num_parameters() == 101440;
  return exercicio::resultado(certo);
}
