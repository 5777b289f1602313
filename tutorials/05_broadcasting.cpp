// Capítulo 05 — Broadcasting e seus gradientes.
#include "autograd/ops.hpp"
#include "common.hpp"

using namespace glass;

int main() {
  tut::capitulo(5, "Broadcasting e seus gradientes");
  tut::novo("operar tensores de formas diferentes, e o gradiente que volta somado.");
  tut::texto(
      "Somar um vetor (3,) a uma matriz (2, 3) soma o vetor em cada linha: o vetor é\n"
      "'esticado' (broadcast) sem ser copiado. Regras do NumPy: alinhe as formas pela\n"
      "direita; um eixo de tamanho 1 (ou ausente) se repete.\n"
      "Na volta vale o inverso: se b foi usado em 2 linhas, o gradiente de b é a SOMA\n"
      "dos gradientes dessas 2 linhas (acumulação, como no capítulo 04).");

  Tensor a = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, true);
  Tensor b = Tensor::from_vector({10, 20, 30}, {3}, true);
  Tensor c = Tensor::from_vector({100, 200}, {2, 1}, true);

  tut::secao("(2, 3) + (3,)");
  Tensor s = a + b;
  tut::matriz("a + b", s.value(), 1);

  tut::secao("(2, 3) * (3,): o gradiente de b soma as linhas");
  tut::texto("L = soma(a * b). dL/db[j] = soma sobre as linhas de a[i][j] = 1+4, 2+5, 3+6.");
  Tensor L = sum(a * b);
  L.backward();
  tut::linha("grad b", b.grad(), 1);
  tut::matriz("grad a", a.grad(), 1);
  tut::texto("grad a é o próprio b repetido em cada linha.");

  tut::secao("(2, 3) * (2, 1): agora somam as colunas");
  a.zero_grad();
  Tensor L2 = sum(a * c);
  L2.backward();
  tut::forma("forma de c", c.value());
  tut::linha("grad c", c.grad(), 1);
  tut::texto("grad c[i] = 1+2+3 = 6 e 4+5+6 = 15: o gradiente volta com a forma de c.");

  tut::secao("Formas incompatíveis");
  try {
    Tensor d = Tensor::ones({2});
    Tensor e = a + d;
  } catch (const std::exception& e) {
    std::printf("erro: %s\n", e.what());
  }

  tut::experimente({
      "some um escalar: a + Tensor::scalar(1, true); o gradiente dele é 6 (seis usos);",
      "troque c por uma forma (1, 3) e preveja grad c antes de rodar;",
      "multiplique (2, 1) por (1, 3): que forma sai?",
  });
  tut::respostas();
  {
    a.zero_grad();
    Tensor um = Tensor::scalar(1, true);
    sum(a + um).backward();
    tut::linha("grad do escalar somado", um.grad(), 1);
    a.zero_grad();
    Tensor c13 = Tensor::from_vector({100, 200, 300}, {1, 3}, true);
    sum(a * c13).backward();
    tut::linha("grad c de forma (1, 3)", c13.grad(), 1);
    std::printf("  (agora somam as linhas: 1+4, 2+5, 3+6)\n");
    Tensor p = Tensor::from_vector({1, 2}, {2, 1}) * Tensor::from_vector({10, 20, 30}, {1, 3});
    tut::forma("(2, 1) * (1, 3)", p.value());
    tut::matriz("(2, 1) * (1, 3)", p.value(), 1);
  }
  return 0;
}
