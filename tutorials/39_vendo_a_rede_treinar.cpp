// Capítulo 39 — Vendo a rede treinar: perda, norma do gradiente, ativações e a razão
// atualização/peso de uma rodada boa, de uma com lr 10x e de uma com a inicialização 10x grande.
// (Lê-se depois do capítulo 27.)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "autograd/ops.hpp"
#include "common.hpp"
#include "data/batches.hpp"
#include "data/text.hpp"
#include "data/tokenizer.hpp"
#include "nn/decoder.hpp"
#include "nn/tracer.hpp"
#include "train/adamw.hpp"
#include "train/clip.hpp"
#include "train/schedule.hpp"
#include "treino_rapido.hpp"

using namespace glass;

namespace {

constexpr int kPassos = 120;
constexpr int kCada = 20;  // mede nos passos 0, 20, ..., 100 e no último (119)

// As séries de uma rodada, um valor por medida.
struct Serie {
  std::vector<double> perda, gradiente, rms_emb, rms_0, rms_1, rms_logits, razao;
  // A norma do gradiente de cada parte (antes do corte): embeddings, camada 0, camada 1 e a
  // norma final com a cabeça de saída. A soma dos quadrados das quatro é o quadrado da global.
  std::vector<double> grad_emb, grad_0, grad_1, grad_saida;
  std::vector<std::pair<std::string, double>> razao_final;  // log10(|Δp|/|p|) por matriz
};

// A que parte do modelo pertence um parâmetro: 0 embeddings, 1 e 2 as camadas, 3 o resto (a
// RMSNorm final e a cabeça de saída).
int parte(const std::string& nome) {
  if (nome.rfind("tok_embeddings", 0) == 0) return 0;
  if (nome.rfind("layers.0.", 0) == 0) return 1;
  if (nome.rfind("layers.1.", 0) == 0) return 2;
  return 3;
}

double rms(const Array& a) {
  double s = 0;
  for (Scalar v : a) s += double(v) * double(v);
  return std::sqrt(s / double(a.size()));
}

// O RMS do fluxo residual (depois dos embeddings e de cada camada) e dos logits num lote fixo,
// lido por ganchos do Tracer (nn/tracer.hpp) sem gravar fotografias.
void medir_ativacoes(const Decoder& modelo, const Ids& x, Serie& s) {
  Tracer tracer;
  tracer.set_recording(false);
  double emb = 0, c0 = 0, c1 = 0;
  tracer.add_hook("embeddings", [&](const std::string&, Array& v) { emb = rms(v); });
  tracer.add_hook("layers.0.out", [&](const std::string&, Array& v) { c0 = rms(v); });
  tracer.add_hook("layers.1.out", [&](const std::string&, Array& v) { c1 = rms(v); });
  NoGradGuard sem_fita;
  const Tensor logits = modelo.forward(x, nullptr, &tracer);
  s.rms_emb.push_back(emb);
  s.rms_0.push_back(c0);
  s.rms_1.push_back(c1);
  s.rms_logits.push_back(rms(logits.value()));
}

// Treina o modelo do capítulo 27 por kPassos passos (lotes de 16 janelas de 32 caracteres,
// clipping em 1, AdamW com aquecimento e cosseno até lr_max / 10) e mede a cada kCada passos.
// `escala_init` multiplica cada matriz do modelo recém-criado; `cortar` liga o clipping.
Serie treinar(const std::vector<std::int32_t>& ids, std::size_t V, double lr_max,
              Scalar escala_init, bool cortar) {
  const ModelConfig cfg = tut::config_pequena(V);
  Decoder modelo(cfg, 21);
  const auto nomeados = modelo.named_parameters();
  for (const auto& par : nomeados) {
    Tensor p = par.second;
    if (p.value().dimension() >= 2) p.value() *= escala_init;
  }
  BatchSampler lotes(ids, 16, cfg.context_length, 22);
  BatchSampler fixo(ids, 16, cfg.context_length, 99);
  Ids x, y, x_fixo, y_fixo;
  fixo.next(x_fixo, y_fixo);
  AdamW otimizador(nomeados);
  LrSchedule agenda;
  agenda.lr_max = lr_max;
  agenda.min_lr = lr_max / 10;
  agenda.warmup = 20;
  agenda.decay_iters = kPassos;
  Serie s;
  for (int it = 0; it < kPassos; ++it) {
    lotes.next(x, y);
    Tensor perda = cross_entropy(modelo.forward(x), y);
    otimizador.zero_grad();
    perda.backward();
    const bool medir = it % kCada == 0 || it == kPassos - 1;
    // A norma global antes do corte: a coluna grad_norm do steps.csv de `glass train`.
    const double norma = global_grad_norm(modelo.parameters());
    double quadrados[4] = {0, 0, 0, 0};  // por parte, também antes do corte
    if (medir) {
      for (const auto& par : nomeados) {
        for (Scalar g : par.second.grad()) quadrados[parte(par.first)] += double(g) * double(g);
      }
    }
    if (cortar) clip_grad_norm(modelo.parameters(), 1.0);
    std::vector<Array> antes;
    if (medir) {
      for (const auto& par : nomeados) antes.push_back(par.second.value());
    }
    otimizador.step(agenda.at(it));
    if (!medir) continue;
    s.perda.push_back(perda.item());
    s.gradiente.push_back(norma);
    s.grad_emb.push_back(std::sqrt(quadrados[0]));
    s.grad_0.push_back(std::sqrt(quadrados[1]));
    s.grad_1.push_back(std::sqrt(quadrados[2]));
    s.grad_saida.push_back(std::sqrt(quadrados[3]));
    // log10(|p_depois - p_antes| / |p_antes|) de cada matriz; a série guarda a mediana.
    std::vector<double> razoes;
    s.razao_final.clear();
    for (std::size_t i = 0; i < nomeados.size(); ++i) {
      const Array& depois = nomeados[i].second.value();
      if (depois.dimension() < 2) continue;
      double dif = 0, peso = 0;
      for (std::size_t k = 0; k < depois.size(); ++k) {
        const double d = double(depois.data()[k]) - double(antes[i].data()[k]);
        dif += d * d;
        peso += double(antes[i].data()[k]) * double(antes[i].data()[k]);
      }
      razoes.push_back(std::log10(std::sqrt(dif / peso)));
      s.razao_final.emplace_back(nomeados[i].first, razoes.back());
    }
    std::sort(razoes.begin(), razoes.end());
    s.razao.push_back(razoes[razoes.size() / 2]);
    medir_ativacoes(modelo, x_fixo, s);
  }
  return s;
}

// `instavel`: uma rodada instável de propósito; as suas linhas começam com "~ " (os dígitos mudam
// de uma CPU para outra, a forma não).
void mostrar(const char* rodada, const Serie& s, bool instavel = false) {
  const std::string r = (instavel ? "~ " : "") + std::string(rodada);
  tut::linha(r + ", perda", s.perda, 3);
  tut::linha(r + ", norma do gradiente", s.gradiente, 2);
  tut::linha(r + ", norma do gradiente, embeddings", s.grad_emb, 3);
  tut::linha(r + ", norma do gradiente, camada 0", s.grad_0, 3);
  tut::linha(r + ", norma do gradiente, camada 1", s.grad_1, 3);
  tut::linha(r + ", norma do gradiente, norma final e saída", s.grad_saida, 3);
  tut::linha(r + ", rms dos embeddings", s.rms_emb, 2);
  tut::linha(r + ", rms depois da camada 0", s.rms_0, 2);
  tut::linha(r + ", rms depois da camada 1", s.rms_1, 2);
  tut::linha(r + ", rms dos logits", s.rms_logits, 2);
  tut::linha(r + ", log10 atualização/peso, mediana das matrizes", s.razao, 2);
}

}  // namespace

