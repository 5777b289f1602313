// Capítulo 09 — Softmax e entropia cruzada (cross-entropy).
#include <cmath>

#include "autograd/ops.hpp"
#include "common.hpp"
#include "gradcheck_da_biblioteca.hpp"

using namespace glass;

int main() {
  tut::capitulo(9, "Softmax e entropia cruzada");
  tut::novo("transformar notas (logits) em probabilidades e medir o erro de uma previsão.");
  tut::texto(
      "O modelo termina com uma nota por caractere possível: os logits. O softmax\n"
      "transforma notas em probabilidades: p_i = e^(z_i) / soma_j e^(z_j).\n"
      "A entropia cruzada mede o quanto a previsão errou o caractere certo c:\n"
      "  perda = -log(p_c).\n"
      "Se o modelo dá probabilidade 1 ao certo, a perda é 0; se dá quase 0, a perda explode.");

  tut::secao("Três candidatos, logits [2, 1, 0.1]");
  Tensor logits = Tensor::from_vector({2.0f, 1.0f, 0.1f}, {1, 3}, true);
  Tensor p = softmax(logits);
  tut::linha("probabilidades", p.value());
  std::printf("soma: %.6f\n", sum(p).item());

  tut::secao("Perda se o certo é o candidato 0");
  Ids alvo = {0};
  Tensor perda = cross_entropy(logits, alvo);
  std::printf("perda: %.6f   (-log(0.659001) = %.6f)\n", perda.item(), -std::log(0.659001));
  perda.backward();
  tut::linha("grad logits", logits.grad());
  tut::texto(
      "O gradiente da entropia cruzada em relação aos logits é simplesmente\n"
      "p - one_hot(alvo) = [0.659 - 1, 0.242, 0.099]: empurra o certo para cima e os\n"
      "outros para baixo, cada um na medida da probabilidade que recebeu.");

  tut::secao("Por que subtrair o máximo");
  tut::texto(
      "e^1000 não cabe em float (vira infinito). Mas somar uma constante a todas as notas\n"
      "não muda o softmax, então subtraímos o máximo de cada linha antes de exponenciar.");
  Tensor grandes = Tensor::from_vector({1000, 999, 998}, {3});
  tut::linha("softmax de [1000, 999, 998]", softmax(grandes).value());
  tut::linha("softmax de [2, 1, 0]", softmax(Tensor::from_vector({2, 1, 0}, {3})).value());

  tut::secao("O ponto de partida de um modelo que não sabe nada");
  tut::texto("Logits todos iguais dão probabilidades uniformes, e a perda é log(V):");
  Tensor iguais = Tensor::zeros({1, 3});
  std::printf("perda uniforme com V = 3: %.6f   (log 3 = %.6f)\n",
              cross_entropy(iguais, alvo).item(), std::log(3.0));
  tut::texto(
      "Guarde isto: com um vocabulário de V caracteres, um modelo recém-criado começa\n"
      "perto de log(V). Os capítulos 12 e 27 partem daí. A mesma perda em bits por caractere\n"
      "(perda / ln 2) e em perplexidade (e^perda, aqui 3: a dúvida de um sorteio entre 3):\n"
      "docs/perplexidade.md.");

  tut::secao("A verificação de gradientes (capítulo 07) de softmax, log_softmax e cross_entropy");
  tut::texto(
      "A volta da softmax mistura a linha inteira (o exercício 11 a deduz); a da entropia\ncruzada é p - one_hot. As duas passam pelo juiz do capítulo 07:\n"
      "(em double: o programa é float, mas o juiz roda nas bibliotecas em double, como o\n"
      "comando glass gradcheck --op softmax)");
  tut::gradcheck_da_biblioteca("softmax");
  tut::gradcheck_da_biblioteca("log_softmax");
  tut::gradcheck_da_biblioteca("cross_entropy");

  tut::experimente({
      "troque o alvo para 2 e veja a perda subir para -log(0.098566);",
      "multiplique os logits por 10: as probabilidades ficam mais 'certas' (capítulo 28);",
      "use ignore_index: cross_entropy(logits, alvo, 0) ignora o alvo 0 e a perda vira 0.",
  });
  tut::respostas();
  {
    NoGradGuard sem_fita;
    std::printf("perda com o alvo 2: %.6f   (-log(0.098566) = %.6f)\n",
                cross_entropy(logits, Ids{2}).item(), -std::log(0.098566));
    tut::linha("probabilidades dos logits * 10", softmax(logits * 10).value());
    std::printf("  (os logits viram [20, 10, 1]: o maior fica com 1 / (1 + e^-10 + e^-19))\n");
    std::printf("perda com ignore_index = 0 e o alvo 0: %.6f\n",
                cross_entropy(logits, alvo, 0).item());
  }
  return 0;
}
