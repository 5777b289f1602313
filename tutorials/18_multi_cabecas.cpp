// Capítulo 18 — Várias cabeças de atenção.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "autograd/ops.hpp"
#include "common.hpp"
#include "treino_rapido.hpp"

#include "interp/head_scores.hpp"
#include "interp/run.hpp"

using namespace glass;

namespace {

/// O padrão (n, n) da cabeça h da camada 0, tirado da fotografia "layers.0.attn.softmax".
Array padrao(const Tracer& tracer, std::size_t h) {
  const Array& p = tracer.get(attention_point(0, "softmax"));  // (cabeças, n, n)
  const std::size_t n = p.shape()[1];
  Array r = Array::from_shape({n, n});
  std::copy(p.data() + h * n * n, p.data() + (h + 1) * n * n, r.data());
  return r;
}

/// O peso que cada posição dá a si mesma, médio sobre t = 1 .. n-1 (a posição 0 só pode olhar
/// para si): (1 / (n-1)) · soma_{t=1}^{n-1} A[t][t], escrito à mão como o de token anterior.
double propria_posicao(const Array& a) {
  const std::size_t n = a.shape()[0];
  double s = 0;
  for (std::size_t t = 1; t < n; ++t) s += a(t, t);
  return s / double(n - 1);
}

struct Escores {
  std::vector<double> anterior, propria;  ///< um por cabeça
};

/// Os dois escores de cada cabeça da camada 0, médios sobre as janelas de x (n, T).
Escores escores(const Decoder& modelo, const Ids& x) {
  const std::size_t H = modelo.config().n_heads, n = x.shape()[0], T = x.shape()[1];
  Escores e{std::vector<double>(H, 0.0), std::vector<double>(H, 0.0)};
  for (std::size_t b = 0; b < n; ++b) {
    Tracer tracer;
    run_with_hooks(modelo,
                   as_batch(std::vector<std::int32_t>(x.data() + b * T, x.data() + (b + 1) * T)),
                   tracer);
    for (std::size_t h = 0; h < H; ++h) {
      e.anterior[h] += previous_token_score(padrao(tracer, h)) / double(n);
      e.propria[h] += propria_posicao(padrao(tracer, h)) / double(n);
    }
  }
  return e;
}

void imprimir(const char* rotulo, const Escores& e) {
  for (std::size_t h = 0; h < e.anterior.size(); ++h) {
    std::printf("%scabeça %zu: token anterior %.3f, própria posição %.3f\n", rotulo, h,
                e.anterior[h], e.propria[h]);
  }
}

double amplitude(const std::vector<double>& v) {
  return *std::max_element(v.begin(), v.end()) - *std::min_element(v.begin(), v.end());
}

/// Um caractere em UTF-8, com o espaço à vista ('_').
std::string como_texto(char32_t c) {
  if (c == U' ') return "_";
  std::string r;
  if (c < 0x80) {
    r += char(c);
  } else if (c < 0x800) {
    r += char(0xC0 | (c >> 6));
    r += char(0x80 | (c & 0x3F));
  } else {
    r += char(0xE0 | (c >> 12));
    r += char(0x80 | ((c >> 6) & 0x3F));
    r += char(0x80 | (c & 0x3F));
  }
  return r;
}

}  // namespace

