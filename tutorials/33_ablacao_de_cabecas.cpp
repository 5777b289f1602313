// Capítulo 33 — Ablação: o que cada cabeça faz.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common.hpp"
#include "data/text.hpp"
#include "treino_rapido.hpp"

#include "interp/ablation.hpp"
#include "interp/logit_lens.hpp"

using namespace glass;

namespace {

/// As linhas [de, de + n) de um lote de ids (B, T).
Ids linhas(const Ids& x, std::size_t de, std::size_t n) {
  const std::size_t T = x.shape()[1];
  Ids r = Ids::from_shape({n, T});
  std::copy(x.data() + de * T, x.data() + (de + n) * T, r.data());
  return r;
}

std::string mostrar(const Tokenizer& tok, std::size_t id) {
  if (id == 0) return "?";
  const char32_t c = tok.char_of(static_cast<std::int32_t>(id));
  if (c == U' ') return "_";
  if (c == U'\n') return "\\n";
  return char_to_utf8(c);
}

void top3(const char* rotulo, const Array& p, const Tokenizer& tok) {
  const std::vector<std::size_t> top = top_k_indices(p.data(), p.size(), 3);
  std::printf("%s:", rotulo);
  for (std::size_t i : top) std::printf("  %s %.4f", mostrar(tok, i).c_str(), double(p(i)));
  std::printf("\n");
}

}  // namespace

