// Capítulo 32 — A lente de logits: o que cada camada já prevê.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common.hpp"
#include "data/text.hpp"
#include "treino_rapido.hpp"

#include "interp/logit_lens.hpp"

using namespace glass;

namespace {

/// Um id como o leitor o reconhece: o caractere, '_' para o espaço, \n, ? para o id 0.
std::string mostrar(const Tokenizer& tok, std::int32_t id) {
  if (id == 0) return "?";
  const char32_t c = tok.char_of(id);
  if (c == U' ') return "_";
  if (c == U'\n') return "\\n";
  return char_to_utf8(c);
}

/// A perda média (nats) do próximo caractere e a fração das posições em que o mais provável é o
/// mesmo da última camada, em cada ponto do fluxo, sobre janelas de validação.
struct Resumo {
  std::vector<double> perda, concorda, tamanho;  ///< tamanho: |x| médio do fluxo no ponto
};

/// Lê cada janela de `x` com a lente; `sem_norma` pula a RMSNorm final (o erro do Experimente).
Resumo resumir(const Decoder& modelo, const Ids& x, bool sem_norma) {
  const std::size_t n = x.shape()[0], T = x.shape()[1], V = modelo.config().vocab_size;
  const std::size_t S = modelo.config().n_layers + 1;
  Resumo r{std::vector<double>(S, 0.0), std::vector<double>(S, 0.0), std::vector<double>(S, 0.0)};
  for (std::size_t b = 0; b < n; ++b) {
    std::vector<std::int32_t> ids(x.data() + b * T, x.data() + (b + 1) * T);
    const LogitLens lente = logit_lens(modelo, ids, 1);
    Array logits = lente.logits;  // (S, T, V)
    Tracer tracer;
    run_with_hooks(modelo, as_batch(ids), tracer);
    for (std::size_t s = 0; s < S; ++s) {
      const Array& fluxo = tracer.get(lente.points[s]);  // (T, d_model)
      const std::size_t d = fluxo.shape()[1];
      for (std::size_t t = 0; t + 1 < T; ++t) {
        double q = 0;
        for (std::size_t i = 0; i < d; ++i) q += double(fluxo(t, i)) * fluxo(t, i);
        r.tamanho[s] += std::sqrt(q);
      }
    }
    if (sem_norma) {
      // output(x) em vez de output(norm(x)): o fluxo de cada ponto direto na matriz de saída.
      NoGradGuard sem_fita;
      for (std::size_t s = 0; s < S; ++s) {
        const Array& fluxo = tracer.get(lente.points[s]);  // (T, d_model)
        Array x3 = Array::from_shape({1, T, fluxo.shape()[1]});
        std::copy(fluxo.data(), fluxo.data() + fluxo.size(), x3.data());
        const Array l = modelo.output.forward(Tensor(x3)).value();
        std::copy(l.data(), l.data() + T * V, logits.data() + s * T * V);
      }
    }
    for (std::size_t t = 0; t + 1 < T; ++t) {
      const Scalar* ultima = logits.data() + ((S - 1) * T + t) * V;
      const std::size_t top_final = top_k_indices(ultima, V, 1)[0];
      for (std::size_t s = 0; s < S; ++s) {
        const Scalar* l = logits.data() + (s * T + t) * V;
        double m = l[0];
        for (std::size_t v = 0; v < V; ++v) m = std::max(m, double(l[v]));
        double z = 0;
        for (std::size_t v = 0; v < V; ++v) z += std::exp(double(l[v]) - m);
        r.perda[s] += -(double(l[ids[t + 1]]) - m - std::log(z));
        r.concorda[s] += top_k_indices(l, V, 1)[0] == top_final;
      }
    }
  }
  for (std::size_t s = 0; s < S; ++s) {
    r.perda[s] /= double(n * (T - 1));
    r.concorda[s] /= double(n * (T - 1));
    r.tamanho[s] /= double(n * (T - 1));
  }
  return r;
}

void imprimir(const char* titulo, const Resumo& r, const std::vector<std::string>& pontos) {
  std::printf("%s, perda do próximo caractere (nats):", titulo);
  for (std::size_t s = 0; s < pontos.size(); ++s) std::printf(" %.4f", r.perda[s]);
  std::printf("\n%s, top-1 igual ao da última camada:", titulo);
  for (std::size_t s = 0; s < pontos.size(); ++s) std::printf(" %.3f", r.concorda[s]);
  std::printf("\n");
}

}  // namespace

