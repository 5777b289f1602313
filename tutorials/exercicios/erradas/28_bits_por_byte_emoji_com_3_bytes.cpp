// Uma resposta ERRADA do exercício 28 — Bits por byte, de tokenizadores diferentes: o UTF-8 contado
// só até 3 bytes (um code point acima de U+FFFF, como o emoji, também ocupa 4). O exercício
// a reprova (tests/cli/tutorials_test.cpp confere).
//
// O capítulo 42 compara um modelo de caracteres e um de BPE em bits por byte. Deduza a conta:
// dada a perda média de um modelo em nats por token, quantos tokens ele previu e o texto
// (em code points, como load_text o devolve), quantos bits por byte? Você precisa dos bytes do
// texto em UTF-8, contados a partir dos code points, sem chamar u32_to_utf8 (capítulo 10):
// quantos bytes ocupa um code point abaixo de U+0080? E um abaixo de U+0800, de U+10000, e
// acima? E quantos bits vale um nat? Depois preveja: no texto com acentos, quem ganha, o
// modelo de caracteres ou o de BPE, e por que a perda por token não responde isso?
#include <cmath>
#include <string>

#include "data/text.hpp"
#include "exercicios/conferir.hpp"
#include "train/trainer.hpp"

using namespace glass;

// Bits por byte de `texto` para um modelo que perdeu `perda` nats por token em `tokens` tokens.
static double bits_por_byte_a_mao(double perda, std::size_t tokens, const std::u32string& texto) {
  // --- a sua parte ---
  std::size_t bytes = 0;
  for (char32_t c : texto) bytes += c < 0x80 ? 1 : c < 0x800 ? 2 : 3;
  return perda * double(tokens) / (double(bytes) * std::log(2.0));
  // --- fim ---
}

int main() {
  exercicio::titulo(28, "Bits por byte, de tokenizadores diferentes");
  // 1) só ASCII; 2) e 3) o mesmo texto com acentos, travessão e um emoji, lido por um modelo de
  // caracteres (um token por code point) e por um de BPE (11 tokens).
  const std::u32string ascii = U"Capitu", acentos = U"coração de Capitu — olhos de ressaca 🌊";
  const std::vector<double> resposta = {bits_por_byte_a_mao(2.0, ascii.size(), ascii),
                                        bits_por_byte_a_mao(1.7, acentos.size(), acentos),
                                        bits_por_byte_a_mao(3.9, 11, acentos)};
  // A conta da biblioteca (train/trainer.hpp, a de `glass train` e `glass eval`), com os bytes
  // do texto codificado.
  const std::vector<double> esperado = {
      bits_per_byte(2.0, ascii.size(), u32_to_utf8(ascii).size()),
      bits_per_byte(1.7, acentos.size(), u32_to_utf8(acentos).size()),
      bits_per_byte(3.9, 11, u32_to_utf8(acentos).size())};
  const bool certo = exercicio::conferir("resposta", resposta, esperado, 1e-6);
  std::printf("no texto com acentos, por token: caracteres %.1f nats, BPE %.1f nats\n", 1.7, 3.9);
  std::printf("por byte, o menor na sua resposta: %s\n",
              resposta[1] < resposta[2] ? "caracteres" : "BPE");
  return exercicio::resultado(certo);
}
