// Capítulo 35 — Cabeças de indução: vê-las nascer durante o treino.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.hpp"
#include "common.hpp"
#include "treino_rapido.hpp"

#include "interp/ablation.hpp"
#include "interp/head_scores.hpp"

using namespace glass;

namespace {

constexpr std::size_t kSimbolos = 16;  // vocabulário da tarefa
constexpr std::size_t kPeriodo = 16;   // P tokens sorteados, depois os mesmos P de novo
constexpr std::size_t kT = 2 * kPeriodo;
constexpr std::size_t kLote = 16;

/// Um lote da tarefa: cada linha são p símbolos sorteados, repetidos até encher kT posições;
/// y = x deslocado de um. O período p de cada linha vai para `periodos`: sorteado entre 6 e
/// kPeriodo, ou sempre kPeriodo com `fixo`.
void lote(Rng& rng, Ids& x, Ids& y, std::vector<std::size_t>& periodos, bool fixo = false) {
  std::uniform_int_distribution<std::int32_t> sorteio(0, std::int32_t(kSimbolos) - 1);
  std::uniform_int_distribution<std::size_t> periodo(6, kPeriodo);
  x = Ids::from_shape({kLote, kT});
  y = Ids::from_shape({kLote, kT});
  periodos.assign(kLote, kPeriodo);
  for (std::size_t b = 0; b < kLote; ++b) {
    const std::size_t p = fixo ? kPeriodo : periodo(rng);
    periodos[b] = p;
    std::vector<std::int32_t> s(p);
    for (std::int32_t& v : s) v = sorteio(rng);
    for (std::size_t t = 0; t < kT; ++t) {
      x(b, t) = s[t % p];
      y(b, t) = s[(t + 1) % p];
    }
  }
}

/// A perda média (nats) de logits (B, T, V) contra y, nas previsões da 1ª cópia de cada linha
/// (t < p - 1: nada a copiar) ou nas da repetição (t >= p: a resposta já apareceu).
double perda_em(const Array& logits, const Ids& y, const std::vector<std::size_t>& periodos,
                bool repeticao) {
  const std::size_t B = logits.shape()[0], T = logits.shape()[1], V = logits.shape()[2];
  double soma = 0;
  std::size_t quantas = 0;
  for (std::size_t b = 0; b < B; ++b) {
    const std::size_t de = repeticao ? periodos[b] : 0, ate = repeticao ? T : periodos[b] - 1;
    for (std::size_t t = de; t < ate; ++t) {
      const Scalar* l = logits.data() + (b * T + t) * V;
      double m = l[0], z = 0;
      for (std::size_t v = 0; v < V; ++v) m = std::max(m, double(l[v]));
      for (std::size_t v = 0; v < V; ++v) z += std::exp(double(l[v]) - m);
      soma += -(double(l[y(b, t)]) - m - std::log(z));
      ++quantas;
    }
  }
  return soma / double(quantas);
}

struct Maior {
  std::size_t camada = 0, cabeca = 0;
  double escore = 0;
};

Maior maior(const Array& s) {
  Maior r;
  for (std::size_t L = 0; L < s.shape()[0]; ++L)
    for (std::size_t h = 0; h < s.shape()[1]; ++h)
      if (s(L, h) > r.escore) r = {L, h, double(s(L, h))};
  return r;
}

void tabela(const char* rotulo, const Array& s) {
  for (std::size_t L = 0; L < s.shape()[0]; ++L) {
    std::printf("%s, camada %zu:", rotulo, L);
    for (std::size_t h = 0; h < s.shape()[1]; ++h) std::printf(" %.3f", double(s(L, h)));
    std::printf("\n");
  }
}

struct Treino {
  std::unique_ptr<Decoder> modelo;
  std::vector<long> passos;
  std::vector<double> primeira, segunda, inducao;  // por linha impressa
};

/// Treina um decoder de `camadas` blocos na tarefa por `total` passos, imprimindo a cada 50
/// passos a perda das duas partes e o maior escore de indução na sonda.
Treino treinar(std::size_t camadas, long total, bool imprimir, bool fixo = false) {
  const long cada = 50;
  ModelConfig cfg;
  cfg.vocab_size = kSimbolos;
  cfg.d_model = 64;
  cfg.n_layers = camadas;
  cfg.n_heads = 4;
  cfg.n_kv_heads = 4;
  cfg.ffn_hidden = 128;
  cfg.context_length = kT;
  Treino r;
  r.modelo = std::make_unique<Decoder>(cfg, 7);
  AdamW otimizador(r.modelo->named_parameters());
  LrSchedule agenda;
  agenda.lr_max = 3e-3;
  agenda.min_lr = 3e-4;
  agenda.warmup = 20;
  agenda.decay_iters = total;
  Rng rng(5);
  const std::vector<std::int32_t> sonda = repeated_random_tokens(kPeriodo, kSimbolos, 123);
  Ids x, y;
  std::vector<std::size_t> periodos;
  for (long it = 0; it <= total; ++it) {
    lote(rng, x, y, periodos, fixo);
    Tensor logits = r.modelo->forward(x);
    Tensor perda = cross_entropy(logits, y);
    if (it % cada == 0) {
      const double p1 = perda_em(logits.value(), y, periodos, false);
      const double p2 = perda_em(logits.value(), y, periodos, true);
      const Maior m = maior(head_scores(*r.modelo, sonda, kPeriodo).induction);
      r.passos.push_back(it);
      r.primeira.push_back(p1);
      r.segunda.push_back(p2);
      r.inducao.push_back(m.escore);
      if (imprimir) {
        std::printf(
            "passo %3ld: perda 1ª cópia %.3f, repetição %.3f | indução máx %.3f (camada %zu, "
            "cabeça %zu)\n",
            it, p1, p2, m.escore, m.camada, m.cabeca);
      }
    }
    if (it == total) break;
    otimizador.zero_grad();
    perda.backward();
    clip_grad_norm(r.modelo->parameters(), 1.0);
    otimizador.step(agenda.at(it));
  }
  return r;
}

/// Os escores das cabeças de um checkpoint de glass train (o argumento opcional do programa).
int escores_do_checkpoint(const char* dir) {
  const Checkpoint carregado = load_checkpoint(dir);
  const Decoder& modelo = carregado.model();
  const std::size_t periodo = 32;
  const std::vector<std::int32_t> sonda =
      repeated_random_tokens(periodo, modelo.config().vocab_size, 123);
  const HeadScores s = head_scores(modelo, sonda, periodo);
  std::printf("checkpoint %s, sonda de %zu tokens sorteados repetidos:\n", dir, periodo);
  tabela("indução", s.induction);
  tabela("token anterior", s.previous_token);
  tabela("primeira posição", s.first_position);
  const Maior m = maior(s.induction);
  std::printf("maior escore de indução: %.4f (camada %zu, cabeça %zu)\n", m.escore, m.camada,
              m.cabeca);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2) return escores_do_checkpoint(argv[1]);
  tut::capitulo(35, "Cabeças de indução: vê-las nascer durante o treino");
  tut::novo(
      "interp::induction_score e head_scores: a cabeça que copia o que veio depois da última\n"
      "vez; um modelo de 2 camadas que a forma em segundos, o escore ao lado da perda.");
  tut::texto(
      "Leia \"... Capitu ... Cap\": o que vem agora? Quem leu o começo diz \"itu\". Uma cabeça de\n"
      "indução (Olsson et al. 2022, \"In-context learning and induction heads\"; Elhage et al.\n"
      "2021) faz isso: na posição de um token A, ela procura o A anterior e olha para o token\n"
      "que veio LOGO DEPOIS dele, para copiá-lo. O escore mede isso numa sonda: P tokens\n"
      "sorteados, repetidos uma vez (n = 2P). Na segunda cópia, a posição t lê o mesmo token\n"
      "que a posição t - P; o que veio depois dele está em t - P + 1. Então\n"
      "  escore de indução = (1 / P) · soma_{t=P}^{2P-1} A[t][t - P + 1].\n"
      "Vale 1 para uma cabeça de indução perfeita. Veja docs/interpretabilidade.md.");

