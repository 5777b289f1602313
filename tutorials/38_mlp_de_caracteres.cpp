// Capítulo 38 — Um MLP de linguagem (Bengio et al. 2003): os últimos n caracteres, concatenados.
// (Lê-se depois do capítulo 12, o bigrama, e antes do 13.)
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "autograd/ops.hpp"
#include "bigrama.hpp"
#include "common.hpp"
#include "data/text.hpp"
#include "data/tokenizer.hpp"
#include "train/adamw.hpp"
#include "train/schedule.hpp"

using namespace glass;

namespace {

// Os parâmetros do MLP: C (V, d) a tabela de embeddings; W1 (H, n·d), b1 (H) a camada escondida;
// W2 (V, H), b2 (V) a saída.
struct Mlp {
  std::size_t n = 0, d = 0, H = 0, V = 0;
  Tensor C, W1, b1, W2, b2;

  Mlp(std::size_t n_, std::size_t d_, std::size_t H_, std::size_t V_, Scalar std_saida, Rng& rng)
      : n(n_), d(d_), H(H_), V(V_) {
    C = Tensor::randn({V, d}, 1.0, rng, true);
    // tanh: desvio 5/3 / √(entradas) deixa a soma ponderada perto de desvio 1 (Kaiming).
    W1 = Tensor::randn({H, n * d}, Scalar(5.0 / 3.0 / std::sqrt(double(n * d))), rng, true);
    b1 = Tensor::zeros({H}, true);
    W2 = Tensor::randn({V, H}, std_saida, rng, true);  // pequeno: logits perto de 0 no começo
    b2 = Tensor::zeros({V}, true);
  }

  std::vector<std::pair<std::string, Tensor>> parametros() const {
    return {{"C", C}, {"W1", W1}, {"b1", b1}, {"W2", W2}, {"b2", b2}};
  }
  std::size_t contar() const { return C.size() + W1.size() + b1.size() + W2.size() + b2.size(); }

  // contexto (B, n) ids -> logits (B, V).
  Tensor forward(const Ids& contexto) const {
    const std::size_t B = contexto.shape()[0];
    Tensor e = embedding(C, contexto);    // (B, n, d)
    Tensor x = reshape(e, {B, n * d});    // concatena os n vetores: (B, n·d)
    Tensor h = tanh(linear(x, W1) + b1);  // (B, H)
    return linear(h, W2) + b2;            // (B, V)
  }
};

// As janelas de `ids`: para cada t em `posicoes`, o contexto ids[t-n .. t-1] e o alvo ids[t].
void janelas(const std::vector<std::int32_t>& ids, const std::vector<std::size_t>& posicoes,
             std::size_t n, Ids& contexto, Ids& alvo) {
  contexto = Ids(Shape{posicoes.size(), n});
  alvo = Ids(Shape{posicoes.size()});
  for (std::size_t i = 0; i < posicoes.size(); ++i) {
    for (std::size_t j = 0; j < n; ++j) contexto(i, j) = ids[posicoes[i] - n + j];
    alvo(i) = ids[posicoes[i]];
  }
}

// A perda média em todas as posições t >= n de `ids`, sem fita.
double perda_em(const Mlp& m, const std::vector<std::int32_t>& ids) {
  NoGradGuard sem_fita;
  std::vector<std::size_t> todas;
  for (std::size_t t = m.n; t < ids.size(); ++t) todas.push_back(t);
  Ids contexto, alvo;
  janelas(ids, todas, m.n, contexto, alvo);
  return cross_entropy(m.forward(contexto), alvo).item();
}

struct Resultado {
  double inicial = 0, treino = 0, validacao = 0;
  std::size_t parametros = 0;
};

// Treina um MLP de contexto n por `passos` passos do AdamW (lotes de 64 posições sorteadas).
Resultado treinar(const std::vector<std::int32_t>& treino, const std::vector<std::int32_t>& val,
                  std::size_t V, std::size_t n, int passos, Scalar std_saida, bool imprimir) {
  Rng rng(2003);
  Mlp m(n, /*d=*/16, /*H=*/128, V, std_saida, rng);
  AdamW otimizador(m.parametros());
  LrSchedule agenda;
  agenda.lr_max = 1e-2;
  agenda.min_lr = 1e-3;
  agenda.warmup = 20;
  agenda.decay_iters = passos;
  Resultado r;
  r.parametros = m.contar();
  r.inicial = perda_em(m, val);
  const std::size_t B = 64;
  Ids contexto, alvo;
  for (int passo = 0; passo < passos; ++passo) {
    std::vector<std::size_t> posicoes(B);
    for (std::size_t& t : posicoes) t = n + std::size_t(rng() % (treino.size() - n));
    janelas(treino, posicoes, n, contexto, alvo);
    Tensor perda = cross_entropy(m.forward(contexto), alvo);
    otimizador.zero_grad();
    perda.backward();
    otimizador.step(agenda.at(passo));
    if (imprimir && (passo + 1) % 500 == 0) {
      std::printf("passo %4d: perda do lote %.4f   validação %.4f\n", passo + 1, perda.item(),
                  perda_em(m, val));
    }
  }
  r.treino = perda_em(m, treino);
  r.validacao = perda_em(m, val);
  return r;
}

}  // namespace