int main() {
  tut::capitulo(18, "Várias cabeças de atenção");
  tut::novo(
      "várias cabeças em paralelo: Q, K e V cortados em cabeças\n"
      "(reshape e transpose) e juntados de volta; cabeças treinadas que olham para lugares\n"
      "diferentes, medidas.");
  tut::texto(
      "Uma cabeça de atenção dá a cada posição UMA mistura do passado: um softmax, uma linha\n"
      "de pesos. Mas a próxima letra depende de várias coisas ao mesmo tempo (a letra logo\n"
      "antes, o começo da palavra, ...). Com várias cabeças, cada uma tem o seu softmax e pode\n"
      "olhar para outro lugar. As contas são as do capítulo 15, feitas por cabeça: o vetor Q\n"
      "de d_model = 128 números do modelo padrão é cortado em 4 pedaços de head_dim = 32, e\n"
      "cada pedaço é uma cabeça. K e V são cortados do mesmo jeito (no modelo padrão, em só\n"
      "2 cabeças: a GQA do capítulo 19). As multiplicações são as de uma cabeça de 128: os\n"
      "produtos escalares de 32 números, 4 vezes, somam as mesmas contas (Vaswani et al.,\n"
      "2017, seção 3.2.2); o que se multiplica por 4 são os softmax e as matrizes de\n"
      "atenção (n, n).");

  tut::secao("O corte em cabeças: reshape e transpose");
  // Q de forma (B = 1, n = 4 posições, d_model = 6), com os números 0 a 23.
  std::vector<Scalar> numeros(24);
  for (std::size_t i = 0; i < numeros.size(); ++i) numeros[i] = Scalar(i);
  Tensor Q = Tensor::from_vector(numeros, {1, 4, 6});
  const std::size_t n_heads = 3, head_dim = 2;
  tut::matriz("Q (posição = linha)", reshape(Q, {4, 6}).value(), 1);
  Tensor Q4 = reshape(Q, {1, 4, n_heads, head_dim});  // (B, n, n_heads, head_dim)
  Tensor Qh = transpose(Q4, 1, 2);                    // (B, n_heads, n, head_dim)
  tut::forma("reshape(Q, {1, 4, 3, 2})", Q4.value());
  tut::forma("transpose(..., 1, 2)", Qh.value());
  const Array Qc = Qh.value();  // uma cópia contígua, para ler por cabeça
  for (std::size_t h = 0; h < n_heads; ++h) {
    std::printf("cabeça %zu (colunas %zu e %zu de Q): %s\n", h, h * head_dim, h * head_dim + 1,
                tut::numeros(Qc.data() + h * 4 * head_dim, 4 * head_dim, 1).c_str());
  }
  tut::texto(
      "O reshape só relê os 6 números de cada posição como 3 grupos de 2 (nada se move na\n"
      "memória); o transpose põe o eixo das cabeças antes do das posições, para que cada\n"
      "cabeça seja uma matriz (n, head_dim), como a Q do capítulo 15. A cabeça h fica com as\n"
      "colunas h·head_dim a h·head_dim + head_dim - 1 de cada posição.");
  Tensor de_volta = reshape(transpose(Qh, 1, 2), {1, 4, 6});
  double diferenca = 0;
  for (std::size_t i = 0; i < numeros.size(); ++i)
    diferenca = std::max(diferenca, double(std::fabs(de_volta.value().data()[i] - numeros[i])));
  std::printf("juntar as cabeças (transpose e reshape de volta), diferença para Q: %.1f\n",
              diferenca);
  tut::texto(
      "Depois da atenção, as saídas das cabeças (B, n_heads, n, head_dim) fazem o caminho de\n"
      "volta e ficam lado a lado em d_model números por posição; W_O as mistura (capítulo 20).");

  tut::secao("Cabeças treinadas olham para lugares diferentes");
  tut::texto(
      "Um modelo minúsculo (1 camada, 4 cabeças de 8 números, cada uma com a sua K e a sua\n"
      "V), treinado aqui por 400 passos em Dom Casmurro. O modelo inteiro vem nos capítulos\n"
      "21 a 24, e o treino no capítulo 27; por ora, basta ler as cabeças da sua camada.");
  ModelConfig cfg = tut::config_pequena(0);
  cfg.d_model = 32;
  cfg.n_layers = 1;
  cfg.n_heads = 4;
  cfg.n_kv_heads = 4;  // sem GQA: cada cabeça tem K e V próprias (a GQA é o capítulo 19)
  cfg.ffn_hidden = 88;
  tut::ModeloPequeno m = tut::treinar_modelo(cfg, 400, /*seed=*/18);
  const Decoder& modelo = *m.modelo;

  const std::u32string frase = U"Capitu, disse eu, ";
  const std::vector<std::int32_t> ids = m.tokenizer.encode(frase);
  Tracer tracer;
  run_with_hooks(modelo, as_batch(ids), tracer);
  std::printf("\ntexto:                ");
  for (char32_t c : frase) std::printf(" %s", como_texto(c).c_str());
  std::printf("\n");
  for (std::size_t h = 0; h < cfg.n_heads; ++h) {
    const Array a = padrao(tracer, h);
    std::printf("cabeça %zu olha mais em:", h);
    for (std::size_t t = 0; t < frase.size(); ++t) {
      std::size_t j = 0;
      for (std::size_t k = 0; k <= t; ++k)
        if (a(t, k) > a(t, j)) j = k;
      std::printf(" %s", como_texto(frase[j]).c_str());
    }
    std::printf("\n");
  }
  tut::texto(
      "Em cada posição, a letra para a qual a cabeça dá o maior peso (o '_' é o espaço). Uma\n"
      "cabeça que repete o texto deslocado de uma casa olha para a letra logo antes; uma que\n"
      "repete o próprio texto olha para a sua posição; outras pulam para uma vogal, um espaço.\n"
      "O maior peso não conta tudo (a linha de pesos se espalha); por isso, a medida abaixo.");

  tut::secao("Medir, não só olhar: um escore por cabeça");
  tut::texto(
      "Dois escores do padrão A (n, n) de uma cabeça, médios em 16 janelas de 32 caracteres\n"
      "que o treino não viu: o de token anterior (interp::previous_token_score; docs/\n"
      "interpretabilidade.md) e o da própria posição, o mesmo com a diagonal (à mão, acima):\n"
      "  token anterior   = (1 / (n-1)) · soma_{t=1}^{n-1} A[t][t-1]\n"
      "  própria posição  = (1 / (n-1)) · soma_{t=1}^{n-1} A[t][t]\n"
      "A régua é a cabeça que espalha o peso igualmente (a média do passado, capítulo 13):\n"
      "1/(t+1) na posição t dá 0.099 nos dois, com 32 posições.");
  Ids x, y;
  tut::janelas_de_validacao(m.tokenizer, 16, cfg.context_length, x, y);
  const Escores treinado = escores(modelo, x);
  imprimir("", treinado);
  std::printf("token anterior, da cabeça mais baixa à mais alta: %.3f\n",
              amplitude(treinado.anterior));
  std::printf("própria posição, da cabeça mais baixa à mais alta: %.3f\n",
              amplitude(treinado.propria));
  tut::texto(
      "As cabeças diferem, e não por pouco: a que mais olha para a letra anterior dá a ela\n"
      "perto do dobro do peso que a que menos olha dá. A mesma conta, com pesos diferentes,\n"
      "aprendeu a olhar para lugares diferentes. Ninguém disse a uma cabeça o que fazer; o\n"
      "treino as separou porque olhar para lugares diferentes ajuda a prever a próxima\n"
      "letra. Os capítulos 32 a 35 abrem cabeças assim num modelo maior. O capítulo 19 faz as\n"
      "cabeças de consulta dividirem as K e V (GQA), para gastar menos.");

  tut::experimente({
      "meça as mesmas cabeças ANTES do treino (um Decoder da mesma configuração, semente\n"
      "    18: os pesos iniciais do mesmo modelo): elas já diferem?",
      "corte a Q de 6 números em 2 cabeças de 3 (reshape para {1, 4, 2, 3}): que colunas\n"
      "    cada cabeça recebe?",
  });
  tut::respostas();
  {
    ModelConfig c0 = cfg;
    c0.vocab_size = m.tokenizer.vocab_size();
    Decoder inicial(c0, 18);
    const Escores antes = escores(inicial, x);
    imprimir("1. antes do treino: ", antes);
    std::printf("1. antes do treino, token anterior, da mais baixa à mais alta: %.3f\n",
                amplitude(antes.anterior));
    std::printf("1. antes do treino, própria posição, da mais baixa à mais alta: %.3f\n",
                amplitude(antes.propria));
    tut::texto(
        "   Não: com os pesos pequenos do começo, as notas q·k são quase zero e toda cabeça\n"
        "   fica perto da média do passado (a régua, 0.099). A diferença vem do treino.");
  }
  {
    Tensor Q2 = transpose(reshape(Q, {1, 4, 2, 3}), 1, 2);
    tut::forma("2. reshape para {1, 4, 2, 3} e transpose", Q2.value());
    const Array Q2c = Q2.value();
    for (std::size_t h = 0; h < 2; ++h) {
      std::printf("2. cabeça %zu (colunas %zu a %zu): %s\n", h, h * 3, h * 3 + 2,
                  tut::numeros(Q2c.data() + h * 12, 12, 1).c_str());
    }
  }
  return 0;
}
