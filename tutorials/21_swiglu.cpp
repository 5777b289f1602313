// Capítulo 21 — SwiGLU: a camada feed-forward com portão.
#include <algorithm>
#include <cmath>

#include <xtensor/xmath.hpp>

#include "autograd/ops.hpp"
#include "common.hpp"
#include "gradcheck_da_biblioteca.hpp"
#include "nn/decoder.hpp"

using namespace glass;

int main() {
  tut::capitulo(21, "SwiGLU");
  tut::novo("a rede feed-forward de cada bloco: silu, um portão multiplicativo, e nn::SwiGLU.");
  tut::texto(
      "A atenção mistura posições; a camada feed-forward trabalha em cada posição\n"
      "sozinha, transformando o vetor. No LLaMA ela é uma SwiGLU (Shazeer, 2020):\n"
      "  h = silu(x W1ᵀ) * (x W3ᵀ)        (W1: portão, W3: 'up', largura ffn_hidden)\n"
      "  y = h W2ᵀ                        (W2: 'down', volta para d_model)\n"
      "silu(z) = z · sigmoid(z): parecida com ReLU, mas suave e um pouco negativa\n"
      "perto de zero. O produto com x W3ᵀ deixa o modelo 'abrir e fechar' cada canal.");

  tut::secao("silu em alguns pontos");
  Tensor z = Tensor::from_vector({-2, -1, 0, 1, 2}, {5});
  tut::linha("z", z.value(), 1);
  tut::linha("sigmoid(z)", sigmoid(z).value());
  tut::linha("silu(z)", silu(z).value());
  tut::texto(
      "silu(1) = 1 · 0.731059; silu(2) = 2 · 0.880797 = 1.761594 (o 0.880797 do capítulo 15).");

  tut::secao("nn::SwiGLU pequeno: d_model = 4, ffn_hidden = 8");
  ModelConfig cfg;
  cfg.d_model = 4;
  cfg.n_heads = 2;
  cfg.n_kv_heads = 1;
  cfg.ffn_hidden = 8;
  Rng rng(18);
  SwiGLU ffn(cfg, rng);
  // Os pesos iniciais são pequenos (desvio 0.02); ampliados 25 vezes, os números ficam legíveis.
  for (Tensor p : ffn.parameters()) p.value() *= Scalar(25);
  for (const auto& [nome, p] : ffn.named_parameters()) {
    std::printf("  %-10s %s\n", nome.c_str(), shape_str(p.shape()).c_str());
  }
  Tensor x = Tensor::randn({1, 3, 4}, 1.0, rng);
  Tensor y = ffn.forward(x);
  tut::forma("x", x.value());
  tut::forma("y", y.value());

  tut::secao("A mesma conta, à mão, com as ops");
  Tensor portao = silu(linear(x, ffn.w1.weight));
  Tensor cima = linear(x, ffn.w3.weight);
  Tensor y_mao = linear(portao * cima, ffn.w2.weight);
  double diferenca = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    diferenca =
        std::max(diferenca, double(std::fabs(y.value().data()[i] - y_mao.value().data()[i])));
  }
  std::printf("diferença máxima: %.6f\n", diferenca);
  tut::matriz("y", y.value(), 6);

  tut::secao("No modelo padrão");
  ModelConfig padrao;
  std::printf(
      "ffn_hidden = %zu: regra do LLaMA, 2/3 de 4·d_model = %.1f, arredondado para múltiplo de 8\n",
      padrao.ffn_hidden, 4.0 * padrao.d_model * 2 / 3);
  std::printf("parâmetros da SwiGLU por camada: 3 × %zu × %zu = %zu\n", padrao.ffn_hidden,
              padrao.d_model, 3 * padrao.ffn_hidden * padrao.d_model);
  tut::texto(
      "Três matrizes em vez de duas; o 2/3 mantém o total parecido com uma MLP de largura 4·d_model.");

  tut::secao("A verificação de gradientes (capítulo 07) de silu e da SwiGLU");
  tut::texto(
      "silu e o caminho rápido silu(a) * b (autograd/kernels/silu_mul.cpp) passam pelo juiz\ndo capítulo 07:\n"
      "(em double: o programa é float, mas o juiz roda nas bibliotecas em double, como o\n"
      "comando glass gradcheck --op silu)");
  tut::gradcheck_da_biblioteca("silu");
  tut::gradcheck_da_biblioteca("silu_mul");

  tut::experimente({
      "troque silu por sigmoid no cálculo à mão: a diferença deixa de ser zero;",
      "zere ffn.w3.weight.value() (ffn.w3.weight.value().fill(0)): y vira zero, o portão multiplica zero;",
      "imprima silu(-20) e silu(20): -0.000000 (tende a 0 por baixo) e 20.000000 (tende a z).",
  });
  tut::respostas();
  {
    NoGradGuard sem_fita;
    Tensor y_sigmoid = linear(sigmoid(linear(x, ffn.w1.weight)) * cima, ffn.w2.weight);
    std::printf("com sigmoid no lugar de silu: diferença máxima %.6f\n",
                static_cast<double>(xt::amax(xt::abs(y_sigmoid.value() - y.value()))()));
    ffn.w3.weight.value().fill(0);
    tut::linha("y com w3 = 0", ffn.forward(x).value());
    tut::linha("silu(-20) e silu(20)", silu(Tensor::from_vector({-20, 20}, {2})).value());
  }
  return 0;
}
