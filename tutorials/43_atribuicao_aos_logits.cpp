// Capítulo 43 — Atribuição direta aos logits e patching por atribuição.
#include <algorithm>
#include <cmath>
#include <cwctype>
#include <string>
#include <vector>

#include "common.hpp"
#include "data/text.hpp"
#include "treino_rapido.hpp"

#include "interp/attribution_patching.hpp"
#include "interp/logit_attribution.hpp"
#include "interp/patching.hpp"

using namespace glass;

namespace {

std::string mostrar(const Tokenizer& tok, std::int32_t id) {
  if (id == 0) return "?";
  const char32_t c = tok.char_of(id);
  if (c == U' ') return "_";
  if (c == U'\n') return "\\n";
  return char_to_utf8(c);
}

double sigmoide(double a) { return 1 / (1 + std::exp(-a)); }

/// O token mais provável na última posição de `tokens`.
std::int32_t previsao(const Decoder& modelo, const Tokens& tokens) {
  Tracer t;
  const Array logits = run_with_hooks(modelo, as_batch(tokens), t);
  const std::size_t T = tokens.size() - 1, V = logits.shape()[2];
  std::int32_t melhor = 0;
  for (std::size_t v = 0; v < V; ++v)
    if (logits(0, T, v) > logits(0, T, melhor)) melhor = std::int32_t(v);
  return melhor;
}

/// Estimativa e patching exato de um par, com a métrica logit[resposta limpa] - logit[resposta
/// corrompida] (ou log p da resposta limpa).
struct Comparacao {
  AttributionPatching estimativa;
  PatchingEffects exato;
  double rho = 0;
};

Comparacao comparar(const Decoder& modelo, const Tokens& limpo, const Tokens& corrompido,
                    PatchMetric::Kind tipo) {
  const PatchMetric metrica{tipo, previsao(modelo, limpo), previsao(modelo, corrompido)};
  Comparacao c{attribution_patching(modelo, limpo, corrompido, metrica),
               exact_patching(modelo, limpo, corrompido, metrica), 0};
  c.rho = spearman(c.estimativa.total.heads, c.exato.heads);
  return c;
}

/// As duas tabelas (estimativa e exato), camada a camada.
void tabela(const Comparacao& c) {
  const std::size_t L = c.exato.heads.shape()[0], H = c.exato.heads.shape()[1];
  std::printf("                        cabeça 0  cabeça 1  cabeça 2  cabeça 3       MLP\n");
  for (std::size_t l = 0; l < L; ++l) {
    std::printf("estimativa, camada %zu: ", l);
    for (std::size_t h = 0; h < H; ++h)
      std::printf(" %9.4f", double(c.estimativa.total.heads(l, h)));
    std::printf(" %9.4f\n", double(c.estimativa.total.mlps(l)));
    std::printf("exato, camada %zu:      ", l);
    for (std::size_t h = 0; h < H; ++h) std::printf(" %9.4f", double(c.exato.heads(l, h)));
    std::printf(" %9.4f\n", double(c.exato.mlps(l)));
  }
}

/// Um par: o texto limpo e o corrompido (uma letra trocada), em tokens.
struct Par {
  std::u32string limpo, corrompido;
  Tokens tl, tc;
};

/// Pares de 16 caracteres do livro depois dos 30000 do treino, a cada 97 caracteres: a letra da
/// posição 8 + (k mod 7) do k-ésimo trecho vira 'a' (ou 'o', se já era 'a'). Só os pares em que
/// o modelo prevê caracteres diferentes (a diferença de logits precisa de dois).
std::vector<Par> pares(const Decoder& modelo, const Tokenizer& tok, std::size_t n) {
  const std::u32string livro = load_text(GLASS_SOURCE_DIR "/data/corpora/domcasmurro.txt");
  std::vector<Par> r;
  for (std::size_t k = 1; r.size() < n && k < 2000; ++k) {
    Par p;
    p.limpo = livro.substr(30000 + 97 * (k - 1), 16);
    const std::size_t i = 8 + k % 7;
    if (p.limpo.find(U'\n') != std::u32string::npos || !std::iswalpha(wint_t(p.limpo[i]))) continue;
    p.corrompido = p.limpo;
    p.corrompido[i] = p.limpo[i] == U'a' ? U'o' : U'a';
    p.tl = tok.encode(p.limpo, true);
    p.tc = tok.encode(p.corrompido, true);
    if (previsao(modelo, p.tl) != previsao(modelo, p.tc)) r.push_back(p);
  }
  return r;
}

/// A mediana, o mínimo, o máximo e quantos ficam abaixo de 0.8.
void espalhamento(const char* rotulo, std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  const double mediana = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  std::size_t abaixo = 0;
  for (double x : v) abaixo += x < 0.8;
  std::printf("%s: %zu pares, mediana %.3f, mínimo %.3f, máximo %.3f, abaixo de 0.8: %zu\n", rotulo,
              n, mediana, v.front(), v.back(), abaixo);
}

std::vector<double> rhos(const Decoder& modelo, const std::vector<Par>& ps,
                         PatchMetric::Kind tipo) {
  std::vector<double> r;
  for (const Par& p : ps) r.push_back(comparar(modelo, p.tl, p.tc, tipo).rho);
  return r;
}

/// O padrão da última consulta da camada `L`, cabeça por cabeça: o maior peso (média das
/// cabeças) e a variação total entre os dois textos (metade da soma de |diferença|, média).
void padroes(const char* rotulo, const Decoder& modelo, const Par& p, std::size_t L) {
  Tracer a, b;
  run_with_hooks(modelo, as_batch(p.tl), a);
  run_with_hooks(modelo, as_batch(p.tc), b);
  const std::string ponto = attention_point(L, "softmax");
  const Array& A = a.get(ponto);  // (H, T, T)
  const Array& B = b.get(ponto);
  const std::size_t H = A.shape()[0], T = A.shape()[1];
  double pico_a = 0, pico_b = 0, vt = 0;
  for (std::size_t h = 0; h < H; ++h) {
    double ma = 0, mb = 0;
    for (std::size_t j = 0; j < T; ++j) {
      ma = std::max(ma, double(A(h, T - 1, j)));
      mb = std::max(mb, double(B(h, T - 1, j)));
      vt += 0.5 * std::fabs(double(A(h, T - 1, j)) - double(B(h, T - 1, j)));
    }
    pico_a += ma / H;
    pico_b += mb / H;
  }
  std::printf(
      "%s: camada %zu, última consulta: maior peso (média das cabeças) limpo %.3f, "
      "corrompido %.3f; variação total entre os dois %.3f\n",
      rotulo, L, pico_a, pico_b, vt / H);
}

/// A métrica (diferença de logits) com a cabeça (L, h) levada do valor corrompido a' até
/// a' + alfa (a - a'), em todas as posições.
double patch_fracao(const Decoder& modelo, const Par& p, std::size_t L, std::size_t h, double alfa,
                    const PatchMetric& metrica) {
  const std::string ponto = attention_point(L, "mix");
  Tracer a, b;
  run_with_hooks(modelo, as_batch(p.tl), a);
  run_with_hooks(modelo, as_batch(p.tc), b);
  const Array valor = b.get(ponto) + alfa * (a.get(ponto) - b.get(ponto));
  const Array logits = patched_logits(modelo, p.tc, ponto, valor, std::nullopt, h);
  const std::size_t t = p.tc.size() - 1;
  return double(logits(t, metrica.answer)) - double(logits(t, metrica.other));
}

/// A DLA de `tokens` na última posição: as partes, a soma, o logit.
LogitAttribution dla(const Decoder& modelo, const Tokens& tokens, const Tokenizer& tok,
                     bool imprimir) {
  const LogitAttribution a = logit_attribution(modelo, tokens);
  if (!imprimir) return a;
  std::printf("alvo: '%s', o caractere mais provável depois do prompt (posição %zu)\n",
              mostrar(tok, a.target).c_str(), a.position);
  std::printf("escala da RMSNorm final, congelada: r = %.6f\n", a.scale);
  std::printf("parte dos embeddings: %.4f\n", a.embeddings);
  for (std::size_t L = 0; L < a.heads.shape()[0]; ++L) {
    std::printf("partes das cabeças, camada %zu:", L);
    for (std::size_t h = 0; h < a.heads.shape()[1]; ++h)
      std::printf(" %.4f", double(a.heads(L, h)));
    std::printf("\n");
  }
  std::printf("partes dos MLPs:");
  for (std::size_t L = 0; L < a.mlps.size(); ++L) std::printf(" %.4f", double(a.mlps(L)));
  std::printf("\n");
  return a;
}

}  // namespace

