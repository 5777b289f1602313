// Exercício 26 — Um bloco Q4_0 byte a byte (parte 9: capítulo 40).
//
// Escreva os 18 bytes de um bloco Q4_0 de 32 pesos, como o capítulo 40 os fez à mão: m = o x
// de maior |x| (com o sinal), d = m / -8 (em float), os 2 bytes de d em fp16 (fp32_to_fp16,
// little-endian: o byte baixo primeiro), cada q = min(15, trunc(x · (1/d) + 8.5)) e os 16 bytes
// de nibbles. Cuidado com o lugar de cada nibble: o byte j NÃO guarda os elementos vizinhos
// 2j e 2j + 1. O segundo bloco tem o extremo positivo: d sai negativo.
#include <cstdint>
#include <string>
#include <vector>

#include "exercicios/conferir.hpp"
#include "export/quantize.hpp"

using namespace glass;

// Os 18 bytes do bloco Q4_0 de x[0..32).
static std::string bloco_q4_0(const std::vector<float>& x) {
  // --- a sua parte ---
  // TODO: escreva aqui. (Uma solução: exercicios/solucoes/26_nibbles_a_mao.cpp.)
  (void)x;
  return std::string(18, '\0');
  // --- fim ---
}

static std::vector<double> como_numeros(const std::string& b) {
  std::vector<double> v;
  for (char c : b) v.push_back(static_cast<std::uint8_t>(c));
  return v;
}

int main() {
  exercicio::titulo(26, "Um bloco Q4_0 byte a byte");
  const std::vector<float> negativo = {0.3f,  -0.1f, 0.7f,  -2.4f,  0.05f, 1.2f,   -0.6f, 0.9f,
                                       -1.5f, 0.2f,  0.0f,  -0.35f, 1.8f,  -0.95f, 0.47f, 2.1f,
                                       -0.2f, 0.65f, 1.1f,  -0.8f,  0.16f, -1.25f, 0.55f, -0.05f,
                                       1.4f,  -1.9f, 0.85f, 0.1f,   -0.4f, 2.0f,   -0.7f, 0.25f};
  std::vector<float> positivo(negativo);
  for (float& v : positivo) v = -v;
  std::vector<double> resposta, esperado;
  const std::vector<float>* blocos[] = {&negativo, &positivo};
  for (const std::vector<float>* x : blocos) {
    for (double b : como_numeros(bloco_q4_0(*x))) resposta.push_back(b);
    for (double b : como_numeros(quantize(WeightType::q4_0, x->data(), x->size())))
      esperado.push_back(b);
  }
  const bool certo = exercicio::conferir("resposta", resposta, esperado, 0);
  return exercicio::resultado(certo);
}
