// Capítulo 42 — O BPE compensa? O mesmo modelo treinado em caracteres e em tokens BPE com o
// mesmo cômputo, comparado em bits por byte de validação.
// (Lê-se depois dos capítulos 27 e 31.)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "autograd/ops.hpp"
#include "common.hpp"
#include "data/batches.hpp"
#include "data/bpe_tokenizer.hpp"
#include "data/text.hpp"
#include "data/tokenizer.hpp"
#include "nn/decoder.hpp"
#include "train/adamw.hpp"
#include "train/clip.hpp"
#include "train/schedule.hpp"
#include "train/trainer.hpp"
#include "treino_rapido.hpp"

using namespace glass;

namespace {

constexpr long kPassos = 200;
constexpr long kCada = 50;  // mede a validação nos passos 0, 50, ..., 200

// Os ids de um texto e o que se precisa para medir: quantos tokens, quantos bytes.
struct Dados {
  std::string nome;
  std::size_t V = 0;
  std::vector<std::int32_t> treino, validacao;
  std::size_t bytes_validacao = 0;
};

// Bits por byte do modelo na validação inteira: janelas seguidas de `contexto` tokens, a perda
// média de todas as previsões vezes os tokens da validação, sobre os seus bytes (train/trainer.hpp).
double bpb_validacao(const Decoder& modelo, const Dados& d, std::size_t contexto) {
  NoGradGuard sem_fita;
  const std::size_t janelas = (d.validacao.size() - 1) / contexto;
  double soma = 0;
  for (std::size_t inicio = 0; inicio < janelas; inicio += 16) {
    const std::size_t n = std::min<std::size_t>(16, janelas - inicio);
    Ids x = Ids::from_shape({n, contexto}), y = Ids::from_shape({n, contexto});
    for (std::size_t b = 0; b < n; ++b) {
      for (std::size_t t = 0; t < contexto; ++t) {
        x(b, t) = d.validacao[(inicio + b) * contexto + t];
        y(b, t) = d.validacao[(inicio + b) * contexto + t + 1];
      }
    }
    soma += cross_entropy(modelo.forward(x), y).item() * double(n);
  }
  return bits_per_byte(soma / double(janelas), d.validacao.size(), d.bytes_validacao);
}

struct Rodada {
  std::size_t parametros = 0;
  std::size_t multiplicacoes = 0;  // por token: os parâmetros menos a tabela de embeddings
  std::vector<double> bpb;         // nos passos 0, 50, ..., 200
};

// O treino do capítulo 27 (lotes de 16 janelas de 32 tokens, clipping em 1, AdamW com
// aquecimento e cosseno), as mesmas sementes para os dois tokenizadores.
Rodada treinar(const Dados& d, long passos) {
  ModelConfig cfg = tut::config_pequena(d.V);
  cfg.vocab_cap = std::max(cfg.vocab_cap, d.V);  // o teto do tokenizador de caracteres
  Decoder modelo(cfg, 21);
  Rodada r;
  for (const Tensor& p : modelo.parameters()) r.parametros += p.value().size();
  r.multiplicacoes = r.parametros - cfg.vocab_size * cfg.d_model;
  BatchSampler lotes(d.treino, 16, cfg.context_length, 22);
  AdamW otimizador(modelo.named_parameters());
  LrSchedule agenda;
  agenda.lr_max = 3e-3;
  agenda.min_lr = 3e-4;
  agenda.warmup = 20;
  agenda.decay_iters = passos;
  Ids x, y;
  for (long it = 0; it <= passos; ++it) {
    if (it % kCada == 0) r.bpb.push_back(bpb_validacao(modelo, d, cfg.context_length));
    if (it == passos) break;
    lotes.next(x, y);
    Tensor perda = cross_entropy(modelo.forward(x), y);
    otimizador.zero_grad();
    perda.backward();
    clip_grad_norm(modelo.parameters(), 1.0);
    otimizador.step(agenda.at(it));
  }
  return r;
}

// Quantas linhas do vocabulário aparecem menos de `vezes` vezes nos ids de treino.
std::size_t linhas_raras(const std::vector<std::int32_t>& ids, std::size_t V, std::size_t vezes) {
  std::vector<std::size_t> conta(V, 0);
  for (std::int32_t id : ids) ++conta[std::size_t(id)];
  std::size_t raras = 0;
  for (std::size_t c : conta) raras += c < vezes;
  return raras;
}

Dados dados_bpe(const std::u32string& treino, const std::u32string& validacao,
                std::size_t bytes_validacao, std::size_t V) {
  const BpeTokenizer tok = BpeTokenizer::train(treino, V);
  return {"BPE " + std::to_string(V), tok.vocab_size(), tok.encode(treino), tok.encode(validacao),
          bytes_validacao};
}

}  // namespace