int main() {
  tut::capitulo(32, "A lente de logits: o que cada camada já prevê");
  tut::novo(
      "interp::logit_lens: o fluxo residual depois de cada bloco lido pela RMSNorm final e pela\n"
      "matriz de saída, como se o modelo terminasse ali (nostalgebraist 2020).");
  tut::texto(
      "O Decoder (capítulos 23 e 24) carrega, em cada posição, um vetor de d_model números, o\n"
      "fluxo residual: começa como o embedding do caractere e cada bloco SOMA a ele a sua\n"
      "contribuição. Só o fluxo do fim passa pela RMSNorm final e pela matriz de saída W_out:\n"
      "  logits = W_out · rmsnorm(x_último).\n"
      "A lente de logits (nostalgebraist, 2020, \"interpreting GPT: the logit lens\") faz a mesma\n"
      "conta com o fluxo de cada ponto intermediário: logits_L = W_out · rmsnorm(x_L). Se o\n"
      "modelo parasse depois do bloco L, o que ele diria? Os pontos são \"embeddings\" (o fluxo\n"
      "que entra no bloco 0) e \"layers.L.out\" (o que sai do bloco L): n_layers + 1 pontos.\n"
      "Na última camada a lente é o próprio modelo. Veja docs/interpretabilidade.md.");

  tut::ModeloPequeno m = tut::treinar_rapido();
  const Decoder& modelo = *m.modelo;
  const std::size_t V = modelo.config().vocab_size;

  tut::secao("A lente num prompt: o caractere mais provável em cada ponto");
  const std::u32string prompt = U"Capitu, disse eu";
  const std::vector<std::int32_t> ids = m.tokenizer.encode(prompt);
  const std::size_t T = ids.size();
  const LogitLens lente = logit_lens(modelo, ids, 3);
  const std::size_t S = lente.points.size();
  std::printf("pontos da lente: %zu (", S);
  for (std::size_t s = 0; s < S; ++s) std::printf("%s%s", s ? ", " : "", lente.points[s].c_str());
  std::printf(")\n");
  std::printf("  posição  lê   ");
  for (std::size_t s = 0; s < S; ++s) std::printf("%-16s", lente.points[s].c_str());
  std::printf("o certo\n");
  for (std::size_t t = 0; t < T; ++t) {
    std::printf("  %7zu  %-4s ", t, mostrar(m.tokenizer, ids[t]).c_str());
    for (std::size_t s = 0; s < S; ++s) {
      std::printf("%-3s %.2f        ", mostrar(m.tokenizer, lente.top_ids(s, t, 0)).c_str(),
                  double(lente.top_probs(s, t, 0)));
    }
    std::printf("%s\n", t + 1 < T ? mostrar(m.tokenizer, ids[t + 1]).c_str() : "");
  }
  tut::texto(
      "Cada linha: a posição, o caractere que ela lê e, em cada ponto, o próximo caractere mais\n"
      "provável com a sua probabilidade. Nos embeddings só há o caractere atual: a previsão é\n"
      "a de um bigrama (capítulo 12), o mesmo palpite sempre que a letra se repete. Os blocos\n"
      "misturam o passado (a atenção) e refinam o palpite.");
  std::printf("probabilidade do caractere certo, média do prompt:");
  for (std::size_t s = 0; s < S; ++s) {
    double soma = 0;
    for (std::size_t t = 0; t + 1 < T; ++t) soma += lente.next_prob(s, t);
    std::printf(" %.4f", soma / double(T - 1));
  }
  std::printf("\n");
  std::printf("depois de \"Capitu, disse eu\", os 3 mais prováveis em cada ponto:\n");
  for (std::size_t s = 0; s < S; ++s) {
    std::printf("  %-14s", lente.points[s].c_str());
    for (std::size_t j = 0; j < 3; ++j) {
      std::printf("  %-3s %.4f", mostrar(m.tokenizer, lente.top_ids(s, T - 1, j)).c_str(),
                  double(lente.top_probs(s, T - 1, j)));
    }
    std::printf("\n");
  }

  tut::secao("A última camada é o modelo");
  Tracer tracer;
  const Array logits_modelo = run_with_hooks(modelo, as_batch(ids), tracer);  // (1, T, V)
  double dif = 0;
  for (std::size_t i = 0; i < T * V; ++i) {
    dif = std::max(
        dif, double(std::fabs(logits_modelo.data()[i] - lente.logits.data()[(S - 1) * T * V + i])));
  }
  std::printf("diferença máxima entre a lente em %s e os logits do modelo: %.6f\n",
              lente.points[S - 1].c_str(), dif);
  tut::texto(
      "Zero, bit a bit: a lente manda o último fluxo pelas mesmas duas operações que\n"
      "Decoder::forward (com um Tracer, o modelo roda o caminho de referência, capítulo 30).");

  tut::secao("A lente à mão, na última posição, depois do bloco 0");
  const Array& fluxo = tracer.get("layers.0.out");  // (T, d_model)
  const std::size_t d = fluxo.shape()[1];
  const Scalar* x = fluxo.data() + (T - 1) * d;
  double quad = 0;
  for (std::size_t i = 0; i < d; ++i) quad += double(x[i]) * x[i];
  const double rms = std::sqrt(quad / double(d) + modelo.config().norm_eps);
  std::printf("|x| = %.4f   rms(x) = %.4f\n", std::sqrt(quad), rms);
  const Array& ganho = modelo.norm.weight.value();    // (d_model)
  const Array& w_out = modelo.output.weight.value();  // (V, d_model)
  double dif_mao = 0;
  for (std::size_t v = 0; v < V; ++v) {
    double l = 0;
    for (std::size_t i = 0; i < d; ++i) l += double(w_out(v, i)) * (x[i] / rms * ganho(i));
    dif_mao = std::max(dif_mao, std::fabs(l - double(lente.logits(1, T - 1, v))));
  }
  std::printf("diferença máxima entre W_out · (x / rms(x) · ganho) e a lente: %.6f\n", dif_mao);
  tut::texto(
      "A conta da lente inteira: dividir pelo rms, multiplicar pelo ganho aprendido da norma\n"
      "final, multiplicar por W_out (a diferença é só o arredondamento de float).");

  tut::secao("Camada por camada, em 8 janelas de validação (248 previsões)");
  Ids xv, yv;
  tut::janelas_de_validacao(m.tokenizer, 8, 32, xv, yv);
  const Resumo resumo = resumir(modelo, xv, /*sem_norma=*/false);
  std::printf("pontos:");
  for (const std::string& p : lente.points) std::printf(" %s", p.c_str());
  std::printf("\n");
  imprimir("lente", resumo, lente.points);
  std::printf("log(V) = %.4f (o palpite uniforme entre os %zu ids do vocabulário)\n",
              std::log(double(V)), V);
  tut::texto(
      "A perda cai de ponto em ponto: cada bloco acrescenta ao fluxo algo que ajuda a prever.\n"
      "E a decisão se assenta: a fração das posições cujo palpite já é o final cresce até 1.\n"
      "Já nos embeddings a lente fica bem abaixo de log(V): o caminho direto, embedding ->\n"
      "norma -> W_out, sozinho, é um bigrama.");

  tut::experimente({
      "troque o prompt por \"Bentinho e Capitu\": em quantas posições o palpite do bloco 0 já\n"
      "    é o final?",
      "pule a RMSNorm final (leia W_out · x em vez de W_out · rmsnorm(x)): o que muda nos pontos\n"
      "    do meio? e na última camada? (o exercício 20 é esse erro)",
  });

  tut::respostas();
  {
    const std::u32string outro = U"Bentinho e Capitu";
    const std::vector<std::int32_t> ids2 = m.tokenizer.encode(outro);
    const LogitLens l2 = logit_lens(modelo, ids2, 1);
    std::size_t iguais0 = 0, iguais_emb = 0;
    for (std::size_t t = 0; t < ids2.size(); ++t) {
      iguais0 += l2.top_ids(1, t, 0) == l2.top_ids(S - 1, t, 0);
      iguais_emb += l2.top_ids(0, t, 0) == l2.top_ids(S - 1, t, 0);
    }
    std::printf(
        "1. \"Bentinho e Capitu\" (%zu posições): o palpite final já está em layers.0.out em %zu, "
        "nos embeddings em %zu\n",
        ids2.size(), iguais0, iguais_emb);
  }
  {
    const Resumo sem = resumir(modelo, xv, /*sem_norma=*/true);
    imprimir("2. sem a RMSNorm final", sem, lente.points);
    std::printf("   perda nos embeddings: com a norma %.4f, sem %.4f (log(V) = %.4f)\n",
                resumo.perda[0], sem.perda[0], std::log(double(V)));
    std::printf("   |x| médio do fluxo em cada ponto:");
    for (std::size_t s = 0; s < S; ++s) std::printf(" %.3f", sem.tamanho[s]);
    std::printf("\n");
    tut::texto(
        "   Sem a norma, os embeddings parecem não saber nada (perda perto de log(V)): o vetor é\n"
        "   curto (cada bloco o alonga) e dá logits quase iguais. Não é falta de informação, é\n"
        "   escala: a norma traz cada ponto à escala que W_out espera. Na última camada, sem a\n"
        "   norma, a lente deixa de ser o modelo (a perda muda). Por isso a lente usa a norma\n"
        "   final: o modelo só sabe ler o fluxo através dela.");
  }
  return 0;
}
