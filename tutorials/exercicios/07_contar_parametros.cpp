// Exercício 07 — Contar os parâmetros de um Decoder (parte 4: capítulos 21 a 24).
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
  // TODO: escreva aqui. (Uma solução: exercicios/solucoes/07_contar_parametros.cpp.)
  return 0;
  // --- fim ---
}

int main() {
  exercicio::titulo(7, "Contar os parâmetros de um Decoder");
  const ModelConfig cfg = tut::config_pequena(70);
  const Decoder modelo(cfg, 7);
  std::printf("Decoder::num_parameters(): %zu\n", modelo.num_parameters());
  const bool certo =
      exercicio::conferir("resposta", {contar(cfg)}, {double(modelo.num_parameters())}, 0) &&
      modelo.num_parameters() == 101440;
  return exercicio::resultado(certo);
}