int main() {
  tut::capitulo(43, "Atribuição direta aos logits e patching por atribuição");
  tut::novo(
      "interp::logit_attribution (o logit em partes: embeddings, cada cabeça, cada MLP);\n"
      "interp::attribution_patching (a estimativa linear do patching, gradiente · (limpo -\n"
      "corrompido), de uma passada para trás) ao lado de exact_patching; spearman.");
  tut::texto(
      "O capítulo 32 leu o fluxo residual pela RMSNorm final. O capítulo 33 desligou cabeças.\n"
      "Aqui, duas ferramentas que respondem \"quem fez este logit?\" sem rodar o modelo uma vez\n"
      "por componente:\n"
      "  atribuição direta aos logits (DLA; Elhage et al. 2021): o fluxo que entra na norma\n"
      "    final é uma SOMA (embeddings + a saída de cada cabeça por W_O + a de cada MLP,\n"
      "    capítulo 23). Com a escala r = 1/rms(x) da norma congelada no valor da passada, o\n"
      "    logit é linear no fluxo: logit = soma das partes · (W_out[alvo] · g · r);\n"
      "  patching por atribuição (Nanda 2023; Kramár et al. 2024): o patching exato troca a\n"
      "    ativação a' do texto corrompido pela a do limpo e roda de novo; a estimativa é\n"
      "    ∂m/∂a (em a') · (a - a'), a reta tangente, com os gradientes de TODAS as cabeças\n"
      "    numa passada para trás pela fita (capítulo 03).\n"
      "Veja docs/interpretabilidade.md.");

  tut::ModeloPequeno m = tut::treinar_rapido();
  Decoder& modelo = *m.modelo;
  const Tokenizer& tok = m.tokenizer;

  tut::secao("1. O logit em partes (DLA) depois de \"Capitu, disse eu\"");
  const Tokens prompt = tok.encode(U"Capitu, disse eu");
  const LogitAttribution a = dla(modelo, prompt, tok, true);
  std::printf("soma das partes: %.6f\n", a.total());
  std::printf("logit do modelo: %.6f\n", a.logit);
  std::printf("|soma - logit|: %.6f\n", std::fabs(a.total() - a.logit));
  std::size_t mL = 0, mh = 0;
  for (std::size_t L = 0; L < a.heads.shape()[0]; ++L)
    for (std::size_t h = 0; h < a.heads.shape()[1]; ++h)
      if (a.heads(L, h) > a.heads(mL, mh)) mL = L, mh = h;
  std::printf("a cabeça que mais empurra o alvo: camada %zu, cabeça %zu (%.4f)\n", mL, mh,
              double(a.heads(mL, mh)));
  tut::texto(
      "As partes somam o logit até o arredondamento do float: não é aproximação, é a conta\n"
      "feita em outra ordem (a norma é a única não-linearidade depois do fluxo, e r está\n"
      "congelado). Cuidado com o que a parte NÃO diz: é o efeito DIRETO. Uma cabeça da camada\n"
      "0 também muda o que a camada 1 lê (efeito indireto), e tirar uma parte muda r: a\n"
      "ablação do capítulo 33 mede outra coisa.");

  tut::secao("2. A reta tangente numa conta de uma variável");
  tut::texto(
      "Dois candidatos com diferença de logits a: p = σ(a) é a probabilidade da resposta. O\n"
      "patching leva a de a' até a; a estimativa é a derivada em a' vezes (a - a'):");
  const auto reta = [](const char* rotulo, double (*f)(double), double (*df)(double), double de,
                       double ate) {
    std::printf("%s, de %+.0f a %+.0f: exato %.6f, estimativa %.6f\n", rotulo, de, ate,
                f(ate) - f(de), df(de) * (ate - de));
  };
  const auto p = [](double x) { return sigmoide(x); };
  const auto dp = [](double x) { return sigmoide(x) * (1 - sigmoide(x)); };
  const auto logp = [](double x) { return std::log(sigmoide(x)); };
  const auto dlogp = [](double x) { return 1 - sigmoide(x); };
  const auto id = [](double x) { return x; };
  const auto did = [](double) { return 1.0; };
  reta("métrica p", p, dp, -1, 1);
  reta("métrica p", p, dp, -8, 8);
  reta("métrica log p", logp, dlogp, -8, 8);
  reta("métrica a (diferença de logits)", id, did, -8, 8);
  tut::texto(
      "Em a' = -8 o softmax está SATURADO: p quase não se mexe perto dali (derivada 0.0003), e\n"
      "a reta prevê quase nada onde o patching leva p de 0 a 1. log p erra pelo outro lado: é\n"
      "quase reta até perto de 0 e depois para (log p nunca passa de 0), a reta segue. A\n"
      "diferença de logits é linear no logit: a estimativa é exata ali. Por isso a biblioteca\n"
      "mede diferença de logits (ou log p), nunca p. Mas o modelo tem softmaxes por DENTRO: os\n"
      "da atenção. Um padrão saturado faz o mesmo com a cabeça que o lê.");

  tut::secao("3. No modelo: estimativa contra patching exato, cabeça a cabeça");
  const std::vector<Par> todos = pares(modelo, tok, 20);
  const Par& par = todos.front();
  std::printf("limpo: \"%s\"   corrompido: \"%s\"\n", u32_to_utf8(par.limpo).c_str(),
              u32_to_utf8(par.corrompido).c_str());
  const Comparacao c1 = comparar(modelo, par.tl, par.tc, PatchMetric::Kind::logit_diff);
  std::printf("métrica: logit['%s'] - logit['%s'] na última posição; limpo %.4f, corrompido %.4f\n",
              mostrar(tok, c1.exato.metric.answer).c_str(),
              mostrar(tok, c1.exato.metric.other).c_str(), c1.exato.clean, c1.exato.corrupted);
  tabela(c1);
  std::printf("correlação de postos (Spearman) das 8 cabeças: %.3f\n", c1.rho);
  espalhamento("atenção como treinada, Spearman das cabeças",
               rhos(modelo, todos, PatchMetric::Kind::logit_diff));
  tut::texto(
      "Concordam: as mudanças são pequenas (uma letra trocada), o modelo anda perto da reta\n"
      "entre a' e a, e uma passada para trás ordena as cabeças como 10 passadas de patching.");

  tut::secao("4. Onde discordam: a atenção da camada 1 saturada");
  tut::texto(
      "Multiplique W_q da camada 1 por 10: as notas q·k/√d crescem 10 vezes e o softmax da\n"
      "atenção fica quase one-hot (uma \"temperatura\" 10 vezes menor). Os outros pesos são\n"
      "os mesmos: só a atenção da camada 1 ficou dura.");
  Array& wq = modelo.layers[1]->attention.wq.weight.value();
  const Array wq_treinado = wq;
  padroes("atenção como treinada", modelo, par, 1);
  wq *= Scalar(10);
  padroes("atenção × 10", modelo, par, 1);
  const std::vector<Par> duros = pares(modelo, tok, 20);
  const std::vector<double> rho_duro = rhos(modelo, duros, PatchMetric::Kind::logit_diff);
  espalhamento("atenção da camada 1 × 10, Spearman das cabeças", rho_duro);
  const std::size_t pior = std::min_element(rho_duro.begin(), rho_duro.end()) - rho_duro.begin();
  const Par& ruim = duros[pior];
  std::printf("o pior par: \"%s\" -> \"%s\"\n", u32_to_utf8(ruim.limpo).c_str(),
              u32_to_utf8(ruim.corrompido).c_str());
  const Comparacao c2 = comparar(modelo, ruim.tl, ruim.tc, PatchMetric::Kind::logit_diff);
  std::printf("métrica: logit['%s'] - logit['%s']; limpo %.4f, corrompido %.4f\n",
              mostrar(tok, c2.exato.metric.answer).c_str(),
              mostrar(tok, c2.exato.metric.other).c_str(), c2.exato.clean, c2.exato.corrupted);
  tabela(c2);
  std::printf("correlação de postos das 8 cabeças: %.3f\n", c2.rho);
  padroes("o pior par, atenção × 10", modelo, ruim, 1);
  {
    const Array duro = wq;
    wq = wq_treinado;
    padroes("o mesmo par, atenção como treinada", modelo, ruim, 1);
    wq = duro;
  }
  std::size_t eL = 0, eh = 0;
  for (std::size_t L = 0; L < c2.exato.heads.shape()[0]; ++L)
    for (std::size_t h = 0; h < c2.exato.heads.shape()[1]; ++h)
      if (std::fabs(c2.exato.heads(L, h) - c2.estimativa.total.heads(L, h)) >
          std::fabs(c2.exato.heads(eL, eh) - c2.estimativa.total.heads(eL, eh)))
        eL = L, eh = h;
  std::printf("o maior erro: camada %zu, cabeça %zu: exato %.4f, estimativa %.4f\n", eL, eh,
              double(c2.exato.heads(eL, eh)), double(c2.estimativa.total.heads(eL, eh)));
  tut::texto("A mesma cabeça levada só uma fração α do caminho, (exato(α) - corrompido) / α:");
  for (double alfa : {1.0, 0.5, 0.1, 0.01}) {
    const double m_alfa = patch_fracao(modelo, ruim, eL, eh, alfa, c2.exato.metric);
    std::printf("α = %.2f: %.4f\n", alfa, (m_alfa - c2.exato.corrupted) / alfa);
  }
  tut::texto(
      "Com α pequeno o patching vira a derivada e encontra a estimativa: a estimativa é a\n"
      "tangente, certa no começo do caminho. O caminho inteiro não é reta: com o softmax\n"
      "saturado, as notas da camada 1 mudam e boa parte do peso PULA de uma posição para\n"
      "outra (a variação total acima, várias vezes a da atenção como treinada), enquanto a\n"
      "derivada em a', achatada pelo softmax, quase não vê o pulo. Uma cabeça da camada 0,\n"
      "que muda as chaves ou a consulta da camada 1, tem então o efeito exato longe da sua\n"
      "reta, e a ordem das cabeças se perde. É o modo de\n"
      "falha que o AtP* (Kramár et al. 2024) corrige recalculando o softmax da atenção.");

  tut::experimente({
      "meça com log p da resposta limpa (Kind::log_prob): a concordância muda?",
      "multiplique W_q da camada 1 só por 3: a correlação cai menos que com 10?",
      "com a atenção × 10, as partes da DLA de \"Capitu, disse eu\" ainda somam o logit?",
  });

  tut::respostas();
  {
    std::vector<double> duro = rhos(modelo, duros, PatchMetric::Kind::log_prob);
    wq = wq_treinado;
    std::vector<double> normal = rhos(modelo, todos, PatchMetric::Kind::log_prob);
    espalhamento("1) log p, atenção como treinada", normal);
    espalhamento("1) log p, atenção × 10", duro);
    tut::texto(
        "   O padrão é o mesmo: com a atenção como treinada as duas métricas concordam em\n"
        "   todos os pares; com ela saturada, o pior par cai abaixo de 0.8 nas duas. A métrica\n"
        "   não é o problema aqui: o softmax que satura está dentro do modelo, antes dela.");
  }
  {
    wq = wq_treinado * Scalar(3);
    espalhamento("2) atenção da camada 1 × 3, Spearman das cabeças",
                 rhos(modelo, pares(modelo, tok, 20), PatchMetric::Kind::logit_diff));
    tut::texto(
        "   No meio do caminho: quanto mais duro o softmax, mais longe da reta o patching anda.");
  }
  {
    wq = wq_treinado * Scalar(10);
    const LogitAttribution d = dla(modelo, prompt, tok, false);
    std::printf("3) atenção × 10: soma das partes %.6f, logit %.6f, |soma - logit| %.6f\n",
                d.total(), d.logit, std::fabs(d.total() - d.logit));
    tut::texto(
        "   Sim: a DLA é a conta do logit em outra ordem, exata em qualquer modelo. O que a\n"
        "   saturação quebra é a reta do patching por atribuição, não a soma das partes.");
    wq = wq_treinado;
  }
  return 0;
}