int main() {
  tut::capitulo(33, "Ablação: o que cada cabeça faz");
  tut::novo(
      "interp::ablated_loss e ablation_table: desligar uma cabeça (zero ou média) e medir quanto\n"
      "a perda sobe; a tabela camadas × cabeças.");
  tut::texto(
      "Uma cabeça h da camada L produz, em cada posição, um vetor de head_dim números (a\n"
      "fotografia \"layers.L.attn.mix\" do capítulo 30, (cabeças, n, head_dim)). W_O junta as\n"
      "cabeças: a contribuição da cabeça h ao fluxo é W_O[:, h·head_dim:(h+1)·head_dim] vezes\n"
      "o seu vetor. Para saber o que a cabeça faz, desligue-a e veja o que o modelo perde:\n"
      "  ablação por zero:  o vetor da cabeça vira 0 (Michel, Levy e Neubig 2019);\n"
      "  ablação pela média: vira a sua média sobre um lote de referência (Wang et al. 2022):\n"
      "    a cabeça mantém a contribuição de sempre e perde só o que depende da entrada.\n"
      "A medida é Δperda = perda com a cabeça desligada - perda normal, em nats, num lote de\n"
      "validação. Um gancho (hook) do Tracer troca o valor no meio da passada. Veja\n"
      "docs/interpretabilidade.md.");

  tut::ModeloPequeno m = tut::treinar_rapido();
  const Decoder& modelo = *m.modelo;
  const auto& cfg = modelo.config();

  Ids x, y;
  tut::janelas_de_validacao(m.tokenizer, 32, 32, x, y);
  const Ids ref = linhas(x, 0, 16);                          // referência das médias
  const Ids xv = linhas(x, 16, 16), yv = linhas(y, 16, 16);  // onde se mede a perda
  std::printf("lote de validação: 16 janelas de 32 caracteres; referência das médias: outras 16\n");

  tut::secao("Desligar uma cabeça: camada 0, cabeça 0");
  const double base = ablated_loss(modelo, xv, yv, {}, AblationMode::zero);
  const double zero00 = ablated_loss(modelo, xv, yv, {{0, 0}}, AblationMode::zero);
  std::printf("perda normal: %.6f\n", base);
  std::printf("perda sem a cabeça (0, 0), por zero: %.6f   Δperda: %.6f\n", zero00, zero00 - base);

  tut::secao("Zerar a cabeça é apagar as suas colunas de W_O");
  {
    Decoder& editavel = *m.modelo;
    Array& wo = editavel.layers[0]->attention.wo.weight.value();  // (d_model, n_heads·head_dim)
    const Array guardado = wo;
    const std::size_t hd = cfg.head_dim();
    for (std::size_t i = 0; i < wo.shape()[0]; ++i)
      for (std::size_t j = 0; j < hd; ++j) wo(i, j) = 0;  // colunas 0 .. head_dim-1: cabeça 0
    const double sem_colunas = ablated_loss(modelo, xv, yv, {}, AblationMode::zero);
    wo = guardado;
    std::printf("perda com as colunas 0 a %zu de W_O da camada 0 zeradas: %.6f\n", hd - 1,
                sem_colunas);
    std::printf("diferença para a ablação por zero: %.6f\n", std::fabs(sem_colunas - zero00));
  }
  tut::texto(
      "A mesma perda: W_O · (vetor com a fatia da cabeça zerada) é W_O com as colunas da cabeça\n"
      "zeradas vezes o vetor inteiro. Desligar por zero é tirar a cabeça do modelo.");

  tut::secao("A tabela: Δperda de cada cabeça sozinha (nats)");
  const AblationTable zero = ablation_table(modelo, xv, yv, AblationMode::zero);
  const HeadMeans medias = head_means(modelo, ref);
  const AblationTable media = ablation_table(modelo, xv, yv, AblationMode::mean, &medias);
  std::printf("                  cabeça 0  cabeça 1  cabeça 2  cabeça 3\n");
  for (std::size_t L = 0; L < cfg.n_layers; ++L) {
    std::printf("zero, camada %zu:  ", L);
    for (std::size_t h = 0; h < cfg.n_heads; ++h)
      std::printf(" %9.4f", double(zero.delta_loss(L, h)));
    std::printf("\n");
  }
  for (std::size_t L = 0; L < cfg.n_layers; ++L) {
    std::printf("média, camada %zu: ", L);
    for (std::size_t h = 0; h < cfg.n_heads; ++h)
      std::printf(" %9.4f", double(media.delta_loss(L, h)));
    std::printf("\n");
  }
  std::size_t melhor_L = 0, melhor_h = 0;
  for (std::size_t L = 0; L < cfg.n_layers; ++L)
    for (std::size_t h = 0; h < cfg.n_heads; ++h)
      if (zero.delta_loss(L, h) > zero.delta_loss(melhor_L, melhor_h)) melhor_L = L, melhor_h = h;
  double menor = zero.delta_loss(0, 0);
  for (std::size_t i = 0; i < zero.delta_loss.size(); ++i)
    menor = std::min(menor, double(zero.delta_loss.data()[i]));
  std::printf("a cabeça que mais pesa (zero): camada %zu, cabeça %zu, Δperda %.4f\n", melhor_L,
              melhor_h, double(zero.delta_loss(melhor_L, melhor_h)));
  std::printf("a que menos pesa (zero): Δperda %.4f\n", menor);
  tut::texto(
      "As cabeças não pesam igual: a que mais pesa custa várias vezes a que menos pesa (que o\n"
      "modelo quase não usa, ou cujo trabalho outra cabeça também faz). Com GQA (capítulo 19) as cabeças 0 e 1 dividem K e\n"
      "V, mas cada uma tem a sua consulta e o seu vetor: desligamos a consulta, não o K/V.");

  tut::secao("O que muda na próxima letra depois de \"Capitu, disse eu\"");
  const std::vector<std::int32_t> prompt = m.tokenizer.encode(U"Capitu, disse eu");
  const NextTokenShift mudanca =
      next_token_shift(modelo, prompt, {{melhor_L, melhor_h}}, AblationMode::zero);
  top3("com todas as cabeças", mudanca.before, m.tokenizer);
  top3("sem a cabeça que mais pesa", mudanca.after, m.tokenizer);
  std::printf("divergência KL(antes || depois): %.4f nats\n", mudanca.kl_divergence);

  tut::experimente({
      "desligue as 4 cabeças da camada 1 juntas: a perda sobe a soma dos 4 Δ de cada uma?",
      "desligue as 8 cabeças (o modelo fica sem atenção, só vê o caractere atual): quanto sobe?",
      "compare as duas linhas da tabela: a ablação por zero pesa mais que a pela média?",
  });

  tut::respostas();
  {
    std::vector<HeadRef> camada1;
    double soma = 0;
    for (std::size_t h = 0; h < cfg.n_heads; ++h) {
      camada1.push_back({1, h});
      soma += zero.delta_loss(1, h);
    }
    const double juntas = ablated_loss(modelo, xv, yv, camada1, AblationMode::zero) - base;
    std::printf("1. camada 1 inteira por zero: Δperda %.4f; soma dos 4 Δ sozinhas: %.4f\n", juntas,
                soma);
    tut::texto(
        "   Não soma: juntas pesam mais que a soma. Sem uma cabeça, as outras ainda cobrem parte\n"
        "   do que ela passava; sem todas, nada cobre. A tabela mede cada cabeça com as outras\n"
        "   ligadas, e cabeças trabalham juntas.");
  }
  {
    std::vector<HeadRef> todas;
    for (std::size_t L = 0; L < cfg.n_layers; ++L)
      for (std::size_t h = 0; h < cfg.n_heads; ++h) todas.push_back({L, h});
    const double sem_atencao = ablated_loss(modelo, xv, yv, todas, AblationMode::zero);
    std::printf("2. sem nenhuma cabeça: perda %.4f (normal %.4f, log(V) = %.4f)\n", sem_atencao,
                base, std::log(double(cfg.vocab_size)));
    tut::texto(
        "   Sem atenção, cada posição só vê o seu caractere: o modelo perde o contexto, e o\n"
        "   resto dele, treinado com a atenção ligada, não sabe trabalhar sem ela.");
  }
  {
    std::size_t maior = 0;
    for (std::size_t i = 0; i < zero.delta_loss.size(); ++i)
      maior += zero.delta_loss.data()[i] > media.delta_loss.data()[i];
    std::printf("3. cabeças em que zero pesa mais que a média: %zu de %zu\n", maior,
                zero.delta_loss.size());
    tut::texto(
        "   Nem sempre: aqui as duas medidas quase concordam. A diferença entre elas é a parte\n"
        "   constante da contribuição (a média, que a cabeça soma em toda posição): o zero a tira,\n"
        "   a média não. Neste modelo ela é pequena. A média é a medida mais justa do que a cabeça\n"
        "   CALCULA (tira só o que depende da entrada); o zero, do que o modelo perde sem ela.");
  }
  return 0;
}
