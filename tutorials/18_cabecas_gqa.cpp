// Capítulo 16 — Várias cabeças e GQA (grouped-query attention).
#include "autograd/ops.hpp"
#include "common.hpp"
#include "nn/decoder.hpp"

using namespace glass;

int main() {
  tut::capitulo(16, "Cabeças e GQA");
  tut::novo("várias cabeças de atenção em paralelo, e cabeças K/V compartilhadas (repeat_kv).");
  tut::texto(
      "Uma cabeça de atenção aprende um jeito de consultar o contexto. Com várias\n"
      "cabeças, cada posição pode olhar para lugares diferentes ao mesmo tempo. As contas\n"
      "são as do capítulo 14, feitas por cabeça: o vetor Q de d_model = 128 números é\n"
      "cortado em 4 pedaços de head_dim = 32, e cada pedaço é uma cabeça.\n"
      "GQA (Ainslie et al., 2023): em vez de 4 cabeças K/V, o modelo tem só 2, e cada uma\n"
      "serve a 2 cabeças de consulta: a cabeça h usa a cabeça K/V h / 2. Menos parâmetros\n"
      "e, principalmente, um cache de K/V com metade do tamanho.");

  tut::secao("repeat_kv: de 2 cabeças K/V para 4");
  // K de forma (B=1, n_kv_heads=2, n=3, head_dim=2); cabeça 0 = números 1.., cabeça 1 = 10..
  Tensor K = Tensor::from_vector({1, 1, 2, 2, 3, 3, 10, 10, 20, 20, 30, 30}, {1, 2, 3, 2});
  Tensor K4 = repeat_kv(K, 2);
  tut::forma("K", K.value());
  tut::forma("repeat_kv(K, 2)", K4.value());
  for (std::size_t h = 0; h < 4; ++h) {
    std::printf("cabeça de consulta %zu usa K/V %zu: ", h, h / 2);
    std::printf("%s\n", tut::numeros(K4.value().data() + h * 6, 6, 1).c_str());
  }

  tut::secao("O gradiente volta somado para a cabeça compartilhada");
  Tensor Kg = Tensor::from_vector({1, 1, 2, 2, 3, 3, 10, 10, 20, 20, 30, 30}, {1, 2, 3, 2}, true);
  Tensor pesos_cabeca = Tensor::from_vector({1, 2, 3, 4}, {1, 4, 1, 1});  // um peso por cabeça
  Tensor L = sum(repeat_kv(Kg, 2) * pesos_cabeca);
  L.backward();
  tut::matriz("grad K (cabeça K/V 0, depois 1)", reshape(Tensor(Kg.grad()), {2, 6}).value(), 1);
  tut::texto("Cabeça K/V 0 recebe 1 + 2 = 3 (das consultas 0 e 1); a cabeça 1 recebe 3 + 4 = 7.");

  tut::secao("Formas dentro de nn::Attention (modelo padrão, 5 posições)");
  ModelConfig cfg;
  cfg.attention = "reference";  // os nove passos de nn/attention.cpp
  Rng rng(16);
  Attention atencao(cfg, rng);
  Tensor x = Tensor::randn({1, 5, cfg.d_model}, 1.0, rng);
  Tracer tracer;
  {
    NoGradGuard sem_fita;
    atencao.forward(x, nullptr, &tracer);
  }
  for (const std::string& nome : tracer.names()) {
    std::printf("  %-24s %s\n", nome.c_str(), shape_str(shape_of(tracer.get(nome))).c_str());
  }
  tut::texto("Q tem 4 cabeças, K e V têm 2; notas e pesos têm 4: a cabeça h lê a K/V h/2.\n"
             "É o passo 4 de Attention::forward_reference (nn/attention.cpp):\n"
             "  k = repeat_kv(k, n_rep);  v = repeat_kv(v, n_rep);\n"
             "Um módulo solto grava \"attn.q\" ...; dentro do Decoder os nomes levam o caminho\n"
             "do bloco: \"layers.0.attn.q\". (O caminho rápido faz o mesmo por índice, sem a\n"
             "cópia: capítulo 23.)");

  tut::secao("Quanto a GQA economiza");
  const std::size_t d = cfg.d_model, kv = cfg.n_kv_heads * cfg.head_dim();
  std::printf("parâmetros da atenção por camada, GQA: %zu   (wq %zu + wk %zu + wv %zu + wo %zu)\n",
              atencao.num_parameters(), d * d, kv * d, kv * d, d * d);
  std::printf("parâmetros da atenção por camada, 4 cabeças K/V: %zu\n", 4 * d * d);
  std::printf("números no cache por posição e camada: GQA %zu, sem GQA %zu\n", 2 * kv, 2 * d);
  std::printf("cache completo (%zu posições, %zu camadas, float): GQA %.0f KiB, sem GQA %.0f KiB\n",
              cfg.context_length, cfg.n_layers,
              double(cfg.context_length * cfg.n_layers * 2 * kv * 4) / 1024,
              double(cfg.context_length * cfg.n_layers * 2 * d * 4) / 1024);

  tut::experimente({
      "troque repeat_kv(K, 2) por repeat_kv(K, 4): 8 cabeças de consulta;",
      "com cfg.n_kv_heads = 1 (MQA) ou 4 (atenção multi-cabeça comum), reconte os parâmetros;",
      "imprima tracer.get(\"layers.0.attn.softmax\") e confira que cada linha soma 1.",
  });
  return 0;
}
