// Capítulo 40 — Quantização: os blocos Q8_0 e Q4_0 do llama.cpp, à mão e pela biblioteca.
// (Lê-se depois do capítulo 27: usa só a ideia de pesos treinados e de perda em nats.)
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "common.hpp"
#include "export/quantize.hpp"

using namespace glass;

// A linha de 32 pesos do capítulo (um bloco): números de duas casas, o de maior |x| é -1.27.
static const std::vector<float> kLinha = {
    0.12f,  -0.53f,  0.97f,  -1.27f, 0.05f,  0.33f, -0.08f, 0.61f,  -0.44f, 0.20f, 0.004f,
    -0.71f, 0.88f,   -0.15f, 0.26f,  -0.99f, 0.47f, 0.02f,  -0.36f, 0.74f,  1.21f, -0.62f,
    0.09f,  -0.006f, 0.55f,  -0.27f, 0.31f,  1.10f, -0.83f, 0.16f,  -0.02f, 0.68f};

// Ganhos de uma RMSNorm (32 canais): todos perto de 1, como ficam depois do treino.
static const std::vector<float> kGanhos = {0.96f, 1.03f, 0.91f, 1.08f, 0.99f, 1.12f, 0.94f, 1.01f,
                                           0.88f, 1.05f, 0.97f, 1.15f, 0.93f, 1.02f, 0.98f, 1.09f,
                                           0.90f, 1.06f, 0.95f, 1.00f, 1.11f, 0.92f, 1.04f, 0.97f,
                                           0.89f, 1.07f, 1.03f, 0.96f, 1.13f, 0.94f, 1.01f, 0.99f};

// a · b em float, arredondado aqui: fora de linha, o compilador não pode fundi-lo com a soma
// seguinte numa só instrução (FMA), que arredondaria uma vez onde o ggml arredonda duas.
[[gnu::noinline]] static float vezes(float a, float b) { return a * b; }

// O número que os 2 bytes de uma escala fp16 guardam.
static float escala_fp16(float d) { return fp16_to_fp32(fp32_to_fp16(d)); }

static void bytes_em_hex(const char* rotulo, const std::string& b) {
  std::printf("%s:", rotulo);
  for (std::size_t i = 0; i < b.size(); ++i)
    std::printf("%s%02x", i == 2 ? "  " : " ",
                static_cast<unsigned>(static_cast<std::uint8_t>(b[i])));
  std::printf("\n");
}

// Q8_0 à mão: d = max|x| / 127, q = round(x / d). Devolve os 34 bytes; q em `q`.
static std::string q8_0_a_mao(const std::vector<float>& x, std::vector<int>& q, float& d) {
  float amax = 0;
  for (float v : x) amax = std::max(amax, std::fabs(v));
  d = amax / 127;
  const float id = d != 0 ? 1 / d : 0;  // x / d é x · (1/d), como no ggml
  const std::uint16_t d16 = fp32_to_fp16(d);
  std::string b = {static_cast<char>(d16 & 0xFF), static_cast<char>(d16 >> 8)};
  q.clear();
  for (float v : x) {
    q.push_back(static_cast<int>(std::roundf(v * id)));  // metades para longe do zero
    b += static_cast<char>(static_cast<std::int8_t>(q.back()));
  }
  return b;
}

// Q4_0 à mão: m = o x de maior |x|, d = m / -8, q = min(15, trunc(x / d + 8.5)); o byte j guarda
// q[j] no nibble baixo e q[j + 16] no alto. Devolve os 18 bytes; q em `q`.
static std::string q4_0_a_mao(const std::vector<float>& x, std::vector<int>& q, float& d) {
  float amax = 0, m = 0;
  for (float v : x)
    if (std::fabs(v) > amax) {
      amax = std::fabs(v);
      m = v;
    }
  d = m / -8;
  const float id = d != 0 ? 1 / d : 0;
  q.clear();
  for (float v : x)
    q.push_back(std::min(
        15, static_cast<int>(static_cast<std::int8_t>(vezes(v, id) + 8.5f))));  // o cast trunca
  const std::uint16_t d16 = fp32_to_fp16(d);
  std::string b = {static_cast<char>(d16 & 0xFF), static_cast<char>(d16 >> 8)};
  for (std::size_t j = 0; j < 16; ++j) b += static_cast<char>(q[j] | (q[j + 16] << 4));
  return b;
}

