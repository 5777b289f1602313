// Capítulo 30 — Olhando por dentro com o Tracer.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "common.hpp"
#include "data/text.hpp"
#include "treino_rapido.hpp"

using namespace glass;

int main() {
  tut::capitulo(30, "Olhando por dentro: o Tracer");
  tut::novo(
      "nn::Tracer: fotografias com nome de cada etapa de uma passada (o que `glass inspect` mostra).");
  tut::texto(
      "Passe um Tracer para Decoder::forward e ele guarda uma cópia de cada etapa, sem o\n"
      "eixo do lote: embeddings, e por camada L: attn.q, attn.k, attn.v, attn.rope_q,\n"
      "attn.rope_k, attn.scores, attn.mask, attn.softmax, attn.mix, attn.out, out; no fim,\n"
      "logits e probs. A ordem é a da atenção dos capítulos 14 a 20:\n"
      "  X -> Q/K/V -> RoPE -> cache -> GQA -> QKᵀ/√d -> máscara -> softmax -> mistura com V -> W_O\n"
      "Cada fotografia é tirada numa linha de Attention::forward_reference (nn/attention.cpp),\n"
      "logo depois do passo que ela mostra: com um Tracer, o modelo sempre roda esse caminho\n"
      "de referência. O nome vem do caminho do módulo: o bloco \"layers.0\" grava \"layers.0.attn.q\".");

  tut::ModeloPequeno m = tut::treinar_rapido();
  const Decoder& modelo = *m.modelo;
  const std::u32string prompt = U"Capitu, disse eu";
  const auto ids = m.tokenizer.encode(prompt);
  const std::size_t n = ids.size();
  Ids x = Ids::from_shape({1, n});
  std::copy(ids.begin(), ids.end(), x.data());
  Tracer tracer;
  {
    NoGradGuard sem_fita;
    modelo.forward(x, nullptr, &tracer);
  }

  tut::secao("As fotografias da camada 0 (n = 16 posições)");
  for (const std::string& nome : tracer.names()) {
    if (nome.rfind("layers.1.", 0) == 0) continue;
    std::printf("  %-22s %s\n", nome.c_str(), shape_str(shape_of(tracer.get(nome))).c_str());
  }
  std::printf("  (a camada 1 tem as mesmas)\n");
  tut::texto("Q tem 4 cabeças, K e V têm 2 (GQA, capítulo 19); notas e pesos são (cabeças, n, m).");

  tut::secao("Pesos de atenção: camada 0, cabeça 0");
  const Array& pesos = tracer.get("layers.0.attn.softmax");  // (4, n, n)
  Array cabeca0(Shape{n, n});
  std::copy(pesos.data(), pesos.data() + n * n, cabeca0.data());
  std::printf("      ");
  for (char32_t c : prompt) std::printf("%5s", c == U' ' ? "_" : char_to_utf8(c).c_str());
  std::printf("\n");
  for (std::size_t i = 0; i < n; ++i) {
    std::printf("  %3s ", prompt[i] == U' ' ? "_" : char_to_utf8(prompt[i]).c_str());
    for (std::size_t j = 0; j < n; ++j) {
      if (j > i)
        std::printf("    .");
      else
        std::printf(" %4.2f", double(cabeca0(i, j)));
    }
    std::printf("\n");
  }
  double pior_soma = 0, acima = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double soma = 0;
    for (std::size_t j = 0; j < n; ++j) {
      soma += cabeca0(i, j);
      if (j > i) acima = std::max(acima, double(cabeca0(i, j)));
    }
    pior_soma = std::max(pior_soma, std::fabs(soma - 1));
  }
  std::printf("maior desvio de 1 na soma de uma linha: %.6f\n", pior_soma);
  std::printf("maior peso acima da diagonal: %.6f\n", acima);
  tut::texto("O triângulo do capítulo 15, agora com pesos aprendidos.");

  tut::secao("Conferindo uma etapa com as anteriores");
  tut::texto("softmax(notas com a máscara) deve dar exatamente attn.softmax:");
  Tensor notas(tracer.get("layers.0.attn.scores"));
  Mask mascara = Mask::from_shape({n, n});
  const Array& m01 = tracer.get("layers.0.attn.mask");
  for (std::size_t i = 0; i < n * n; ++i) mascara.data()[i] = m01.data()[i] != 0;
  Array refeito =
      softmax(masked_fill(notas, mascara, -std::numeric_limits<Scalar>::infinity())).value();
  double diferenca = 0;
  for (std::size_t i = 0; i < refeito.size(); ++i) {
    diferenca = std::max(diferenca, double(std::fabs(refeito.data()[i] - pesos.data()[i])));
  }
  std::printf("diferença máxima: %.6f\n", diferenca);

  tut::secao("Probabilidades de saída: o que vem depois de \"Capitu, disse eu\"?");
  const Array& probs = tracer.get("probs");  // (n, V)
  const std::size_t V = modelo.config().vocab_size;
  std::vector<std::size_t> ordem(V);
  std::iota(ordem.begin(), ordem.end(), 0);
  const Scalar* ultima = probs.data() + (n - 1) * V;
  std::sort(ordem.begin(), ordem.end(),
            [&](std::size_t a, std::size_t b) { return ultima[a] > ultima[b]; });
  double soma = 0;
  for (std::size_t v = 0; v < V; ++v) soma += ultima[v];
  for (std::size_t r = 0; r < 5; ++r) {
    const char32_t c = m.tokenizer.char_of(std::int32_t(ordem[r]));
    std::printf("  %s  %.4f\n", describe_char(c).c_str(), double(ultima[ordem[r]]));
  }
  std::printf("soma das probabilidades de saída: %.6f (sobre %zu caracteres)\n", soma, V);
  tut::texto(
      "Não confunda: os PESOS DE ATENÇÃO dizem quanto cada posição mistura das outras,\n"
      "dentro de uma cabeça (cada linha soma 1 sobre as posições). As PROBABILIDADES DE\n"
      "SAÍDA se espalham pelo vocabulário inteiro (somam 1 sobre os caracteres). Um peso\n"
      "de atenção alto, sozinho, não explica uma previsão: há outras cabeças, outras\n"
      "camadas e a SwiGLU no caminho.");

  tut::experimente({
      "olhe a cabeça 1 (pesos.data() + n * n) e a camada 1: os padrões mudam?",
      "compare attn.rope_k com attn.k na posição 0: o RoPE não gira a posição 0;",
      "com um checkpoint: glass inspect --checkpoint DIR --prompt \"Capitu\" --layer 0 --head 0 --snapshot attn.softmax (ou --html pagina.html).",
  });
  tut::respostas();
  {
    tut::texto(
        "O padrão de cada cabeça, em números: o peso médio que uma posição dá a si mesma, à\n"
        "anterior e à posição 0 (médias sobre as posições 1 a n-1).");
    for (const char* camada : {"layers.0", "layers.1"}) {
      const Array& p = tracer.get(std::string(camada) + ".attn.softmax");  // (cabeças, n, n)
      const std::size_t cabecas = p.shape()[0];
      for (std::size_t h = 0; h < cabecas; ++h) {
        double propria = 0, anterior = 0, primeira = 0;
        for (std::size_t i = 1; i < n; ++i) {
          const Scalar* linha = p.data() + h * n * n + i * n;
          propria += linha[i];
          anterior += linha[i - 1];
          primeira += linha[0];
        }
        const double k = double(n - 1);
        std::printf("%s cabeça %zu: em si mesma %.2f, na anterior %.2f, na posição 0 %.2f\n",
                    camada, h, propria / k, anterior / k, primeira / k);
      }
    }
    std::printf("  (as cabeças diferem: cada uma aprendeu o seu jeito de olhar o passado)\n");
    const Array& k_antes = tracer.get("layers.0.attn.k");  // (cabeças K/V, n, head_dim)
    const Array& k_depois = tracer.get("layers.0.attn.rope_k");
    const std::size_t hd = k_antes.shape()[2];
    double dif0 = 0, dif1 = 0;
    for (std::size_t h = 0; h < k_antes.shape()[0]; ++h) {
      for (std::size_t d = 0; d < hd; ++d) {
        const std::size_t pos0 = h * n * hd + d, pos1 = pos0 + hd;
        dif0 = std::max(dif0, double(std::fabs(k_antes.data()[pos0] - k_depois.data()[pos0])));
        dif1 = std::max(dif1, double(std::fabs(k_antes.data()[pos1] - k_depois.data()[pos1])));
      }
    }
    std::printf(
        "|rope_k - k| máximo: posição 0 %.6f, posição 1 %.6f (a posição 0 gira de ângulo 0)\n",
        dif0, dif1);
  }
  return 0;
}
