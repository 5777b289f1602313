// Capítulo 14 — Q, K e V: três projeções de cada posição.
#include <algorithm>
#include <cmath>

#include "common.hpp"
#include "nn/decoder.hpp"

using namespace glass;

int main() {
  tut::capitulo(14, "Q, K e V");
  tut::novo("as três projeções lineares da atenção (nn::Linear) e as formas de cada uma.");
  tut::texto(
      "O bigrama do capítulo 12 só enxergava o caractere atual. Para consultar o\n"
      "contexto, cada posição produz três vetores a partir do seu vetor x:\n"
      "  Q = x Wqᵀ  (a consulta: o que esta posição procura)\n"
      "  K = x Wkᵀ  (a chave: com o que as outras posições comparam a consulta delas)\n"
      "  V = x Wvᵀ  (o valor: o conteúdo que esta posição entrega se for escolhida)\n"
      "São só três camadas lineares (capítulo 06) com pesos aprendidos e diferentes.\n"
      "Os nomes são uma analogia para as contas, não perguntas escritas em palavras.");

  Rng rng(13);
  const std::size_t d_model = 4, head_dim = 2, n = 3;  // 3 posições, vetores de tamanho 4
  Linear wq(d_model, head_dim, 0.5, rng), wk(d_model, head_dim, 0.5, rng),
      wv(d_model, head_dim, 0.5, rng);
  Tensor x = Tensor::randn({1, n, d_model}, 1.0, rng);  // (B, n, d_model)

  tut::secao("As formas");
  tut::forma("x (B, n, d_model)", x.value());
  tut::forma("Wq (head_dim, d_model)", wq.weight.value());
  Tensor Q = wq.forward(x), K = wk.forward(x), V = wv.forward(x);
  tut::forma("Q (B, n, head_dim)", Q.value());
  tut::forma("K (B, n, head_dim)", K.value());
  tut::forma("V (B, n, head_dim)", V.value());

  tut::secao("Os valores (B = 1)");
  tut::matriz("x", x.value(), 4);
  tut::matriz("Q", Q.value(), 4);
  tut::matriz("K", K.value(), 4);
  tut::matriz("V", V.value(), 4);

  tut::secao("Linear é só linear(x, W)");
  Tensor Q2 = linear(x, wq.weight);
  double diferenca = 0;
  for (std::size_t i = 0; i < Q.size(); ++i) {
    diferenca = std::max(diferenca, double(std::abs(Q.value().data()[i] - Q2.value().data()[i])));
  }
  std::printf("diferença máxima entre wq.forward(x) e linear(x, Wq): %.6f\n", diferenca);

  tut::secao("No modelo do projeto");
  ModelConfig cfg;
  std::printf("d_model %zu, %zu cabeças de consulta com head_dim %zu, %zu cabeças K/V\n",
              cfg.d_model, cfg.n_heads, cfg.head_dim(), cfg.n_kv_heads);
  std::printf("Wq: (%zu, %zu)   Wk: (%zu, %zu)   Wv: (%zu, %zu)\n", cfg.n_heads * cfg.head_dim(),
              cfg.d_model, cfg.n_kv_heads * cfg.head_dim(), cfg.d_model,
              cfg.n_kv_heads * cfg.head_dim(), cfg.d_model);
  tut::texto(
      "K e V são menores que Q: o modelo usa GQA (capítulo 19). Nenhuma projeção tem bias.\n"
      "No próximo capítulo, com Q, K e V prontos, fazemos a atenção em três passos.");

  tut::secao("No código do modelo");
  tut::texto(
      "Abra nn/attention.cpp, função Attention::forward_reference. O passo 1 é esta mesma\n"
      "conta, seguida de um reshape que corta cada posição em cabeças:\n"
      "  Tensor q = reshape(wq.forward(x), {B, n, n_heads, head_dim});\n"
      "  Tensor k = reshape(wk.forward(x), {B, n, n_kv_heads, head_dim});\n"
      "  Tensor v = reshape(wv.forward(x), {B, n, n_kv_heads, head_dim});\n"
      "Os nove passos dessa função são os da página docs/atencao.md; os capítulos 15 a 20\n"
      "explicam os outros.");

  tut::experimente({
      "troque o seed do Rng e veja Q, K e V mudarem (os pesos são aleatórios até o treino);",
      "faça Wq = Wk copiando wk.weight.value() para wq.weight.value(): o que acontece com Q e K?",
      "aumente head_dim para 8 e confira as formas.",
  });
  tut::respostas();
  {
    Rng outro(14);
    Linear wq2(d_model, head_dim, 0.5, outro);
    tut::matriz("Q com pesos de Rng(14)", wq2.forward(x).value(), 4);
    std::printf("  (o mesmo x, outros pesos: outro Q)\n");
    wq2.weight.value() = wk.weight.value();
    Tensor Q_igual = wq2.forward(x);
    double dif_qk = 0;
    for (std::size_t i = 0; i < Q_igual.size(); ++i) {
      dif_qk = std::max(dif_qk, double(std::abs(Q_igual.value().data()[i] - K.value().data()[i])));
    }
    std::printf(
        "com Wq = Wk: diferença máxima entre Q e K %.6f (Q = K: cada posição procura o que ela mesma oferece)\n",
        dif_qk);
    Linear wq8(d_model, 8, 0.5, outro);
    tut::forma("Wq com head_dim = 8", wq8.weight.value());
    tut::forma("Q com head_dim = 8", wq8.forward(x).value());
  }
  return 0;
}
