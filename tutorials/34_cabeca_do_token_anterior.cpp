// Capítulo 34 — A cabeça do token anterior: medir, não supor.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common.hpp"
#include "treino_rapido.hpp"

#include "interp/ablation.hpp"
#include "interp/head_scores.hpp"

using namespace glass;

namespace {

/// O padrão (n, n) da cabeça h em "layers.L.attn.softmax" de um Tracer.
Array padrao(const Tracer& tracer, std::size_t L, std::size_t h) {
  const Array& p = tracer.get(attention_point(L, "softmax"));  // (cabeças, n, n)
  const std::size_t n = p.shape()[1];
  Array r = Array::from_shape({n, n});
  std::copy(p.data() + h * n * n, p.data() + (h + 1) * n * n, r.data());
  return r;
}

/// O escore de token anterior de cada cabeça (camadas, cabeças), médio sobre as janelas de x.
Array escores_no_texto(const Decoder& modelo, const Ids& x) {
  const auto& c = modelo.config();
  const std::size_t n = x.shape()[0], T = x.shape()[1];
  Array s = xt::zeros<Scalar>({c.n_layers, c.n_heads});
  for (std::size_t b = 0; b < n; ++b) {
    Tracer tracer;
    run_with_hooks(modelo,
                   as_batch(std::vector<std::int32_t>(x.data() + b * T, x.data() + (b + 1) * T)),
                   tracer);
    for (std::size_t L = 0; L < c.n_layers; ++L)
      for (std::size_t h = 0; h < c.n_heads; ++h)
        s(L, h) += Scalar(previous_token_score(padrao(tracer, L, h)) / double(n));
  }
  return s;
}

void tabela(const char* rotulo, const Array& s) {
  for (std::size_t L = 0; L < s.shape()[0]; ++L) {
    std::printf("%s, camada %zu:", rotulo, L);
    for (std::size_t h = 0; h < s.shape()[1]; ++h) std::printf(" %.3f", double(s(L, h)));
    std::printf("\n");
  }
}

std::pair<std::size_t, std::size_t> maior(const Array& s) {
  std::size_t bL = 0, bh = 0;
  for (std::size_t L = 0; L < s.shape()[0]; ++L)
    for (std::size_t h = 0; h < s.shape()[1]; ++h)
      if (s(L, h) > s(bL, bh)) bL = L, bh = h;
  return {bL, bh};
}

}  // namespace

