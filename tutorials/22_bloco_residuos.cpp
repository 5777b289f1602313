// Capítulo 19 — O bloco do decoder e as conexões residuais.
#include <algorithm>
#include <cmath>

#include "autograd/ops.hpp"
#include "common.hpp"
#include "nn/decoder.hpp"

using namespace glass;

static double norma(const Array& a) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += double(a.data()[i]) * a.data()[i];
  return std::sqrt(s);
}

int main() {
  tut::capitulo(19, "O bloco do decoder e os resíduos");
  tut::novo("nn::Block: pré-normalização, atenção e SwiGLU SOMADAS ao fluxo residual; o Decoder inteiro.");
  tut::texto(
      "Um bloco junta tudo o que vimos, com duas somas:\n"
      "  x = x + atenção(RMSNorm(x))\n"
      "  x = x + swiglu(RMSNorm(x))\n"
      "O vetor x de cada posição é o 'fluxo residual': cada subcamada só soma um ajuste\n"
      "a ele, em vez de substituí-lo. Vantagens: o gradiente tem um caminho direto\n"
      "(a derivada de x + f(x) é 1 + f'(x)) e um bloco recém-criado quase não atrapalha.");

  ModelConfig cfg;  // o modelo padrão: d_model 128, 4 cabeças, 2 K/V, SwiGLU 344
  cfg.attention = "reference";  // a atenção de nn/attention.cpp, Attention::forward_reference
  Rng rng(19);
  Block bloco(cfg, rng);
  Tensor x = Tensor::randn({1, 6, cfg.d_model}, 1.0, rng, true);

  tut::secao("O bloco, e a mesma conta passo a passo");
  Tensor y = bloco.forward(x, nullptr, nullptr);
  Tensor h = x + bloco.attention.forward(bloco.attention_norm.forward(x), nullptr, nullptr);
  Tensor y_mao = h + bloco.feed_forward.forward(bloco.ffn_norm.forward(h));
  double diferenca = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    diferenca = std::max(diferenca, double(std::fabs(y.value().data()[i] - y_mao.value().data()[i])));
  }
  std::printf("diferença máxima entre bloco.forward e a conta à mão: %.6f\n", diferenca);
  tape().clear();

  tut::secao("Um bloco novo mexe pouco no fluxo");
  Tensor y2 = bloco.forward(x, nullptr, nullptr);
  std::printf("|x| = %.4f   |bloco(x) - x| = %.4f\n", norma(x.value()), norma((y2 - x).value()));
  tut::texto(
      "A inicialização (desvio 0.02, e 0.02/√(2·camadas) em wo e w2) faz cada\n"
      "subcamada começar pequena: o bloco começa perto da identidade.");

  tut::secao("O gradiente atravessa pelo atalho");
  Tensor L = sum(y2);
  L.backward();
  double media = 0;
  for (std::size_t i = 0; i < x.size(); ++i) media += x.grad().data()[i];
  media /= double(x.size());
  std::printf("média de dL/dx com L = soma(bloco(x)): %.4f  (o atalho sozinho daria 1)\n", media);

  tut::secao("O Decoder inteiro: embeddings -> 4 blocos -> RMSNorm -> cabeça de saída");
  Decoder modelo(cfg, 19);
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
  Ids tokens = {{1, 2, 3, 4}};
  Tensor logits;
  {
    NoGradGuard sem_fita;
    logits = modelo.forward(tokens);
  }
  tut::forma("logits de 4 tokens (B, T, vocab_size)", logits.value());

  tut::experimente({
      "tire o atalho (y = atenção(...) sem o + x) e veja |bloco(x)| e dL/dx mudarem;",
      "mude cfg.n_layers para 2 e reconte os parâmetros;",
      "compare os nomes com os do llama2.c: tok_embeddings, attention.wq, feed_forward.w1...",
  });
  return 0;
}
