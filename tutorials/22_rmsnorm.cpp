// Capítulo 22 — RMSNorm.
#include <cmath>

#include <xtensor/xmath.hpp>

#include "autograd/ops.hpp"
#include "common.hpp"
#include "gradcheck_da_biblioteca.hpp"

using namespace glass;

int main() {
  tut::capitulo(22, "RMSNorm");
  tut::novo("normalizar cada vetor pelo seu tamanho (raiz da média dos quadrados).");
  tut::texto(
      "Ao atravessar camadas, os vetores podem crescer ou encolher muito, e o treino\n"
      "fica instável. A RMSNorm (Zhang & Sennrich, 2019) põe cada vetor numa escala\n"
      "padrão e depois multiplica por um ganho aprendível g:\n"
      "  rms(x) = sqrt(média(x²) + eps)       y = x / rms(x) * g\n"
      "Diferente da LayerNorm, não subtrai a média e não tem bias. eps = 1e-5 evita\n"
      "divisão por zero.");

  tut::secao("x = [1, 2, 3, 4], ganho 1");
  Tensor x = Tensor::from_vector({1, 2, 3, 4}, {1, 4}, true);
  Tensor g = Tensor::ones({4}, true);
  const double eps = 1e-5;
  std::printf("média(x²) = (1 + 4 + 9 + 16) / 4 = 7.5   rms = sqrt(7.5 + 1e-5) = %.6f\n",
              std::sqrt(7.5 + eps));
  Tensor y = rms_norm(x, g, eps);
  tut::linha("y", y.value());
  std::printf("média(y²): %.6f\n", mean(y * y).item());

  tut::secao("A escala de x não importa");
  Tensor x10 = Tensor::from_vector({10, 20, 30, 40}, {1, 4});
  tut::linha("y de 10x", rms_norm(x10, g, eps).value());
  tut::texto(
      "A mesma saída até a 5ª casa: a RMSNorm só olha a direção do vetor, não o tamanho.\n"
      "A 6ª casa muda por causa do eps, que não cresce junto com x: 10x dá\n"
      "[1, 2, 3, 4] / sqrt(7.5 + 1e-7) em vez de / sqrt(7.5 + 1e-5).");

  tut::secao("O ganho g escolhe uma escala por coordenada");
  Tensor g2 = Tensor::from_vector({1, 1, 0.5f, 2}, {4});
  tut::linha("y com ganho [1, 1, 0.5, 2]", rms_norm(x, g2, eps).value());

  tut::secao("Gradientes");
  Tensor L = sum(y * Tensor::from_vector({1, 0, 0, 0}, {4}));
  L.backward();
  tut::linha("grad x (de y[0])", x.grad());
  tut::linha("grad g (de y[0])", g.grad());
  tut::texto(
      "Aumentar x[0] aumenta y[0], mas aumentar os outros DIMINUI y[0] (eles aumentam\n"
      "o rms que divide tudo). A fórmula é conferida logo abaixo, pelo juiz do capítulo 07.");

  tut::secao("A verificação de gradientes (capítulo 07) da RMSNorm");
  tut::texto(
      "A volta da RMSNorm mistura a linha inteira (cada y depende do rms de todos os x).\nEla passa pelo juiz do capítulo 07:\n"
      "(em double: o programa é float, mas o juiz roda nas bibliotecas em double, como o\n"
      "comando glass gradcheck --op rms_norm)");
  tut::gradcheck_da_biblioteca("rms_norm");

  tut::experimente({
      "troque x por [0, 0, 0, 0]: y sai [0, 0, 0, 0], e quem salva a conta é o eps (sem ele seria 0/0 = nan);",
      "troque x por [1, 1, 1, 1] e por [-1, -1, -1, -1]: sai quase [1, 1, 1, 1] e [-1, -1, -1, -1] (rms ≈ 1, o sinal fica; o eps tira um pouco da sexta casa);",
      "implemente a conta com mean, pow e div e compare com rms_norm.",
  });
  tut::respostas();
  {
    NoGradGuard sem_fita;
    for (const auto& [rotulo, v] : {std::pair<const char*, Scalar>{"y de [0, 0, 0, 0]", 0},
                                    {"y de [1, 1, 1, 1]", 1},
                                    {"y de [-1, -1, -1, -1]", -1}}) {
      tut::linha(rotulo, rms_norm(Tensor::full({1, 4}, v), g, eps).value());
    }
    // A conta com as ops: x / sqrt(média(x²) + eps) * g.
    Tensor xs(x.value());
    Tensor com_ops = div(xs, pow(mean(xs * xs, -1, true) + Scalar(eps), 0.5)) * g;
    tut::linha("y com mean, pow e div", com_ops.value());
    std::printf("diferença máxima para rms_norm: %.6f\n",
                static_cast<double>(xt::amax(xt::abs(com_ops.value() - y.value()))()));
  }
  return 0;
}