  tut::secao("À mão: a sonda \"a b c d a b c d\" (P = 4)");
  const std::size_t n = 8, P = 4;
  Array inducao = xt::zeros<Scalar>({n, n}), anterior = xt::zeros<Scalar>({n, n});
  for (std::size_t t = 0; t < n; ++t) {
    inducao(t, t >= P ? t - P + 1 : 0) = 1;  // na 2ª cópia, o token depois do anterior igual
    anterior(t, t >= 1 ? t - 1 : 0) = 1;     // sempre a posição de trás
  }
  std::printf("posições que a cabeça de indução olha na 2ª cópia: 4->1 5->2 6->3 7->4\n");
  std::printf("escore de indução da cabeça de indução: %.6f\n", induction_score(inducao, P));
  std::printf("escore de indução da cabeça do token anterior: %.6f\n",
              induction_score(anterior, P));
  std::printf("escore de token anterior da cabeça do token anterior: %.6f\n",
              previous_token_score(anterior));
  Array uniforme = xt::zeros<Scalar>({kT, kT});
  for (std::size_t t = 0; t < kT; ++t)
    for (std::size_t j = 0; j <= t; ++j) uniforme(t, j) = Scalar(1.0 / double(t + 1));
  std::printf("régua: escore de indução do padrão uniforme, P = %zu: %.4f\n", kPeriodo,
              induction_score(uniforme, kPeriodo));
  tut::texto(
      "Os dois escores separam as duas cabeças. A régua: quem espalha o peso pelo passado\n"
      "tira 1/(t+1) em cada linha da 2ª cópia, uns 0.04 com P = 16.");