int main() {
  tut::capitulo(38, "Um MLP de linguagem: vários caracteres de contexto");
  tut::novo(
      "o modelo de Bengio et al. (2003): os embeddings dos últimos n caracteres concatenados,\n"
      "uma camada escondida com tanh e um softmax; treinado no livro e comparado com o bigrama.");
  tut::texto(
      "Lê-se depois do capítulo 12. O bigrama vê um caractere só. Para ver mais, a tabela\n"
      "não serve: com 3 caracteres de contexto seriam V³ linhas, quase todas nunca vistas.\n"
      "Bengio et al. (2003) trocaram a tabela por uma rede pequena:\n"
      "  1. cada um dos n caracteres vira um vetor de d números (a tabela C, capítulo 11);\n"
      "  2. os n vetores são postos lado a lado: um vetor de n·d números;\n"
      "  3. uma camada escondida: h = tanh(x W1ᵀ + b1), H números;\n"
      "  4. os logits do próximo caractere: h W2ᵀ + b2, e o softmax/entropia cruzada de sempre.\n"
      "Caracteres parecidos ganham vetores parecidos, e o que a rede aprende sobre um vale\n"
      "para o outro: é isso que a tabela não faz.");

  const std::u32string livro = load_text(GLASS_SOURCE_DIR "/data/corpora/domcasmurro.txt");
  const std::u32string texto = livro.substr(0, 30000);
  const Tokenizer tok = Tokenizer::from_text(texto);
  const std::vector<std::int32_t> ids = tok.encode(texto);
  const std::size_t V = tok.vocab_size(), corte = ids.size() * 9 / 10;
  const std::vector<std::int32_t> treino(ids.begin(), ids.begin() + long(corte));
  const std::vector<std::int32_t> val(ids.begin() + long(corte), ids.end());
  std::printf("caracteres de treino: %zu   de validação: %zu   V: %zu\n", treino.size(), val.size(),
              V);

  tut::secao("As formas, com n = 3, d = 16, H = 128");
  {
    Rng rng(1);
    Mlp m(3, 16, 128, V, 0.01f, rng);
    Ids contexto, alvo;
    janelas(treino, {3, 4}, 3, contexto, alvo);
    NoGradGuard sem_fita;
    std::printf("contexto (B, n): %s\n", shape_str(shape_of(contexto)).c_str());
    tut::forma("embedding(C, contexto) (B, n, d)", embedding(m.C, contexto).value());
    tut::forma("concatenados (B, n·d)", reshape(embedding(m.C, contexto), {2, 48}).value());
    tut::forma("logits (B, V)", m.forward(contexto).value());
    std::printf(
        "parâmetros: %zu = V·d + H·n·d + H + V·H + V = %zu·16 + 128·48 + 128 + %zu·128 + %zu\n",
        m.contar(), V, V, V);
    const auto mostrar = [&](std::vector<std::int32_t> v) {
      std::string s;
      for (char c : tok.decode_utf8(v)) s += c == '\n' ? std::string("\\n") : std::string(1, c);
      return s;
    };
    std::printf("o contexto da posição 3: \"%s\" -> alvo \"%s\"  (\\n = fim de linha)\n",
                mostrar({treino[0], treino[1], treino[2]}).c_str(), mostrar({treino[3]}).c_str());
  }

  tut::secao("Treino");
  tut::texto(
      "2000 passos do AdamW (capítulo 25), lotes de 64 posições sorteadas com semente fixa,\n"
      "lr de 0.01 a 0.001 em cosseno. W2 começa com desvio 0.01: os logits começam perto de 0 e\n"
      "a perda perto de log(V) (capítulo 09).");
  const Resultado r3 = treinar(treino, val, V, 3, 2000, 0.01f, true);
  std::printf("log(V): %.4f\n", std::log(double(V)));
  std::printf("MLP n = 3, perda inicial: %.4f\n", r3.inicial);
  std::printf("MLP n = 3, perda de treino: %.4f\n", r3.treino);
  std::printf("MLP n = 3, perda de validação: %.4f\n", r3.validacao);
  const tut::PerdasBigrama bigrama = tut::perdas_bigrama(treino, val, V);
  std::printf("bigrama de contagens, perda de treino (o ótimo): %.4f\n", bigrama.otimo_treino);
  std::printf("bigrama de contagens, perda de validação (add-one): %.4f\n", bigrama.validacao);
  std::printf("o MLP fica abaixo do bigrama na validação: %s, por %.4f nats\n",
              r3.validacao < bigrama.validacao ? "sim" : "não", bigrama.validacao - r3.validacao);
  tut::texto(
      "O bigrama de contagens é o melhor que UM caractere de contexto dá no treino; o MLP, com\n"
      "três, passa dele mesmo na validação, que ele nunca viu. O preço: uns 18 mil\n"
      "parâmetros e um treino, no lugar de uma contagem. A atenção (capítulos 13 a 20) vai\n"
      "mais longe: um contexto longo sem que o número de pesos cresça com ele.");

  tut::experimente({
      "troque n = 3 por n = 1: o MLP vira um bigrama (com uma camada escondida no meio);",
      "troque n = 3 por n = 6: mais contexto ajuda sempre?",
      "troque o desvio de W2 de 0.01 por 1: qual a perda antes do primeiro passo?",
  });
  tut::respostas();
  {
    const Resultado r1 = treinar(treino, val, V, 1, 2000, 0.01f, false);
    std::printf("1) n = 1: perda de validação %.4f (bigrama add-one %.4f, n = 3: %.4f)\n",
                r1.validacao, bigrama.validacao, r3.validacao);
    std::printf(
        "   (perto do bigrama: com um caractere só, a rede não tem o que ver além dele; fica\n"
        "    um pouco abaixo do add-one, que suaviza os pares raros de um jeito grosseiro)\n");
    const Resultado r6 = treinar(treino, val, V, 6, 2000, 0.01f, false);
    std::printf("2) n = 6: perda de treino %.4f, de validação %.4f, %zu parâmetros\n", r6.treino,
                r6.validacao, r6.parametros);
    std::printf(
        "   (compare com n = 3: treino %.4f, validação %.4f; a distância entre treino e\n"
        "    validação mede quanto o modelo decora 27 mil caracteres)\n",
        r3.treino, r3.validacao);
    const Resultado rg = treinar(treino, val, V, 3, 0, 1.0f, false);
    std::printf("3) W2 com desvio 1: perda antes do primeiro passo %.4f (log(V) = %.4f)\n",
                rg.inicial, std::log(double(V)));
    std::printf(
        "   (logits grandes e aleatórios erram com confiança: os primeiros passos\n"
        "    só desfazem isso; o capítulo 39 mostra como se vê no treino)\n");
  }
  return 0;
}
