// Capítulo 19 — GQA (grouped-query attention): cabeças K/V compartilhadas.
#include "autograd/ops.hpp"
#include "common.hpp"
#include "nn/config.hpp"

using namespace glass;

int main() {
  tut::capitulo(19, "GQA: cabeças K/V compartilhadas");
  tut::novo(
      "cabeças K/V compartilhadas por várias consultas (repeat_kv); o\n"
      "gradiente somado da cabeça compartilhada; quanto se economiza em parâmetros e em cache.");
  tut::texto(
      "No capítulo 18 cada cabeça tinha a sua Q, a sua K e a sua V. O modelo padrão corta Q\n"
      "em 4 cabeças de head_dim = 32, mas K e V em só 2. GQA (Ainslie et al., 2023): cada\n"
      "cabeça K/V serve a 2 cabeças de consulta, e a cabeça h usa a cabeça K/V h / 2. As\n"
      "duas consultas continuam com pesos próprios e olham para onde quiserem; só as chaves e\n"
      "os valores que elas leem são os mesmos. Menos parâmetros e, principalmente, um cache\n"
      "de K/V com metade do tamanho (capítulo 29).");

  tut::secao("repeat_kv: de 2 cabeças K/V para 4");
  // K de forma (B=1, n_kv_heads=2, n=3, head_dim=2); cabeça 0 = números 1.., cabeça 1 = 10..
  Tensor K = Tensor::from_vector({1, 1, 2, 2, 3, 3, 10, 10, 20, 20, 30, 30}, {1, 2, 3, 2});
  const std::size_t n_rep = 2;  // cabeças de consulta por cabeça K/V
  Tensor K_rep = repeat_kv(K, n_rep);
  tut::forma("K", K.value());
  tut::forma("repeat_kv(K, n_rep)", K_rep.value());
  const std::size_t n_heads = K_rep.shape()[1];
  for (std::size_t h = 0; h < n_heads; ++h) {
    std::printf("cabeça de consulta %zu usa K/V %zu: ", h, h / n_rep);
    std::printf("%s\n", tut::numeros(K_rep.value().data() + h * 6, 6, 1).c_str());
  }
  tut::texto("A cabeça de consulta h lê a cabeça K/V h / n_rep (divisão inteira).");

  tut::secao("O gradiente volta somado para a cabeça compartilhada");
  Tensor Kg = Tensor::from_vector({1, 1, 2, 2, 3, 3, 10, 10, 20, 20, 30, 30}, {1, 2, 3, 2}, true);
  Tensor pesos_cabeca = Tensor::from_vector({1, 2, 3, 4}, {1, 4, 1, 1});  // um peso por cabeça
  Tensor L = sum(repeat_kv(Kg, 2) * pesos_cabeca);
  L.backward();
  tut::matriz("grad K (cabeça K/V 0, depois 1)", reshape(Tensor(Kg.grad()), {2, 6}).value(), 1);
  tut::texto(
      "Cabeça K/V 0 recebe 1 + 2 = 3 (das consultas 0 e 1); a cabeça 1 recebe 3 + 4 = 7.\n"
      "É a acumulação do capítulo 04: um tensor usado duas vezes soma os gradientes.");

  tut::secao("Quanto a GQA economiza (modelo padrão)");
  ModelConfig cfg;
  const std::size_t d = cfg.d_model, kv = cfg.n_kv_heads * cfg.head_dim();
  std::printf("d_model %zu, %zu cabeças de consulta, %zu cabeças K/V, head_dim %zu\n", d,
              cfg.n_heads, cfg.n_kv_heads, cfg.head_dim());
  std::printf("parâmetros da atenção por camada, GQA: %zu   (wq %zu + wk %zu + wv %zu + wo %zu)\n",
              2 * d * d + 2 * kv * d, d * d, kv * d, kv * d, d * d);
  std::printf("parâmetros da atenção por camada, 4 cabeças K/V: %zu\n", 4 * d * d);
  std::printf("números no cache por posição e camada: GQA %zu, sem GQA %zu\n", 2 * kv, 2 * d);
  std::printf("cache completo (%zu posições, %zu camadas, float): GQA %.0f KiB, sem GQA %.0f KiB\n",
              cfg.context_length, cfg.n_layers,
              double(cfg.context_length * cfg.n_layers * 2 * kv * 4) / 1024,
              double(cfg.context_length * cfg.n_layers * 2 * d * 4) / 1024);
  tut::texto(
      "O cache guarda K e V (por isso o 2) de cada posição e camada; com GQA ele tem a\n"
      "metade do tamanho. Num modelo de verdade a mesma conta dá gigabytes (o Llama 2 70B\n"
      "guarda 1.25 GiB por conversa de 4096 tokens, e seriam 10 GiB sem GQA): docs/escala.md.\n"
      "O próximo capítulo junta tudo no módulo nn::Attention.");

  tut::experimente({
      "troque n_rep = 2 por 4: 8 cabeças de consulta, e as cabeças 0 a 3 leem a K/V 0;",
      "com cfg.n_kv_heads = 1 (MQA: 40960 parâmetros e cache de 256 KiB) ou 4 (multi-cabeça comum: 65536 e 1024 KiB) e reconte;",
      "troque os pesos por cabeça para {1, 1, 1, 1}: cada cabeça K/V recebe 2 (duas consultas a usam).",
  });
  tut::respostas();
  {
    Tensor K_rep4 = repeat_kv(K, 4);
    tut::forma("repeat_kv(K, 4)", K_rep4.value());
    for (std::size_t h = 0; h < K_rep4.shape()[1]; ++h) {
      std::printf("n_rep = 4: cabeça de consulta %zu usa K/V %zu: %s\n", h, h / 4,
                  tut::numeros(K_rep4.value().data() + h * 6, 6, 1).c_str());
    }
    for (std::size_t n_kv : {std::size_t{1}, std::size_t{4}}) {
      const std::size_t kv_n = n_kv * cfg.head_dim();
      std::printf("n_kv_heads = %zu: parâmetros da atenção %zu, cache completo %.0f KiB\n", n_kv,
                  2 * d * d + 2 * kv_n * d,
                  double(cfg.context_length * cfg.n_layers * 2 * kv_n * 4) / 1024);
    }
    Tensor Kg1 =
        Tensor::from_vector({1, 1, 2, 2, 3, 3, 10, 10, 20, 20, 30, 30}, {1, 2, 3, 2}, true);
    sum(repeat_kv(Kg1, 2) * Tensor::ones({1, 4, 1, 1})).backward();
    tut::matriz("grad K com pesos {1, 1, 1, 1}", reshape(Tensor(Kg1.grad()), {2, 6}).value(), 1);
  }
  return 0;
}
