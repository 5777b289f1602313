// Capítulo 36 — Muon: o passo ortogonalizado.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "autograd/ops.hpp"
#include "common.hpp"
#include "data/batches.hpp"
#include "data/text.hpp"
#include "data/tokenizer.hpp"
#include "nn/decoder.hpp"
#include "train/adamw.hpp"
#include "train/clip.hpp"
#include "train/muon.hpp"
#include "train/schedule.hpp"
#include "treino_rapido.hpp"

using namespace glass;

namespace {

using M2 = Matrix<double>;  // as matrizes 2x2 deste capítulo, em double

M2 m2(double a, double b, double c, double d) { return M2{{a, b}, {c, d}}; }

M2 vezes(const M2& A, const M2& B) {
  M2 C = xt::zeros<double>({2, 2});
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 2; ++k) C(i, j) += A(i, k) * B(k, j);
  return C;
}

M2 transposta(const M2& A) { return m2(A(0, 0), A(1, 0), A(0, 1), A(1, 1)); }

/// Os valores singulares de uma 2x2, maior primeiro: as raízes dos autovalores de AᵀA, que para
/// uma 2x2 saem da fórmula de Bhaskara (traço e determinante).
std::pair<double, double> singulares(const M2& A) {
  const M2 ata = vezes(transposta(A), A);
  const double traco = ata(0, 0) + ata(1, 1);
  const double det = ata(0, 0) * ata(1, 1) - ata(0, 1) * ata(1, 0);
  const double delta = std::sqrt(std::max(traco * traco / 4 - det, 0.0));
  return {std::sqrt(traco / 2 + delta), std::sqrt(std::max(traco / 2 - delta, 0.0))};
}

/// O fator polar U Vᵀ de G = U S Vᵀ, sem SVD: G (GᵀG)^(-1/2). A raiz de uma 2x2 simétrica
/// positiva M tem forma fechada: √M = (M + √det(M) I) / √(traço(M) + 2 √det(M)).
M2 fator_polar(const M2& G) {
  const M2 m = vezes(transposta(G), G);
  const double s = std::sqrt(m(0, 0) * m(1, 1) - m(0, 1) * m(1, 0));
  const double t = std::sqrt(m(0, 0) + m(1, 1) + 2 * s);
  const M2 raiz = m2((m(0, 0) + s) / t, m(0, 1) / t, m(1, 0) / t, (m(1, 1) + s) / t);
  const double d = raiz(0, 0) * raiz(1, 1) - raiz(0, 1) * raiz(1, 0);
  const M2 inversa = m2(raiz(1, 1) / d, -raiz(0, 1) / d, -raiz(1, 0) / d, raiz(0, 0) / d);
  return vezes(G, inversa);
}

double frobenius(const M2& A) { return std::sqrt(xt::sum(A * A)()); }

/// Prints A row by row; an entry below 5e-7 in size prints as 0 (not "-0.000000").
void mostra(const std::string& rotulo, const M2& A) {
  auto v = [&](int i, int j) { return std::fabs(A(i, j)) < 5e-7 ? 0.0 : A(i, j); };
  std::printf("%s[0]: %.6f %.6f\n%s[1]: %.6f %.6f\n", rotulo.c_str(), v(0, 0), v(0, 1),
              rotulo.c_str(), v(1, 0), v(1, 1));
}

void mostra_singulares(const std::string& rotulo, const M2& A) {
  const auto [s1, s2] = singulares(A);
  std::printf("%s: %.6f %.6f\n", rotulo.c_str(), s1, s2);
}

/// Newton-Schulz escrito à mão: X <- G/||G||, depois `passos` vezes X <- aX + (bA + cA²)X com
/// A = XXᵀ; imprime os valores singulares a cada passo quando `imprime`.
M2 newton_schulz_a_mao(const M2& G, int passos, double a, double b, double c, bool imprime) {
  M2 X = G / frobenius(G);
  if (imprime) mostra_singulares("valores singulares depois de 0 passos", X);
  for (int k = 1; k <= passos; ++k) {
    const M2 A = vezes(X, transposta(X));
    X = a * X + vezes(b * A + c * vezes(A, A), X);
    if (imprime)
      mostra_singulares("valores singulares depois de " + std::to_string(k) + " passos", X);
  }
  return X;
}

