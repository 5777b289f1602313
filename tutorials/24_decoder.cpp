// Capítulo 24 — O Decoder inteiro: embeddings, blocos, RMSNorm final e a cabeça de saída.
#include <algorithm>
#include <cmath>

#include "autograd/ops.hpp"
#include "common.hpp"
#include "nn/decoder.hpp"

using namespace glass;

int main() {
  tut::capitulo(24, "O Decoder inteiro");
  tut::novo(
      "nn::Decoder: ids -> embeddings -> n_layers blocos -> RMSNorm -> cabeça de saída -> logits; a contagem dos parâmetros.");
  tut::texto(
      "O modelo inteiro é uma fila curta:\n"
      "  x = tok_embeddings[ids]             (B, T, d_model)   capítulo 11\n"
      "  x = bloco_i(x), i = 0 .. n_layers-1  (B, T, d_model)   capítulo 23\n"
      "  x = RMSNorm(x)                       (B, T, d_model)   capítulo 22\n"
      "  logits = x Woutᵀ                     (B, T, vocab_size) capítulos 06 e 09\n"
      "O RoPE não tem pesos: a posição entra dentro de cada atenção (capítulo 17). A cabeça de\n"
      "saída (output) é uma matriz própria, não a tabela de embeddings transposta.");

  ModelConfig cfg;  // o modelo padrão: vocab_size 65 (64 caracteres + o id 0 de "desconhecido")
  Decoder modelo(cfg, 23);
  tut::texto(
      "As contas abaixo usam o ModelConfig padrão, com vocab_size = 65 (64 caracteres + o id 0).\n"
      "Nenhum texto que vem com o projeto dá exatamente 65: o Tiny Shakespeare dá 66 e Dom\n"
      "Casmurro inteiro, 83. `glass train` usa o vocabulário do tokenizador, e cada caractere a\n"
      "mais acrescenta 2 × 128 parâmetros (uma linha de embeddings e uma da saída).");

  tut::secao("Os parâmetros, com os nomes do LLaMA / llama2.c");
  std::size_t total = 0;
  for (const auto& [nome, p] : modelo.named_parameters()) {
    total += p.size();
    if (nome.rfind("layers.0.", 0) == 0 || nome.rfind("layers.", 0) != 0) {
      std::printf("  %-38s %-12s %zu\n", nome.c_str(), shape_str(p.shape()).c_str(), p.size());
    }
  }
  std::printf("  (layers.1 a layers.3 repetem as formas de layers.0)\n");
  std::printf("parâmetros (vocabulário %zu): %zu\n", cfg.vocab_size, modelo.num_parameters());
  std::printf("conferência somando as formas: %zu\n", total);

  tut::secao("A mesma conta, peça por peça");
  const std::size_t d = cfg.d_model, kv = cfg.n_kv_heads * cfg.head_dim(), f = cfg.ffn_hidden;
  const std::size_t por_bloco = (d * d + kv * d + kv * d + d * d)  // atenção: wq, wk, wv, wo
                                + 3 * f * d                        // SwiGLU: w1, w2, w3
                                + 2 * d;                           // os dois ganhos de RMSNorm
  std::printf("por bloco: atenção %zu + SwiGLU %zu + RMSNorm %zu = %zu\n", 2 * d * d + 2 * kv * d,
              3 * f * d, 2 * d, por_bloco);
  const std::size_t fora = cfg.vocab_size * d + d + cfg.vocab_size * d;  // embeddings, norma, saída
  std::printf("fora dos blocos: embeddings %zu + RMSNorm final %zu + saída %zu = %zu\n",
              cfg.vocab_size * d, d, cfg.vocab_size * d, fora);
  std::printf("total à mão: %zu × %zu + %zu = %zu\n", cfg.n_layers, por_bloco, fora,
              cfg.n_layers * por_bloco + fora);

  tut::secao("Uma passada: ids -> logits -> probabilidades");
  Ids tokens = {{1, 2, 3, 4}};
  NoGradGuard sem_fita;
  Tensor logits = modelo.forward(tokens);
  std::printf("ids (B, T): %s\n", shape_str(shape_of(tokens)).c_str());
  tut::forma("logits (B, T, vocab_size)", logits.value());
  Ids alvos = {{2, 3, 4, 5}};
  std::printf("perda de um modelo recém-criado: %.4f   log(65) = %.4f\n",
              cross_entropy(logits, alvos).item(), std::log(65.0));
  tut::texto(
      "Com pesos pequenos, os logits começam quase iguais e a perda começa perto de\n"
      "log(vocab_size), como previsto no capítulo 09. O treino (capítulos 25 a 27) a faz cair.");

  tut::experimente({
      "mude cfg.n_layers para 2 e reconte: 742784 - 2 × 181504 = 379776;",
      "mude cfg.vocab_size para 83 (o vocabulário de Dom Casmurro, capítulo 10): embeddings e saída crescem 18 × 128 = 2304 cada (747392 no total);",
      "compare os nomes com os do llama2.c: tok_embeddings, attention.wq, feed_forward.w1...",
  });
  tut::respostas();
  {
    ModelConfig duas = cfg;
    duas.n_layers = 2;
    std::printf("parâmetros com n_layers = 2: %zu\n", Decoder(duas, 23).num_parameters());
    ModelConfig livro = cfg;
    livro.vocab_size = 83;
    std::printf("parâmetros com vocab_size = 83: %zu\n", Decoder(livro, 23).num_parameters());
  }
  return 0;
}