  tut::secao("A tarefa: símbolos sorteados, repetidos");
  tut::texto(
      "Cada janela de 32 posições tem p símbolos sorteados entre 16 (p sorteado de 6 a 16) e\n"
      "depois os mesmos p de novo, até encher. Na 1ª cópia não há o que aprender: o melhor é o\n"
      "palpite uniforme, log(16). Na repetição, quem souber copiar acerta tudo. Como p muda de\n"
      "janela para janela, olhar sempre a mesma distância para trás não basta: é preciso achar\n"
      "o token igual. O modelo: 2 blocos, d_model 64, 4 cabeças (sem GQA), contexto 32; AdamW,\n"
      "lr 3e-3, lotes de 16 janelas. A cada 50 passos, a perda da 1ª cópia e a da repetição no\n"
      "lote do passo, e o maior escore de indução das 8 cabeças numa sonda fixa (P = 16).");
  std::printf("log(16) = %.4f\n", std::log(16.0));
  tut::secao("Treino");  // daqui em diante, números de modelos treinados aqui
  const long total = 800;
  Treino t2 = treinar(2, total, true);
  std::size_t virada = t2.passos.size();
  for (std::size_t i = 0; i < t2.passos.size(); ++i)
    if (t2.inducao[i] > 0.15) {
      virada = i;
      break;
    }
  if (virada > 0 && virada < t2.passos.size()) {
    std::printf(
        "o escore passou de 0.15 no passo %ld; a perda da repetição, no passo anterior e nesse: "
        "%.3f -> %.3f\n",
        t2.passos[virada], t2.segunda[virada - 1], t2.segunda[virada]);
  }
  tut::texto(
      "Uma virada, não uma descida suave: por centenas de passos o escore fica na régua e a\n"
      "perda da repetição desce devagar (o modelo aprende só que um símbolo já visto é mais\n"
      "provável); então, em uns 100 a 200 passos, o escore salta para 5 vezes a régua e a perda\n"
      "da repetição despenca junto. É a \"mudança de fase\" de Olsson et al. 2022: a cabeça de indução e a queda da\n"
      "perda chegam juntas.");

  const Decoder& modelo = *t2.modelo;
  const HeadScores escores =
      head_scores(modelo, repeated_random_tokens(kPeriodo, kSimbolos, 123), kPeriodo);
  tut::secao("As 8 cabeças depois do treino");
  tabela("indução", escores.induction);
  tabela("token anterior", escores.previous_token);
  const Maior cabeca = maior(escores.induction);
  std::printf("a cabeça de indução: camada %zu, cabeça %zu, escore %.3f\n", cabeca.camada,
              cabeca.cabeca, cabeca.escore);
  tut::texto(
      "A cabeça de indução está na camada 1, e precisa estar: para olhar \"o token depois do A\n"
      "anterior\", a chave daquela posição tem de saber qual token veio ANTES dela, e isso só\n"
      "existe depois que uma cabeça da camada 0 copiou o token anterior para o fluxo (Elhage et\n"
      "al. 2021 chamam isso de composição K): veja o escore de token anterior da camada 0. Três\n"
      "cabeças da camada 1 dividem o trabalho, cada uma com um escore parcial. Treinando mais\n"
      "(1500 passos, medido uma vez) o escore da melhor chega a 0.5 e a perda da repetição a\n"
      "0.25. A resposta 2 do Experimente testa com 1 camada.");

