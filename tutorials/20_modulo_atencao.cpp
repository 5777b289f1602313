// Capítulo 20 — O módulo nn::Attention: os nove passos juntos.
#include <algorithm>
#include <cmath>
#include <limits>

#include "autograd/ops.hpp"
#include "common.hpp"
#include "nn/decoder.hpp"

using namespace glass;

static double diferenca_maxima(const Array& a, const Array& b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    d = std::max(d, double(std::fabs(a.data()[i] - b.data()[i])));
  return d;
}

int main() {
  tut::capitulo(20, "O módulo nn::Attention");
  tut::novo(
      "nn::Attention: as projeções, o RoPE, a GQA, a máscara e W_O num módulo só, conferido contra a conta à mão.");
  tut::texto(
      "Os capítulos 14 a 19 mostraram cada peça da atenção. O modelo as junta em\n"
      "Attention::forward_reference (nn/attention.cpp), em nove passos:\n"
      "  1. Q, K, V = projeções de x, cortadas em cabeças    (capítulos 14 e 18)\n"
      "  2. RoPE em Q e K                                      (capítulo 17)\n"
      "  3. o cache de K/V (aqui não há cache)                 (capítulo 29)\n"
      "  4. GQA: repeat_kv                                     (capítulo 19)\n"
      "  5. notas Q Kᵀ / √head_dim                             (capítulo 15)\n"
      "  6. máscara causal                                     (capítulos 13 e 15)\n"
      "  7. softmax                                            (capítulo 15)\n"
      "  8. mistura com V                                      (capítulo 15)\n"
      "  9. as cabeças lado a lado, projetadas por W_O de volta para d_model\n"
      "Aqui refazemos os nove passos com as ops, usando os pesos do módulo, e comparamos.");

  ModelConfig cfg;  // o modelo padrão: d_model 128, 4 cabeças de 32, 2 cabeças K/V
  cfg.ops_path = OpsPath::reference;
  Rng rng(19);
  Attention atencao(cfg, rng);
  const std::size_t B = 1, n = 5, H = cfg.n_heads, KV = cfg.n_kv_heads, D = cfg.head_dim();
  Tensor x = Tensor::randn({B, n, cfg.d_model}, 1.0, rng);

  tut::secao("Os pesos do módulo");
  for (const auto& [nome, p] : atencao.named_parameters()) {
    std::printf("  %-10s %s\n", nome.c_str(), shape_str(p.shape()).c_str());
  }
  std::printf("parâmetros: %zu\n", atencao.num_parameters());
  tut::texto("wk e wv têm metade das linhas de wq: 2 cabeças K/V de 32 contra 4 de consulta.");

  tut::secao("Os nove passos à mão (B = 1, n = 5 posições)");
  NoGradGuard sem_fita;
  Tensor q = reshape(linear(x, atencao.wq.weight), {B, n, H, D});  // 1.
  Tensor k = reshape(linear(x, atencao.wk.weight), {B, n, KV, D});
  Tensor v = reshape(linear(x, atencao.wv.weight), {B, n, KV, D});
  tut::forma("1. q (B, n, n_heads, head_dim)", q.value());
  tut::forma("1. k (B, n, n_kv_heads, head_dim)", k.value());
  q = rope(q, 0, Scalar(cfg.rope_base));  // 2.
  k = rope(k, 0, Scalar(cfg.rope_base));
  tut::texto("3. sem cache: k e v têm só as n posições novas.");
  q = transpose(q, 1, 2);                     // cabeças primeiro: (B, cabeças, n, head_dim)
  k = repeat_kv(transpose(k, 1, 2), H / KV);  // 4.
  v = repeat_kv(transpose(v, 1, 2), H / KV);
  tut::forma("4. k depois de repeat_kv (B, n_heads, n, head_dim)", k.value());
  Tensor notas = matmul(q, transpose(k, -2, -1)) / std::sqrt(Scalar(D));  // 5.
  tut::forma("5. notas (B, n_heads, n, n)", notas.value());
  Tensor pesos = softmax(masked_fill(notas, causal_mask(n, n, 0),  // 6. e 7.
                                     -std::numeric_limits<Scalar>::infinity()));
  Tensor mistura = matmul(pesos, v);  // 8.
  tut::forma("8. mistura (B, n_heads, n, head_dim)", mistura.value());
  Tensor lado_a_lado = reshape(transpose(mistura, 1, 2), {B, n, H * D});  // 9.
  Tensor saida_mao = linear(lado_a_lado, atencao.wo.weight);
  tut::forma("9. saída (B, n, d_model)", saida_mao.value());

  tut::secao("O módulo faz o mesmo");
  Tensor saida = atencao.forward(x, nullptr, nullptr);
  std::printf("diferença máxima entre atencao.forward e os nove passos à mão: %.2e\n",
              diferenca_maxima(saida.value(), saida_mao.value()));
  tut::texto(
      "Zero, bit a bit: as mesmas ops, na mesma ordem. A saída tem a forma da entrada, (B, n, d_model):\n"
      "por isso a atenção pode ser SOMADA ao vetor de cada posição no bloco (capítulo 23).");

  tut::secao("O caminho rápido");
  cfg.ops_path = OpsPath::fast;
  Rng mesmo_rng(19);
  Attention rapida(cfg, mesmo_rng);  // mesma semente: os mesmos pesos
  std::printf("diferença máxima entre o caminho rápido e o de referência: %.2e\n",
              diferenca_maxima(rapida.forward(x, nullptr, nullptr).value(), saida.value()));
  tut::texto(
      "O `glass train` usa o caminho rápido (autograd/kernels/): os passos 3 a 8 num núcleo\n"
      "só, sem guardar a matriz de pesos. As mesmas contas agrupadas de outro jeito, então o\n"
      "float arredonda diferente: a diferença é minúscula, mas não é zero. Os testes provam a\n"
      "igualdade em double (tests/nn/attention_paths_f64_test.cpp).");

  tut::experimente({
      "pule o passo 2 (sem RoPE) na conta à mão: a diferença deixa de ser zero;",
      "troque causal_mask(n, n, 0) por causal_mask(n, n, 1) (start errado): cada posição passa a ver uma chave do futuro e a diferença deixa de ser zero (menos na última posição, que já via tudo);",
      "com cfg.n_kv_heads = 4 (antes de criar o módulo), repeat_kv(k, 1) não repete nada; reconte os parâmetros (65536).",
  });
  tut::respostas();
  {
    // Os nove passos de novo, com o RoPE ligado ou não e um start da máscara à escolha.
    const auto a_mao = [&](bool com_rope, std::size_t start_mascara) {
      Tensor q2 = reshape(linear(x, atencao.wq.weight), {B, n, H, D});
      Tensor k2 = reshape(linear(x, atencao.wk.weight), {B, n, KV, D});
      Tensor v2 = reshape(linear(x, atencao.wv.weight), {B, n, KV, D});
      if (com_rope) {
        q2 = rope(q2, 0, Scalar(cfg.rope_base));
        k2 = rope(k2, 0, Scalar(cfg.rope_base));
      }
      q2 = transpose(q2, 1, 2);
      k2 = repeat_kv(transpose(k2, 1, 2), H / KV);
      v2 = repeat_kv(transpose(v2, 1, 2), H / KV);
      Tensor notas2 = matmul(q2, transpose(k2, -2, -1)) / std::sqrt(Scalar(D));
      Tensor pesos2 = softmax(masked_fill(notas2, causal_mask(n, n, start_mascara),
                                          -std::numeric_limits<Scalar>::infinity()));
      return linear(reshape(transpose(matmul(pesos2, v2), 1, 2), {B, n, H * D}), atencao.wo.weight);
    };
    std::printf("sem o passo 2 (sem RoPE): diferença máxima %.2e\n",
                diferenca_maxima(a_mao(false, 0).value(), saida.value()));
    const Tensor errada = a_mao(true, 1);
    std::printf("com causal_mask(n, n, 1), diferença por posição:");
    for (std::size_t t = 0; t < n; ++t) {
      double d_t = 0;
      for (std::size_t c = 0; c < cfg.d_model; ++c) {
        const std::size_t i_t = t * cfg.d_model + c;
        d_t = std::max(d_t,
                       double(std::fabs(errada.value().data()[i_t] - saida.value().data()[i_t])));
      }
      std::printf(" %.2e", d_t);
    }
    std::printf("\n  (só a última posição, que já via todas as chaves, fica igual)\n");
    ModelConfig quatro = cfg;
    quatro.n_kv_heads = 4;
    Rng rng4(19);
    std::printf("parâmetros com n_kv_heads = 4: %zu\n", Attention(quatro, rng4).num_parameters());
  }
  return 0;
}