// sqrt(soma (v - y)²) / sqrt(soma (v - média)²): o erro medido contra o quanto os números
// variam em torno da média (a informação que eles carregam).
static double erro_relativo_ao_espalhamento(const std::vector<float>& v,
                                            const std::vector<float>& y) {
  double media = 0, num = 0, den = 0;
  for (float a : v) media += a / static_cast<double>(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    num += (static_cast<double>(v[i]) - y[i]) * (static_cast<double>(v[i]) - y[i]);
    den += (v[i] - media) * (v[i] - media);
  }
  return std::sqrt(num / den);
}

int main() {
  tut::capitulo(40, "Quantização: os blocos Q8_0 e Q4_0");
  tut::novo(
      "como o llama.cpp guarda pesos em 8 e em 4 bits: um bloco de 32 números vira uma escala\n"
      "d (fp16) e 32 inteiros pequenos; os bytes feitos à mão, iguais aos do quantizador da\n"
      "biblioteca (export/quantize.cpp); o erro e o seu limite; o que fica em float e por quê.");
  tut::texto(
      "Lê-se depois do capítulo 27. Um peso em float32 ocupa 4 bytes. O llama.cpp roda modelos\n"
      "grandes em pouca memória guardando cada peso em poucos bits: a linha de uma matriz é\n"
      "cortada em blocos de 32, e cada bloco guarda UMA escala d (float de 16 bits) e 32\n"
      "inteiros q; o peso é lido de volta como q · d. Os formatos têm os nomes do ggml:\n"
      "  Q8_0: 34 bytes por 32 pesos (8.5 bits por peso), q de -127 a 127\n"
      "  Q4_0: 18 bytes por 32 pesos (4.5 bits por peso), q de 0 a 15, lido como (q - 8) · d\n"
      "A linha deste capítulo (um bloco de 32 pesos inventados, de duas casas):");
  tut::linha("x[0..16)", std::vector<double>(kLinha.begin(), kLinha.begin() + 16), 3);
  tut::linha("x[16..32)", std::vector<double>(kLinha.begin() + 16, kLinha.end()), 3);

  tut::secao("Q8_0 à mão");
  std::vector<int> q8;
  float d8 = 0;
  const std::string bytes8 = q8_0_a_mao(kLinha, q8, d8);
  tut::texto(
      "1. a escala: d = max|x| / 127 = 1.27 / 127 = 0.01 (o maior |x| cai em q = ±127);\n"
      "2. cada q = round(x / d), metades para longe do zero: 0.12 / 0.01 = 12, -0.53 -> -53;\n"
      "3. os bytes: d em float de 16 bits (2 bytes, little-endian), depois os 32 q (int8).\n"
      "O float de 16 bits tem 11 bits de mantissa: 0.01 não cabe exato e vira 0.010002.");
  tut::linha("d (float32) e d guardado (fp16)", std::vector<double>{d8, escala_fp16(d8)}, 8);
  std::printf("q:");
  for (int v : q8) std::printf(" %d", v);
  std::printf("\n");
  bytes_em_hex("bytes Q8_0 (d, depois q)", bytes8);
  const std::vector<float> volta8 = dequantize(WeightType::q8_0, bytes8, kLinha.size());
  std::vector<double> erro8;
  for (std::size_t i = 0; i < kLinha.size(); ++i) erro8.push_back(std::fabs(kLinha[i] - volta8[i]));
  tut::texto(
      "A volta é q · d (com o d do fp16). O erro de cada peso: round erra no máximo meio passo,\n"
      "então |x - q · d| <= d / 2 (mais |q| vezes o arredondamento de d em fp16, aqui < 0.0003).");
  tut::linha("de volta x[0..8)", std::vector<double>(volta8.begin(), volta8.begin() + 8));
  tut::linha("erro |x - q d| x[0..8)", std::vector<double>(erro8.begin(), erro8.begin() + 8));
  const double max8 = *std::max_element(erro8.begin(), erro8.end());
  tut::linha("Q8_0: erro máximo e d/2", std::vector<double>{max8, escala_fp16(d8) / 2});

  tut::secao("Q4_0 à mão");
  std::vector<int> q4;
  float d4 = 0;
  const std::string bytes4 = q4_0_a_mao(kLinha, q4, d4);
  tut::texto(
      "Só 16 níveis. O Q4_0 não usa max|x|: usa m, o x de maior |x| COM o sinal, e\n"
      "1. d = m / -8 = -1.27 / -8 = 0.15875: o valor extremo cai exato no nível 0 ((0 - 8) · d = m);\n"
      "2. q = min(15, trunc(x / d + 8.5)): x / d + 8 arredondado (metades para cima), limitado a 15;\n"
      "3. os bytes: d (fp16), depois 16 bytes; o byte j guarda q[j] no nibble BAIXO (4 bits\n"
      "   de baixo) e q[j + 16] no ALTO: byte = q[j] | (q[j + 16] << 4).");
  tut::linha("d (float32) e d guardado (fp16)", std::vector<double>{d4, escala_fp16(d4)}, 8);
  std::printf("q:");
  for (int v : q4) std::printf(" %d", v);
  std::printf("\n");
  bytes_em_hex("bytes Q4_0 (d, depois os nibbles)", bytes4);
  std::printf(
      "byte 0 = %02x: nibble baixo %d = q[0] (x = 0.12), nibble alto %d = q[16] (x = 0.47)\n",
      static_cast<unsigned>(static_cast<std::uint8_t>(bytes4[2])), q4[0], q4[16]);
  const std::vector<float> volta4 = dequantize(WeightType::q4_0, bytes4, kLinha.size());
  std::vector<double> erro4;
  for (std::size_t i = 0; i < kLinha.size(); ++i) erro4.push_back(std::fabs(kLinha[i] - volta4[i]));
  tut::linha("de volta x[0..8)", std::vector<double>(volta4.begin(), volta4.begin() + 8));
  tut::linha("erro |x - (q-8) d| x[0..8)", std::vector<double>(erro4.begin(), erro4.begin() + 8));
  const double max4 = *std::max_element(erro4.begin(), erro4.end());
  const std::size_t pior = std::max_element(erro4.begin(), erro4.end()) - erro4.begin();
  tut::linha("Q4_0: erro máximo e d/2", std::vector<double>{max4, escala_fp16(d4) / 2});
  std::printf("o pior é x[%zu] = %.2f: q = %d, lido como %.6f\n", pior, kLinha[pior], q4[pior],
              volta4[pior]);
  tut::texto(
      "O lado positivo só vai até 7 · d = 1.111: 1.21 passaria de 15 e é cortado, com erro\n"
      "maior que d/2 (até d inteiro). O lado do extremo tem 8 passos, o outro só 7.");
  double rms8 = 0, rms4 = 0;
  for (std::size_t i = 0; i < kLinha.size(); ++i) {
    rms8 += erro8[i] * erro8[i] / kLinha.size();
    rms4 += erro4[i] * erro4[i] / kLinha.size();
  }
  tut::linha("erro RMS: Q8_0 Q4_0", std::vector<double>{std::sqrt(rms8), std::sqrt(rms4)});
  tut::texto(
      "Por que o Q4_0 é pior: o passo d é o intervalo do bloco dividido pelos níveis. O Q8_0\n"
      "tem 254 passos entre -max e +max (d = max / 127), o Q4_0 só 16 (d = max / 8): um passo\n"
      "127 / 8 = 16 vezes maior, e o erro cresce junto. Em troca, 18 bytes em vez de 34.");

  tut::secao("A biblioteca dá os mesmos bytes");
  const std::string lib8 = quantize(WeightType::q8_0, kLinha.data(), kLinha.size());
  const std::string lib4 = quantize(WeightType::q4_0, kLinha.data(), kLinha.size());
  tut::texto(
      "glass::quantize (export/quantize.cpp) é o quantizador de referência do ggml reescrito\n"
      "(quantize_row_q8_0_ref, quantize_row_q4_0_ref); é o que `glass export --type q8_0|q4_0`\n"
      "escreve no arquivo GGUF.");
  std::printf("Q8_0: %zu bytes, iguais aos feitos à mão: %s\n", lib8.size(),
              lib8 == bytes8 ? "sim" : "NÃO");
  std::printf("Q4_0: %zu bytes, iguais aos feitos à mão: %s\n", lib4.size(),
              lib4 == bytes4 ? "sim" : "NÃO");

  tut::secao("O que fica em float");
  tut::texto(
      "Os ganhos da RMSNorm (capítulo 22) são um vetor: cada ganho multiplica um canal inteiro\n"
      "de todo token. Depois do treino ficam todos perto de 1; o que o treino aprendeu é o\n"
      "quanto cada um se afasta de 1. Um bloco de ganhos (em torno de 1, de 0.88 a 1.15):");
  tut::linha("ganhos[0..16)", std::vector<double>(kGanhos.begin(), kGanhos.begin() + 16), 2);
  const std::vector<float> g8 = dequantize(
      WeightType::q8_0, quantize(WeightType::q8_0, kGanhos.data(), kGanhos.size()), kGanhos.size());
  const std::vector<float> g4 = dequantize(
      WeightType::q4_0, quantize(WeightType::q4_0, kGanhos.data(), kGanhos.size()), kGanhos.size());
  tut::linha("ganhos em Q4_0 [0..16)", std::vector<double>(g4.begin(), g4.begin() + 16));
  tut::texto(
      "O passo do Q4_0 é 1.15 / 8 = 0.144: os 32 ganhos caem em três valores, e quase tudo o que\n"
      "os distinguia some. Medido contra o quanto os números variam em torno da média\n"
      "(sqrt(soma (x - y)²) / sqrt(soma (x - média)²)), na mesma régua para a linha de pesos:");
  tut::linha("linha de pesos: erro relativo ao espalhamento, Q8_0 Q4_0",
             std::vector<double>{erro_relativo_ao_espalhamento(kLinha, volta8),
                                 erro_relativo_ao_espalhamento(kLinha, volta4)});
  tut::linha("ganhos: erro relativo ao espalhamento, Q8_0 Q4_0",
             std::vector<double>{erro_relativo_ao_espalhamento(kGanhos, g8),
                                 erro_relativo_ao_espalhamento(kGanhos, g4)});
  tut::texto(
      "E o erro de um ganho não se dilui: o canal sai errado pelo mesmo fator em todo token,\n"
      "enquanto o erro de um peso de matriz é uma parcela de uma soma de muitas. Ganhar bytes\n"
      "ali também não vale: o modelo padrão tem 9 vetores de 128 ganhos, 1152 números: 4608\n"
      "bytes em F32, 0.14% do seu arquivo de 3264384 bytes. Por isso um vetor fica em F32.");
  tut::texto(
      "Uma matriz cujas linhas não têm comprimento múltiplo de 32 não se corta em blocos:\n"
      "vai em F16, como faz o conversor do llama.cpp. No modelo padrão, w2 (128 x 344) tem\n"
      "linhas de 344 = 10 · 32 + 24; w1 (344 x 128) tem linhas de 128 = 4 · 32.");
  std::printf("tipo pedido q4_0: ganhos (128) -> %s, w1 (344, 128) -> %s, w2 (128, 344) -> %s\n",
              weight_type_name(tensor_type(WeightType::q4_0, {128})),
              weight_type_name(tensor_type(WeightType::q4_0, {344, 128})),
              weight_type_name(tensor_type(WeightType::q4_0, {128, 344})));
  {
    const std::vector<float> linha344(344, 0.5f);
    try {
      quantize(WeightType::q4_0, linha344.data(), linha344.size());
      std::printf("344 valores em Q4_0: aceitos (não deveria)\n");
    } catch (const std::invalid_argument& e) {
      std::printf("344 valores em Q4_0: %s\n", e.what());
    }
  }

  tut::secao("O custo no modelo padrão (medido, não treinado aqui)");
  tut::texto(
      "De docs/quantizacao.md: o modelo padrão (`glass train` com seus padrões: AdamW, 2000\n"
      "passos em Dom Casmurro, d_model 128, 4 camadas), avaliado com `glass eval --quantize TIPO`\n"
      "na parte de validação. Os bits por peso são os do arquivo inteiro (ganhos em F32, w2 em\n"
      "F16):\n"
      "  pesos  bytes     bits/peso  perda (nats/caractere)\n"
      "  f32    3264384   32.00      1.5762\n"
      "  f16    1639808   16.02      1.5762\n"
      "  q8_0   1043456   10.16      1.5762  (custo abaixo de 0.0001)\n"
      "  q4_0    725376    7.03      1.5827  (custo +0.0065)\n"
      "O passo do Q8_0 fica muito abaixo do ruído que o treino deixa nos pesos; o do Q4_0, 16\n"
      "vezes maior, já aparece na perda. Refaça com `glass export` e `glass eval --quantize`.");

  tut::experimente({
      "troque x[20] = 1.21 por -1.30: quem passa a ser m, e qual o sinal de d no Q4_0?",
      "troque toda a linha por zeros: que d e que bytes sai de cada formato?",
      "quantize os ganhos em Q8_0: quantos valores diferentes sobram dos 32?",
  });
  tut::respostas();
  {
    std::vector<float> outra = kLinha;
    outra[20] = -1.30f;
    std::vector<int> q;
    float d = 0;
    q4_0_a_mao(outra, q, d);
    tut::linha("1) com x[20] = -1.30: d do Q4_0 e q[20]",
               std::vector<double>{d, static_cast<double>(q[20])});
    std::printf(
        "   (m = -1.30, d = -1.30 / -8 = 0.1625 > 0 e x[20] cai no nível 0; com m positivo,\n"
        "    d seria negativo: o sinal de d é o que põe o extremo no nível 0)\n");
    const std::vector<float> zeros(32, 0.0f);
    const std::string z8 = quantize(WeightType::q8_0, zeros.data(), 32);
    const std::string z4 = quantize(WeightType::q4_0, zeros.data(), 32);
    const bool z8_zero = std::all_of(z8.begin(), z8.end(), [](char c) { return c == 0; });
    const bool z4_oitos =
        std::all_of(z4.begin() + 2, z4.end(), [](char c) { return c == static_cast<char>(0x88); });
    std::printf("2) zeros: Q8_0 todo zero: %s; Q4_0 com nibbles 8 (0x88): %s\n",
                z8_zero ? "sim" : "não", z4_oitos ? "sim" : "não");
    bytes_em_hex("   d do Q4_0 (2 bytes)", z4.substr(0, 2));
    std::printf(
        "   (1/d vale 0 quando d = 0: q = 0 no Q8_0 e 0 + 8 = 8 no Q4_0, lido como 0; o d do Q4_0\n"
        "    é 0 / -8 = -0: em fp16, 00 80, o bit de sinal ligado, e lido de volta como 0)\n");
    std::vector<float> distintos = g8;
    std::sort(distintos.begin(), distintos.end());
    distintos.erase(std::unique(distintos.begin(), distintos.end()), distintos.end());
    std::printf("3) ganhos em Q8_0: %zu valores diferentes (em Q4_0: 3)\n", distintos.size());
  }
  return 0;
}