int main() {
  tut::capitulo(39, "Vendo a rede treinar");
  tut::novo(
      "o que olhar enquanto um modelo treina: a perda, a norma do gradiente (no total e por\n"
      "camada), o tamanho das ativações camada a camada e a razão atualização/peso (em log10)\n"
      "de cada matriz.");
  tut::texto(
      "Lê-se depois do capítulo 27. A perda diz SE o treino vai bem; os outros números dizem\n"
      "POR QUÊ não vai. `glass train` grava, a cada passo, a perda, o lr e a norma global do\n"
      "gradiente antes do corte (o arquivo steps.csv da pasta do treino). Aqui medimos também\n"
      "o que ele não grava: o RMS do fluxo residual (ganchos do Tracer, capítulo 30) e\n"
      "  log10( |p_depois - p_antes| / |p_antes| )\n"
      "para cada matriz: quanto um passo muda os pesos, em ordens de grandeza. Karpathy\n"
      "(makemore, parte 3) sugere perto de -3 (um milésimo por passo) numa rede treinada por\n"
      "muito tempo com a descida simples. Com o AdamW, que anda cerca de lr em cada elemento\n"
      "(capítulo 25), a razão é perto de lr / (o tamanho típico de um peso): num treino curto\n"
      "e rápido como este, com lr 3e-3 e pesos de desvio 0.02, fica bem acima de -3 e segue a\n"
      "agenda do lr. O que importa é a forma da curva e a comparação entre rodadas.\n"
      "Três rodadas do modelo do capítulo 27, 120 passos, o mesmo texto e as mesmas sementes:\n"
      "  boa:        a inicialização do projeto e lr máximo 3e-3;\n"
      "  lr 10x:     lr máximo 3e-2;\n"
      "  init 10x:   cada matriz multiplicada por 10 logo depois de criada.\n"
      "Os valores são medidos nos passos 0, 20, 40, 60, 80, 100 e 119. As linhas que começam\n"
      "com ~ são de rodadas instáveis de propósito: um último bit diferente numa soma (outra\n"
      "CPU, outro OpenBLAS) muda os seus dígitos depois de algumas dezenas de passos; a forma\n"
      "das curvas, e o que se conclui delas, não muda.");

  const std::u32string livro = load_text(GLASS_SOURCE_DIR "/data/corpora/domcasmurro.txt");
  const std::u32string texto = livro.substr(0, 30000);
  const Tokenizer tok = Tokenizer::from_text(texto);
  const std::vector<std::int32_t> ids = tok.encode(texto);
  const std::size_t V = tok.vocab_size();
  std::printf("log(V): %.4f   (V = %zu: a perda de quem ainda não sabe nada)\n",
              std::log(double(V)), V);

  tut::secao("Treino");
  const Serie boa = treinar(ids, V, 3e-3, 1, true);
  const Serie lr10 = treinar(ids, V, 3e-2, 1, true);
  const Serie init10 = treinar(ids, V, 3e-3, 10, true);
  mostrar("boa", boa);
  mostrar("lr 10x", lr10, true);
  mostrar("init 10x", init10);

  tut::secao("Como ler");
  const double logV = std::log(double(V));
  std::printf("boa, perda inicial perto de log(V): %s (%.3f contra %.3f)\n",
              std::fabs(boa.perda.front() - logV) < 0.2 ? "sim" : "não", boa.perda.front(), logV);
  const auto maior = [](const std::vector<double>& v) {
    return std::size_t(std::max_element(v.begin(), v.end()) - v.begin());
  };
  std::printf("boa, a razão atualização/peso é máxima no passo %d (o fim do aquecimento)\n",
              int(maior(boa.razao)) * kCada);
  std::printf("init 10x, perda inicial acima de log(V) + 1: %s (%.3f)\n",
              init10.perda.front() > logV + 1 ? "sim" : "não", init10.perda.front());
  std::printf("init 10x menos boa, log10 atualização/peso no passo 0: %.2f\n",
              init10.razao.front() - boa.razao.front());
  std::printf("lr 10x, rms depois da camada 1 no fim mais de 50 vezes o da boa: %s\n",
              lr10.rms_1.back() > 50 * boa.rms_1.back() ? "sim" : "não");
  std::printf("lr 10x, norma do gradiente da camada 1 no fim abaixo de 1/10 da boa: %s\n",
              lr10.grad_1.back() < boa.grad_1.back() / 10 ? "sim" : "não");
  std::printf("init 10x, rms depois da camada 1 no fim, em vezes o da boa: %.0f\n",
              init10.rms_1.back() / boa.rms_1.back());
  std::printf("perda final, boa e init 10x: %.3f %.3f\n", boa.perda.back(), init10.perda.back());
  std::printf("lr 10x, perda final acima da boa: %s\n",
              lr10.perda.back() > boa.perda.back() + 0.1 ? "sim" : "não");
  tut::texto(
      "Uma rodada saudável (a boa): a perda começa perto de log(V) e cai; a norma do gradiente\n"
      "fica de ordem 1; o RMS do fluxo residual cresce no começo e se estabiliza; a razão\n"
      "atualização/peso sobe no aquecimento e desce com o cosseno, sem saltos.\n"
      "Com o lr 10x, o primeiro sinal não está na perda: é o fluxo residual, que cresce\n"
      "centenas de vezes. A RMSNorm na entrada de cada bloco esconde isso da atenção e da\n"
      "SwiGLU, e a perda não diverge; mas o treino termina pior que o da boa. O gradiente\n"
      "por camada mostra o custo: a volta da RMSNorm final divide pelo RMS do fluxo, e o\n"
      "gradiente da camada 1 fica mais de dez vezes menor que o da boa: ela quase não aprende.\n"
      "Com a inicialização 10x grande, os logits começam 10x maiores: a perda inicial fica bem\n"
      "acima de log(V) (o modelo erra com confiança). O primeiro passo do AdamW tem o mesmo\n"
      "tamanho (lr por elemento) sobre pesos 10x maiores: a razão começa 1 abaixo em log10\n"
      "(o exercício 24 faz essa conta). Aqui a RMSNorm salva quase todo o treino; numa rede\n"
      "sem normalização, como o MLP do capítulo 38, os tanh saturariam (capítulo 37).");
  std::printf("boa, log10 atualização/peso de cada matriz no último passo:\n");
  for (const auto& [nome, razao] : boa.razao_final)
    std::printf("  %-34s %.2f\n", nome.c_str(), razao);

  tut::experimente({
      "na rodada lr 10x, desligue o clipping (cortar = false);",
      "troque a escala da inicialização de 10 por 0.1 (pequena demais);",
      "troque o lr máximo da rodada boa de 3e-3 por 3e-4;",
  });
  tut::respostas();
  {
    const Serie sem_corte = treinar(ids, V, 3e-2, 1, false);
    tut::linha("~ 1) lr 10x sem clipping, perda", sem_corte.perda, 3);
    tut::linha("~    lr 10x sem clipping, norma do gradiente", sem_corte.gradiente, 2);
    std::printf("1) perda final sem clipping acima da com clipping: %s\n",
                sem_corte.perda.back() > lr10.perda.back() + 0.05 ? "sim" : "não");
    std::printf(
        "   (nas medidas a norma fica abaixo de 1 depois do passo 0: o corte age só nos\n"
        "    passos em que ela passa de 1, como o primeiro, e isso basta para mudar a rodada)\n");
    const Serie pequena = treinar(ids, V, 3e-3, 0.1f, true);
    tut::linha("~ 2) init 0.1x, perda", pequena.perda, 3);
    tut::linha("~    init 0.1x, rms depois da camada 1", pequena.rms_1, 2);
    tut::linha("~    init 0.1x, log10 atualização/peso, mediana das matrizes", pequena.razao, 2);
    std::printf("2) init 0.1x, perda final acima da boa: %s; razão no passo 0 acima da boa: %s\n",
                pequena.perda.back() > boa.perda.back() + 0.1 ? "sim" : "não",
                pequena.razao.front() > boa.razao.front() + 0.5 ? "sim" : "não");
    std::printf("   (pesos pequenos: o mesmo passo do AdamW é uma fração maior deles)\n");
    const Serie lenta = treinar(ids, V, 3e-4, 1, true);
    tut::linha("3) lr 3e-4, perda", lenta.perda, 3);
    tut::linha("   lr 3e-4, log10 atualização/peso, mediana das matrizes", lenta.razao, 2);
    double queda = 0;
    for (std::size_t i = 0; i < boa.razao.size(); ++i) queda += boa.razao[i] - lenta.razao[i];
    std::printf("   queda média da razão em log10, lr 3e-3 -> 3e-4: %.2f\n",
                queda / double(boa.razao.size()));
    std::printf(
        "   (menos que 1: os passos são 10x menores, mas os pesos da rodada boa também\n"
        "    crescem mais; e a perda desce devagar)\n");
  }
  return 0;
}