/// Trains a model of chapter 27's configuration for `passos` steps on the first 30000 characters of Dom Casmurro,
/// with AdamW on every parameter (muon_lr = 0) or with Muon on the blocks' matrices, and returns
/// the validation loss every 100 steps.
std::vector<double> treina(double muon_lr, long passos) {
  const std::u32string livro = load_text(GLASS_SOURCE_DIR "/data/corpora/domcasmurro.txt");
  const std::u32string texto = livro.substr(0, 30000);
  const Tokenizer tokenizer = Tokenizer::from_text(texto);
  const std::vector<std::int32_t> ids = tokenizer.encode(texto);
  const std::vector<std::int32_t> treino(ids.begin(), ids.begin() + 27000);
  const std::vector<std::int32_t> val(ids.begin() + 27000, ids.end());
  const ModelConfig cfg = tut::config_pequena(tokenizer.vocab_size());
  Decoder modelo(cfg, /*seed=*/21);
  BatchSampler lotes(treino, 16, cfg.context_length, /*seed=*/22);
  const MuonSplit partes = split_for_muon(modelo.named_parameters());
  AdamW adamw(muon_lr > 0 ? partes.adamw : modelo.named_parameters());
  std::unique_ptr<Muon> muon;
  if (muon_lr > 0) muon = std::make_unique<Muon>(partes.muon);
  LrSchedule agenda;
  agenda.lr_max = 3e-3;
  agenda.min_lr = 3e-4;
  agenda.warmup = 20;
  agenda.decay_iters = passos;
  std::vector<double> perdas;
  Ids x, y;
  for (long it = 0; it < passos; ++it) {
    lotes.next(x, y);
    Tensor perda = cross_entropy(modelo.forward(x), y);
    modelo.zero_grad();
    perda.backward();
    clip_grad_norm(modelo.parameters(), 1.0);
    const double lr = agenda.at(it);
    adamw.step(lr);
    if (muon) muon->step(muon_lr * lr / agenda.lr_max);  // a mesma agenda, no lr do Muon
    if ((it + 1) % 100 == 0)
      perdas.push_back(tut::perda_validacao(modelo, val, cfg.context_length));
  }
  return perdas;
}

/// Operações de ponto flutuante (uma multiplicação e uma soma contam 2) de um passo do Muon:
/// para cada matriz m x n (m <= n depois de transpor), 5 vezes A = X Xᵀ (2m²n), A² (2m³) e
/// (bA + cA²) X (2m²n).
double flops_newton_schulz(const MuonSplit& partes) {
  double total = 0;
  for (const auto& p : partes.muon) {
    const auto& forma = p.second.value().shape();
    const double m = static_cast<double>(std::min(forma[0], forma[1]));
    const double n = static_cast<double>(std::max(forma[0], forma[1]));
    total += 5 * (2 * m * m * n + 2 * m * m * m + 2 * m * m * n);
  }
  return total;
}

/// As operações de um passo do modelo (forward e backward) com `tokens` posições em janelas de
/// `T`: cada número de uma matriz (dos blocos e da cabeça de saída) custa 2 por token no forward
/// e 4 no backward (6 ao todo); a atenção causal, Q Kᵀ e pesos x V sobre em média T/2 chaves,
/// 2 · 2 · (T/2) · d_model por token e camada no forward, o triplo com o backward.
double flops_modelo(const Decoder& modelo, const ModelConfig& c, double tokens, double T) {
  double numeros_de_matrizes = 0;
  for (const auto& p : modelo.named_parameters())
    if (p.second.value().dimension() == 2 && p.first != "tok_embeddings.weight")
      numeros_de_matrizes += static_cast<double>(p.second.value().size());
  const double atencao = 3 * 2 * 2 * (T / 2) * static_cast<double>(c.d_model * c.n_layers);
  return tokens * (6 * numeros_de_matrizes + atencao);
}
}  // namespace