  tut::secao("E o modelo padrão em Dom Casmurro?");
  tut::texto(
      "Medido uma vez (não refeito por este programa nem pelos testes): `glass train` com\n"
      "tudo padrão (2000 passos, 4 camadas de 4 cabeças, contexto 64), num Intel Xeon de 2\n"
      "núcleos dividido com outros trabalhos, e os escores numa sonda de 32 caracteres sorteados\n"
      "repetidos (P = 32) com este mesmo programa:\n"
      "  build/tutorials/35_cabecas_de_inducao runs/domcasmurro\n"
      "O maior escore de indução das 16 cabeças foi 0.0161 (camada 0, cabeça 1); todas abaixo de\n"
      "0.02, e abaixo da régua do padrão uniforme com P = 32 (0.0214). O modelo padrão não tem\n"
      "cabeça de indução: 2000 passos de lotes de 12 janelas de 64 caracteres são pouco, e num\n"
      "romance as repetições longas e exatas que a indução recompensa são raras. As cabeças\n"
      "dele olham para trás (escore de token anterior até 0.43, camada 2, cabeça 0), não para o\n"
      "que veio depois da última vez.");

  tut::experimente({
      "desligue a cabeça de indução (ablação por zero, capítulo 33): a repetição volta a ser\n"
      "    adivinhação?",
      "treine o mesmo modelo com 1 camada só (n_layers = 1): forma-se uma cabeça de indução?",
      "com 1 camada, mas com o período sempre 16 (lote(..., fixo = true)): e agora?",
  });

  tut::respostas();
  {
    Rng rng(77);
    Ids x, y;
    std::vector<std::size_t> periodos;
    lote(rng, x, y, periodos);
    const Array normal = ablated_logits(modelo, x, {}, AblationMode::zero);
    const Array sem =
        ablated_logits(modelo, x, {{cabeca.camada, cabeca.cabeca}}, AblationMode::zero);
    std::printf(
        "1. perda da repetição num lote novo: com a cabeça %.3f, sem ela %.3f (log(16) = %.3f)\n",
        perda_em(normal, y, periodos, true), perda_em(sem, y, periodos, true), std::log(16.0));
    tut::texto(
        "   Sem a cabeça de indução a perda da repetição sobe: era ela que mais copiava.\n"
        "   Não volta a log(16) porque as outras duas cabeças da camada 1 também copiam.");
  }
  {
    const Treino t1 = treinar(1, total, false);
    const double maior1 = *std::max_element(t1.inducao.begin(), t1.inducao.end());
    std::printf(
        "2. 1 camada, %ld passos: perda da repetição no fim %.3f, maior escore de indução %.3f\n",
        total, t1.segunda.back(), maior1);
    tut::texto(
        "   Com uma camada só não há composição: a chave de uma posição não sabe o token anterior,\n"
        "   e a cabeça não tem como achar \"o que veio depois do A\". Nada de virada.");
  }
  {
    const Treino fixo = treinar(1, 300, false, /*fixo=*/true);
    std::printf(
        "3. 1 camada, período sempre 16, 300 passos: perda da repetição %.3f, maior escore de "
        "indução %.3f\n",
        fixo.segunda.back(), fixo.inducao.back());
    tut::texto(
        "   Com o período fixo, a resposta está sempre 15 posições para trás: uma cabeça de uma\n"
        "   camada aprende a olhar essa DISTÂNCIA (o RoPE, capítulo 17, dá a distância de graça) e\n"
        "   tira quase 1 no escore sem ser uma cabeça de indução. O escore mede o padrão na sonda,\n"
        "   não o mecanismo: por isso a tarefa deste capítulo sorteia o período.");
  }
  return 0;
}