int main() {
  tut::capitulo(42, "O BPE compensa?");
  tut::novo(
      "o mesmo modelo treinado em caracteres e em tokens BPE com o mesmo cômputo, comparado\n"
      "na medida que não depende do tokenizador: bits por byte de validação.");
  tut::texto(
      "Lê-se depois dos capítulos 27 (o treino) e 31 (o BPE). O capítulo 31 mostrou que a perda\n"
      "por token não se compara entre tokenizadores e que bits por byte se compara (perda por\n"
      "token · tokens / (bytes · ln 2), a conta de `glass train` e `glass eval`). Aqui o\n"
      "mesmo modelo (a configuração do capítulo 27: d_model 64, 2 camadas, janela de 32) treina\n"
      "nos primeiros 36000 caracteres de Dom Casmurro com três tokenizadores: caracteres, BPE\n"
      "384 e BPE 1024 (cada BPE treinado só no texto de treino). A validação são os 4000\n"
      "caracteres seguintes, que nenhum deles viu.\n"
      "O mesmo cômputo, aqui: o mesmo número de passos (200), o mesmo lote (16 janelas de 32\n"
      "tokens), logo os mesmos 102400 tokens vistos pelo mesmo corpo (as camadas). Só mudam as\n"
      "linhas da tabela de embeddings (uma consulta, sem conta) e da cabeça de saída, que custa\n"
      "d_model · V multiplicações por token: num modelo deste tamanho isso não é pouco, e o BPE\n"
      "gasta mais por passo (a conta está abaixo; o Experimente 2 iguala as multiplicações).\n"
      "O que o BPE ganha de graça: cada token cobre mais bytes, então os mesmos passos passam\n"
      "por mais texto.");

  TextInfo info;
  const std::u32string livro = load_text(GLASS_SOURCE_DIR "/data/corpora/domcasmurro.txt", &info);
  const std::u32string treino = livro.substr(0, 36000), validacao = livro.substr(36000, 4000);
  const std::size_t bytes_validacao = u32_to_utf8(validacao).size();
  const std::size_t bytes_treino = u32_to_utf8(treino).size();
  std::printf("bytes de treino e de validação: %zu %zu\n", bytes_treino, bytes_validacao);

  const Tokenizer caracteres = Tokenizer::from_text(treino);
  std::vector<Dados> dados;
  dados.push_back({"caracteres", caracteres.vocab_size(), caracteres.encode(treino),
                   caracteres.encode(validacao, /*map_unknown=*/true), bytes_validacao});
  dados.push_back(dados_bpe(treino, validacao, bytes_validacao, 384));
  dados.push_back(dados_bpe(treino, validacao, bytes_validacao, 1024));

  tut::secao("Os três textos em tokens");
  for (const Dados& d : dados) {
    std::printf("%s, V, tokens de treino, bytes por token: %zu %zu %.3f\n", d.nome.c_str(), d.V,
                d.treino.size(), double(bytes_treino) / double(d.treino.size()));
  }
  tut::texto(
      "Os bytes por token dizem quanto texto cada passo vê: 102400 tokens são 102400 vezes\n"
      "isso em bytes. E há uma conta do outro lado: cada linha do vocabulário precisa de\n"
      "exemplos para aprender o seu embedding e a sua linha da cabeça de saída.");
  for (const Dados& d : dados) {
    std::printf("%s, tokens de treino por linha do vocabulário: %.1f\n", d.nome.c_str(),
                double(d.treino.size()) / double(d.V));
    std::printf("%s, linhas vistas menos de 10 vezes no treino: %zu de %zu\n", d.nome.c_str(),
                linhas_raras(d.treino, d.V, 10), d.V);
  }
  tut::texto(
      "(No BPE, as 256 linhas dos bytes e os 3 especiais quase nunca aparecem: o byte fallback\n"
      "só entra para um caractere que o treino não viu. São linhas pagas que não aprendem.)");

  tut::secao("Treino");
  std::vector<Rodada> rodadas;
  for (const Dados& d : dados) rodadas.push_back(treinar(d, kPassos));
  for (std::size_t i = 0; i < dados.size(); ++i) {
    std::printf("%s, parâmetros: %zu\n", dados[i].nome.c_str(), rodadas[i].parametros);
  }
  for (std::size_t i = 0; i < dados.size(); ++i) {
    std::printf("%s, bytes de texto vistos no treino: %.0f\n", dados[i].nome.c_str(),
                double(kPassos * 16 * 32) * double(bytes_treino) / double(dados[i].treino.size()));
  }
  // Multiplicações por token na ida: uma por peso, fora a tabela de embeddings (a volta custa
  // o dobro; a razão entre dois modelos é a mesma).
  const double custo_1024 = double(rodadas[2].multiplicacoes) / double(rodadas[0].multiplicacoes);
  std::printf("BPE 1024 sobre caracteres, multiplicações por token (sem a tabela): %.3f\n",
              custo_1024);
  for (std::size_t i = 0; i < dados.size(); ++i) {
    tut::linha(dados[i].nome + ", bits por byte de validação", rodadas[i].bpb, 3);
  }
  std::printf(
      "(nos passos 0, 50, 100, 150 e 200; no passo 0, quase log2(V) / bytes "
      "por token)\n");

  tut::secao("A resposta destes números");
  std::size_t melhor = 0;
  for (std::size_t i = 1; i < dados.size(); ++i) {
    if (rodadas[i].bpb.back() < rodadas[melhor].bpb.back()) melhor = i;
  }
  std::printf("o menor bits por byte de validação no fim: %s, %.3f\n", dados[melhor].nome.c_str(),
              rodadas[melhor].bpb.back());
  const double car = rodadas[0].bpb.back();
  std::printf("BPE 384 menos caracteres, bits por byte: %+.3f\n", rodadas[1].bpb.back() - car);
  std::printf("BPE 1024 menos caracteres, bits por byte: %+.3f\n", rodadas[2].bpb.back() - car);
  std::printf("o BPE compensa aqui: %s\n", melhor == 0 ? "não" : "sim");
  if (melhor == 0) {
    tut::texto(
        "Com o mesmo cômputo, os caracteres ganham aqui. O BPE vê mais bytes por passo, mas\n"
        "divide os mesmos 36000 caracteres de treino entre muito mais linhas do vocabulário:\n"
        "cada token é visto poucas vezes, e um embedding visto poucas vezes não aprende. Os\n"
        "caracteres têm poucas linhas, cada uma vista centenas de vezes.");
  } else {
    tut::texto(
        "Com o mesmo cômputo, o BPE ganha aqui. Em 200 passos nenhum modelo chega perto do que\n"
        "o texto permite: o que os limita é quanto texto viram, e o BPE vê mais bytes por passo\n"
        "(e a janela de 32 tokens cobre mais contexto). O preço aparece nas linhas vistas\n"
        "poucas vezes: o Experimente 1 mostra o vocabulário em que elas passam a pesar mais.");
  }
  tut::texto(
      "Os modelos grandes usam BPE porque treinam em bilhões de bytes: cada linha de um\n"
      "vocabulário de dezenas de milhares é vista milhões de vezes, e cada token a menos numa\n"
      "janela é contexto e cômputo poupados. Num livro só, com mais passos, a conta pode virar:\n"
      "o modelo BPE dá voltas no livro e o decora (docs/bpe.md mede um modelo maior por 2000\n"
      "passos, em que os caracteres ganham). Meça antes de supor.");

  tut::experimente({
      "troque o vocabulário do BPE por 2048;",
      "dê ao BPE 1024 as mesmas multiplicações que os caracteres: menos passos, na razão do\n"
      "    custo por token;",
  });
  tut::respostas();
  {
    const Dados grande = dados_bpe(treino, validacao, bytes_validacao, 2048);
    const Rodada r = treinar(grande, kPassos);
    std::printf("1) BPE 2048, linhas vistas menos de 10 vezes no treino: %zu de %zu\n",
                linhas_raras(grande.treino, grande.V, 10), grande.V);
    std::printf("   BPE 2048, bits por byte de validação no fim: %.3f\n", r.bpb.back());
    std::printf("   acima do BPE 1024: %s\n", r.bpb.back() > rodadas[2].bpb.back() ? "sim" : "não");
  }
  {
    const long passos = std::lround(double(kPassos) / custo_1024);
    const Rodada r = treinar(dados[2], passos);
    std::printf("2) BPE 1024 com %ld passos (200 / %.3f), bits por byte no fim: %.3f\n", passos,
                custo_1024, r.bpb.back());
    std::printf("   abaixo dos caracteres com 200 passos: %s\n",
                r.bpb.back() < car ? "sim" : "não");
  }
  return 0;
}