int main() {
  tut::capitulo(36, "Muon: o passo ortogonalizado");
  tut::novo(
      "o otimizador Muon (train/muon.hpp): o passo de uma matriz com todas as direções do\n"
      "mesmo tamanho, calculado por Newton-Schulz, sem SVD; `glass train --optimizer muon`.");
  tut::texto(
      "O AdamW (capítulo 25) iguala o tamanho do passo número a número. Mas um peso do\n"
      "decoder não é uma lista de números: é uma matriz, um mapa linear entre vetores. O\n"
      "gradiente de uma matriz costuma ter poucas direções fortes e muitas fracas (quase\n"
      "posto 1: cada exemplo soma um produto externo δ·xᵀ). O Muon (Keller Jordan, 2024) iguala o\n"
      "passo direção a direção: escreve o gradiente (com momento) como G = U S Vᵀ e anda\n"
      "U Vᵀ, o mesmo G com todos os valores singulares trocados por 1. Bernstein & Newhouse\n"
      "(2024) mostram que esse é o passo de descida mais íngreme quando o tamanho do passo é\n"
      "medido pela norma espectral (o quanto a matriz pode esticar um vetor).");

  tut::secao("Um gradiente 2x2 quase de posto 1");
  const M2 G = m2(1.0, 3.0, 0.5, 1.4);
  mostra("G", G);
  mostra_singulares("valores singulares de G", G);
  tut::texto(
      "Uma direção tem valor singular 3.49 e a outra 0.029: 122 vezes menor. A descida\n"
      "simples (W <- W - lr·G) anda 122 vezes mais na primeira direção que na segunda.");

  tut::secao("O passo do Muon: U Vᵀ, o fator polar de G");
  const M2 Q = fator_polar(G);
  mostra("U Vᵀ", Q);
  mostra_singulares("valores singulares de U Vᵀ", Q);
  mostra("(U Vᵀ)ᵀ (U Vᵀ)", vezes(transposta(Q), Q));
  tut::texto(
      "U Vᵀ = G (GᵀG)^(-1/2): para uma 2x2 a raiz tem forma fechada (veja fator_polar no\n"
      "código). É ortogonal (QᵀQ = I): estica todo vetor por 1, nas duas direções de G.");

  tut::secao("Sem SVD: a iteração de Newton-Schulz");
  tut::texto(
      "Numa matriz de 128 x 344 uma SVD por passo seria cara. O Muon divide G por sua norma de\n"
      "Frobenius (todo valor singular fica <= 1) e repete X <- aX + (bA + cA²)X com A = XXᵀ.\n"
      "Em cada valor singular s isso é o polinômio p(s) = a·s + b·s³ + c·s⁵, e U e V não\n"
      "mudam. Com (a, b, c) = (3.4445, -4.7750, 2.0315), p empurra depressa todo s de (0, 1]\n"
      "para uma faixa em volta de 1 — de propósito não exatamente 1: convergir custaria mais\n"
      "passos, e a faixa basta.");
  const M2 X5 = newton_schulz_a_mao(G, 5, kNewtonSchulzA, kNewtonSchulzB, kNewtonSchulzC, true);
  mostra("X depois de 5 passos", X5);
  const M2 X5_biblioteca = newton_schulz5<double>(G);
  std::printf("diferença máxima para newton_schulz5 da biblioteca: %.2e\n",
              xt::amax(xt::abs(X5 - X5_biblioteca))());
  tut::texto(
      "(A biblioteca soma eps = 1e-7 à norma antes de dividir: daí a diferença de ~1e-8.)\n"
      "O valor singular pequeno (0.008 depois da divisão pela norma) foi multiplicado por ~85;\n"
      "o grande foi para 0.72. Compare X com U Vᵀ acima: mesmo padrão de sinais e de tamanhos,\n"
      "com as duas direções agora do mesmo tamanho.");

  tut::secao("Por que não a iteração cúbica clássica");
  tut::texto(
      "X <- 1.5X - 0.5XXᵀX converge para U Vᵀ exatamente, mas devagar para os s pequenos:\n"
      "perto de 0 ela só multiplica s por 1.5 a cada passo.");
  for (int passos : {5, 10, 20}) {
    const M2 X = newton_schulz_a_mao(G, passos, 1.5, -0.5, 0.0, false);
    mostra_singulares("cúbica, valores singulares depois de " + std::to_string(passos) + " passos",
                      X);
  }

  tut::secao("O passo completo de uma matriz (muon_update)");
  tut::texto(
      "buf <- 0.95·buf + g;  atualização <- g + 0.95·buf (momento de Nesterov);\n"
      "O <- newton_schulz5(atualização);  W <- W - lr·√max(1, linhas/colunas)·O.\n"
      "No primeiro passo buf = g, e a atualização é 1.95·g: a divisão pela norma apaga o 1.95.");
  M2 W = xt::zeros<double>({2, 2});
  M2 buf = xt::zeros<double>({2, 2});
  muon_update<double>(W, G, buf, /*lr=*/0.02);
  mostra("W depois de um passo de lr 0.02, partindo de zero", W);
  std::printf("diferença máxima para -0.02 · X depois de 5 passos: %.2e\n",
              xt::amax(xt::abs(W + 0.02 * X5))());

  tut::secao("No decoder: quais parâmetros vão para o Muon");
  {
    Decoder modelo(tut::config_pequena(60), /*seed=*/21);
    const MuonSplit partes = split_for_muon(modelo.named_parameters());
    std::size_t n_muon = 0, n_adamw = 0;
    for (const auto& p : partes.muon) n_muon += p.second.value().size();
    for (const auto& p : partes.adamw) n_adamw += p.second.value().size();
    std::printf("matrizes no Muon: %zu (%zu números)\n", partes.muon.size(), n_muon);
    std::printf("parâmetros no AdamW: %zu (%zu números)\n", partes.adamw.size(), n_adamw);
  }
  tut::texto(
      "Wq, Wk, Wv, Wo e as três matrizes da SwiGLU de cada camada vão para o Muon. Os embeddings\n"
      "e a saída ficam no AdamW: cada linha deles é o vetor de um token, não uma direção de um\n"
      "mapa linear. Os ganhos da RMSNorm (1-D) também.");

  tut::secao("Treino");
  tut::texto(
      "A configuração do capítulo 27, 400 passos, a mesma agenda (aquecimento e cosseno), uma vez\n"
      "só com AdamW (lr 3e-3) e outra com o Muon (lr 0.02) nas matrizes. Perda de validação\n"
      "a cada 100 passos:");
  const std::vector<double> com_adamw = treina(0.0, 400);
  const std::vector<double> com_muon = treina(0.02, 400);
  tut::linha("validação, só AdamW", com_adamw, 4);
  tut::linha("validação, Muon nas matrizes", com_muon, 4);
  tut::texto(
      "No mesmo número de passos o Muon chega mais baixo. Cada passo dele custa mais\n"
      "(as multiplicações de Newton-Schulz em cada matriz): o que conta é a perda por minuto.\n"
      "No corpus tinyshakespeare, com o modelo padrão de `glass train`, o Muon (lr 0.01)\n"
      "chegou à perda 1.88 em 500 passos e o AdamW em 950; em 2 núcleos, em 21 s e 26 s\n"
      "(bench/README.md, seção Speedrun, tem as medições e a máquina). O autor avisa que o\n"
      "Muon foi ajustado para lotes grandes; aqui os lotes são pequenos, e mesmo assim ele\n"
      "ganha em passos e em minutos.");

  tut::secao("Qualidade por minuto: o custo de um passo");
  {
    ModelConfig c;  // o modelo padrão de `glass train`, com os 65 caracteres do tinyshakespeare + 1
    c.vocab_size = 66;
    const Decoder modelo(c, /*seed=*/1);
    const MuonSplit partes = split_for_muon(modelo.named_parameters());
    const double ns = flops_newton_schulz(partes);
    for (const double B : {12.0, 48.0}) {
      const double passo = flops_modelo(modelo, c, B * 64, 64);
      std::printf(
          "lote %2.0f x 64: modelo %.3f GFLOP, Newton-Schulz %.3f GFLOP, "
          "tokens/s do Muon / do AdamW %.3f\n",
          B, passo / 1e9, ns / 1e9, passo / (passo + ns));
    }
  }
  tut::texto(
      "O Newton-Schulz não depende do lote: são as mesmas 5 iterações em cada matriz, com 768\n"
      "tokens ou com 3072. No lote padrão (12 janelas de 64) ele custa quase dois terços dos\n"
      "produtos do próprio modelo, e a conta prevê o passo do Muon a ~0.61 da velocidade do\n"
      "AdamW. Medido em 2 núcleos (bench/README.md, seção Speedrun): 0.61. É o aviso do autor\n"
      "sobre lotes pequenos, em números. Mesmo assim, por minuto, o Muon ganha: ele precisa de\n"
      "cerca de metade dos passos para chegar a 1.88.\n"
      "Qualidade por minuto é qualidade por passo vezes passos por minuto. Num orçamento curto\n"
      "um modelo menor dá mais passos (1 ou 2 camadas ganham em 15 segundos); quanto mais longo\n"
      "o orçamento, mais vale o modelo maior, que aprende mais por passo (em 1 minuto 2 camadas\n"
      "ainda ganham de 4, e 1 camada já perde). `glass train --time` treina com o Muon e as\n"
      "projeções de saída começando em zero (a receita do speedrun); o tamanho é escolha sua.");

  tut::experimente({
      "troque a iteração do Muon pela cúbica (a, b, c) = (1.5, -0.5, 0) com 5 passos: a direção fraca anda quanto?",
      "tire o momento (0.95 -> 0) no passo de muon_update: o primeiro passo muda?",
      "ponha G = [[1, 3], [0.5, 1.5]], de posto 1: o que sobra da segunda direção?",
  });
  tut::respostas();
  {
    const M2 X = newton_schulz_a_mao(G, 5, 1.5, -0.5, 0.0, false);
    mostra_singulares("1) cúbica com 5 passos, valores singulares", X);
    tut::texto(
        "   A direção fraca vai de 0.008 a só 0.062: 5 passos da cúbica deixam o passo quase\n"
        "   todo na direção forte, como a descida simples.");
  }
  {
    M2 W0 = xt::zeros<double>({2, 2});
    M2 b0 = xt::zeros<double>({2, 2});
    MuonConfig sem_momento;
    sem_momento.momentum = 0;
    muon_update<double>(W0, G, b0, 0.02, sem_momento);
    std::printf("2) diferença máxima para o passo com momento: %.2e\n",
                xt::amax(xt::abs(W0 - W))());
    tut::texto(
        "   Nenhuma: no primeiro passo a atualização é g ou 1.95·g, e a divisão pela norma\n"
        "   apaga o fator. O momento só pesa a partir do segundo passo.");
  }
  {
    const M2 G1 = m2(1.0, 3.0, 0.5, 1.5);
    mostra_singulares("3) valores singulares de G de posto 1", G1);
    mostra_singulares("3) valores singulares depois de 5 passos", newton_schulz5<double>(G1));
    tut::texto(
        "   Um valor singular 0 fica 0: p(0) = 0. O Muon não inventa direções que o gradiente\n"
        "   não tem; ele só iguala as que existem.");
  }
  return 0;
}
