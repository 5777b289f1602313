// Capítulo 23 — O bloco do decoder e as conexões residuais.
#include <algorithm>
#include <cmath>

#include <xtensor/xmath.hpp>

#include "autograd/ops.hpp"
#include "common.hpp"
#include "nn/decoder.hpp"

using namespace glass;

static double norma(const Array& a) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += double(a.data()[i]) * a.data()[i];
  return std::sqrt(s);
}

static double media(const Array& a) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a.data()[i];
  return s / double(a.size());
}

// The standard deviation of a weight matrix's entries.
static double desvio(const Array& a) {
  const double m = media(a);
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += (a.data()[i] - m) * (a.data()[i] - m);
  return std::sqrt(s / double(a.size()));
}

int main() {
  tut::capitulo(23, "O bloco do decoder e os resíduos");
  tut::novo(
      "nn::Block: pré-normalização, atenção e SwiGLU SOMADAS ao fluxo residual; a inicialização que começa perto da identidade.");
  tut::texto(
      "Um bloco junta a atenção (capítulo 20), a SwiGLU (capítulo 21) e a RMSNorm (capítulo\n"
      "22), com duas somas:\n"
      "  x = x + atenção(RMSNorm(x))\n"
      "  x = x + swiglu(RMSNorm(x))\n"
      "O vetor x de cada posição é o 'fluxo residual': cada subcamada só soma um ajuste\n"
      "a ele, em vez de substituí-lo. Vantagens: o gradiente tem um caminho direto\n"
      "(a derivada de x + f(x) é 1 + f'(x)) e um bloco recém-criado quase não atrapalha.");

  ModelConfig cfg;  // o modelo padrão: d_model 128, 4 cabeças, 2 K/V, SwiGLU 344
  cfg.ops_path = OpsPath::reference;  // a atenção de nn/attention.cpp, Attention::forward_reference
  Rng rng(19);
  Block bloco(cfg, rng);
  Tensor x = Tensor::randn({1, 6, cfg.d_model}, 1.0, rng, true);

  tut::secao("O bloco, e a mesma conta passo a passo");
  Tensor y = bloco.forward(x, nullptr, nullptr);
  Tensor h = x + bloco.attention.forward(bloco.attention_norm.forward(x), nullptr, nullptr);
  Tensor y_mao = h + bloco.feed_forward->forward(bloco.ffn_norm.forward(h));
  double diferenca = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    diferenca =
        std::max(diferenca, double(std::fabs(y.value().data()[i] - y_mao.value().data()[i])));
  }
  std::printf("diferença máxima entre bloco.forward e a conta à mão: %.6f\n", diferenca);
  tape().clear();

  tut::secao("Um bloco novo mexe pouco no fluxo");
  Tensor y2 = bloco.forward(x, nullptr, nullptr);
  std::printf("|x| = %.4f   |bloco(x) - x| = %.4f\n", norma(x.value()), norma((y2 - x).value()));
  tut::texto(
      "A inicialização faz cada subcamada começar pequena: todas as matrizes com desvio\n"
      "0.02, e as duas que escrevem no fluxo (wo da atenção e w2 da SwiGLU) com\n"
      "0.02/√(2·camadas), porque há 2·camadas somas no fluxo (GPT-2, nanoGPT). O bloco\n"
      "começa perto da identidade: o treino parte de x e aprende os ajustes.");
  std::printf("desvio de wq: %.5f   desvio de wo: %.5f   (0.02/√(2·%zu) = %.5f)\n",
              desvio(bloco.attention.wq.weight.value()), desvio(bloco.attention.wo.weight.value()),
              cfg.n_layers, 0.02 / std::sqrt(2.0 * double(cfg.n_layers)));

  tut::secao("O gradiente atravessa pelo atalho");
  tut::texto(
      "L = soma(saída). Com o atalho, a derivada de x + f(x) é 1 + f'(x). Medimos o tamanho\n"
      "do gradiente pela norma |dL/dx| (raiz da soma dos quadrados), não pela média: numa\n"
      "média, entradas de sinais opostos se cancelam e um gradiente grande pode parecer nulo.");
  sum(y2).backward();
  std::printf("|dL/dx| com os atalhos: %.3f   (o atalho sozinho daria √(6·128) = %.3f)\n",
              norma(x.grad()), std::sqrt(double(x.size())));
  std::printf("média de dL/dx com os atalhos: %.4f\n", media(x.grad()));
  x.zero_grad();
  Tensor sem_atalho = bloco.feed_forward->forward(bloco.ffn_norm.forward(
      bloco.attention.forward(bloco.attention_norm.forward(x), nullptr, nullptr)));
  sum(sem_atalho).backward();
  std::printf("|dL/dx| sem os atalhos: %.3f\n", norma(x.grad()));
  tut::texto(
      "Sem os atalhos, o gradiente precisa atravessar as subcamadas, que começam pequenas,\n"
      "e chega quase 150 vezes menor. Com os atalhos, cada bloco recebe o gradiente da perda por um\n"
      "caminho direto, por mais blocos que haja. O próximo capítulo empilha os blocos num\n"
      "Decoder.");

  tut::experimente({
      "na conta à mão, troque h = x + atenção(...) por h = atenção(...): a diferença deixa de ser zero;",
      "multiplique bloco.attention.wo.weight.value() por 10 e veja |bloco(x) - x| crescer;",
      "troque cfg.n_layers por 16 antes de criar o bloco: o desvio de wo cai para 0.02/√32 = 0.00354.",
  });
  tut::respostas();
  {
    NoGradGuard sem_fita;
    Tensor h_sem = bloco.attention.forward(bloco.attention_norm.forward(x), nullptr, nullptr);
    Tensor y_sem = h_sem + bloco.feed_forward->forward(bloco.ffn_norm.forward(h_sem));
    std::printf("h = atenção(...) sem o x: diferença máxima para bloco.forward %.4f\n",
                static_cast<double>(xt::amax(xt::abs(y_sem.value() - y2.value()))()));
    const Array wo_original = bloco.attention.wo.weight.value();
    bloco.attention.wo.weight.value() *= Scalar(10);
    std::printf("wo × 10: |bloco(x) - x| = %.4f (antes %.4f)\n",
                norma((bloco.forward(x, nullptr, nullptr) - x).value()), norma((y2 - x).value()));
    bloco.attention.wo.weight.value() = wo_original;
    ModelConfig dezesseis = cfg;
    dezesseis.n_layers = 16;
    Rng rng16(19);
    Block bloco16(dezesseis, rng16);
    std::printf("com 16 camadas: desvio de wo %.5f (0.02/√32 = %.5f)\n",
                desvio(bloco16.attention.wo.weight.value()), 0.02 / std::sqrt(32.0));
  }
  return 0;
}