int main() {
  tut::capitulo(34, "A cabeça do token anterior: medir, não supor");
  tut::novo(
      "interp::previous_token_score: quanto uma cabeça olha para a posição logo antes; o\n"
      "escore de um padrão sem preferência, a régua; a medida num modelo treinado.");
  tut::texto(
      "No capítulo 30, a cabeça 0 da camada 0 dava 0.81 do peso de 'i' ao 'p' logo antes, e\n"
      "0.63 de 'u' ao 't'. Parece uma cabeça do token anterior: a que, em toda posição, olha\n"
      "para a posição de trás (Olsson et al. 2022 e Elhage et al. 2021 as descrevem). Mas duas\n"
      "linhas escolhidas a dedo não provam nada. A definição, com o padrão A (n, n) da cabeça\n"
      "(A[t][j] = peso que a posição t dá à posição j):\n"
      "  escore de token anterior = (1 / (n-1)) · soma_{t=1}^{n-1} A[t][t-1]\n"
      "(a posição 0 não tem anterior e fica de fora). Vale 1 para uma cabeça que sempre olha\n"
      "para trás. Veja docs/interpretabilidade.md.");

  tut::secao("À mão, num padrão 4 × 4");
  Array a = {{1.0f, 0.0f, 0.0f, 0.0f},
             {0.2f, 0.8f, 0.0f, 0.0f},
             {0.1f, 0.6f, 0.3f, 0.0f},
             {0.25f, 0.25f, 0.25f, 0.25f}};
  tut::matriz("A", a, 2);
  std::printf("subdiagonal A[1][0], A[2][1], A[3][2]: %.2f %.2f %.2f\n", double(a(1, 0)),
              double(a(2, 1)), double(a(3, 2)));
  std::printf("escore à mão (0.2 + 0.6 + 0.25) / 3: %.6f\n", (0.2 + 0.6 + 0.25) / 3);
  std::printf("previous_token_score(A): %.6f\n", previous_token_score(a));

  tut::secao("A régua: uma cabeça sem preferência");
  const std::size_t n = 32;
  Array uniforme = xt::zeros<Scalar>({n, n});
  for (std::size_t t = 0; t < n; ++t)
    for (std::size_t j = 0; j <= t; ++j) uniforme(t, j) = Scalar(1.0 / double(t + 1));
  std::printf("escore do padrão uniforme (a média do passado, capítulo 13), n = %zu: %.4f\n", n,
              previous_token_score(uniforme));
  tut::texto(
      "Uma cabeça que espalha o peso igualmente pelo passado já tira 1/(t+1) na posição t: perto\n"
      "de 0.1 com 32 posições. Um escore só diz algo comparado a essa régua.");

  tut::ModeloPequeno m = tut::treinar_rapido();
  const Decoder& modelo = *m.modelo;
  const auto& cfg = modelo.config();

  tut::secao("O modelo do capítulo 30, no prompt dele");
  const std::vector<std::int32_t> prompt = m.tokenizer.encode(U"Capitu, disse eu");
  Tracer tracer;
  run_with_hooks(modelo, as_batch(prompt), tracer);
  const Array a00 = padrao(tracer, 0, 0);
  std::printf("cabeça (0, 0): peso de 'i' (posição 3) em 'p': %.2f; de 'u' (5) em 't': %.2f\n",
              double(a00(3, 2)), double(a00(5, 4)));
  Array no_prompt = Array::from_shape({cfg.n_layers, cfg.n_heads});
  for (std::size_t L = 0; L < cfg.n_layers; ++L)
    for (std::size_t h = 0; h < cfg.n_heads; ++h)
      no_prompt(L, h) = Scalar(previous_token_score(padrao(tracer, L, h)));
  tabela("escore no prompt (16 posições)", no_prompt);
  tut::texto(
      "A cabeça (0, 0), que parecia do token anterior, tem um escore modesto no prompt\n"
      "inteiro: as duas linhas do capítulo 30 eram exceções.");

  tut::secao("Em 16 janelas de validação de 32 caracteres");
  Ids x, y;
  tut::janelas_de_validacao(m.tokenizer, 16, 32, x, y);
  const Array texto = escores_no_texto(modelo, x);
  tabela("escore no texto", texto);
  const auto [bL, bh] = maior(texto);
  std::printf("maior escore no texto: camada %zu, cabeça %zu, %.3f (régua uniforme %.3f)\n", bL, bh,
              double(texto(bL, bh)), previous_token_score(uniforme));
  const double base = ablated_loss(modelo, x, y, {}, AblationMode::zero);
  const double sem = ablated_loss(modelo, x, y, {{bL, bh}}, AblationMode::zero);
  std::printf("Δperda ao desligar essa cabeça (zero): %.4f nats\n", sem - base);
  tut::texto(
      "A resposta honesta: neste modelo de 200 passos nenhuma cabeça é uma cabeça do token\n"
      "anterior. A melhor fica em cerca de 3 vezes a régua, longe de 1: olha para trás mais\n"
      "que o acaso, misturado com outras posições. E faz falta: desligá-la sobe a perda\n"
      "(Δperda acima). É o que se mede; a figura do capítulo 30, lida a olho,\n"
      "sugeria mais.");

  tut::experimente({
      "troque o texto por tokens sorteados (repeated_random_tokens): o escore muda? uma cabeça\n"
      "    do token anterior olha pela posição, não pelo conteúdo;",
      "treine 3 vezes mais (treinar_rapido(600)): a melhor cabeça se aproxima de 1?",
  });

  tut::respostas();
  {
    const std::vector<std::int32_t> sorteados = repeated_random_tokens(16, cfg.vocab_size, 3);
    const HeadScores s = head_scores(modelo, sorteados, 16);
    tabela("1. escore em 32 tokens sorteados", s.previous_token);
    const auto [rL, rh] = maior(s.previous_token);
    std::printf("1. maior escore nos sorteados: camada %zu, cabeça %zu, %.3f (no texto %.3f)\n", rL,
                rh, double(s.previous_token(rL, rh)), double(texto(rL, rh)));
    tut::texto(
        "   Em letras sorteadas os escores caem para perto da régua (0.099): estas cabeças olham\n"
        "   para trás por causa do conteúdo (que letra está lá), não só pela posição. Uma cabeça\n"
        "   do token anterior de verdade manteria o escore em qualquer texto.");
  }
  {
    tut::ModeloPequeno longo = tut::treinar_rapido(600);
    const Array s600 = escores_no_texto(*longo.modelo, x);
    tabela("2. escore no texto, 600 passos", s600);
    const auto [lL, lh] = maior(s600);
    std::printf("2. maior escore com 600 passos: camada %zu, cabeça %zu, %.3f (com 200: %.3f)\n",
                lL, lh, double(s600(lL, lh)), double(texto(bL, bh)));
    tut::texto(
        "   Cresce com o treino, mas fica longe de 1. Uma cabeça do token anterior limpa aparece\n"
        "   quando a tarefa a exige: no capítulo 35, para copiar o que veio depois da última vez.");
  }
  return 0;
}
