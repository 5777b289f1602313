// Capítulo 03 — A fita: gravar a conta e voltar por ela (backward).
#include "autograd/ops.hpp"
#include "common.hpp"

using namespace glass;

static void mostrar_fita() {
  std::printf("registros na fita: %zu\n", tape().size());
  for (std::size_t i = 0; i < tape().size(); ++i) {
    const TapeRecord& r = tape().records()[i];
    std::printf("  %zu. %-10s -> valor %s\n", i + 1, r.op.c_str(),
                tut::numeros(r.output.value().data(), r.output.size()).c_str());
  }
}

int main() {
  tut::capitulo(3, "A fita: gravar e voltar");
  tut::novo("a fita (tape) e backward(): todas as derivadas numa passada só.");
  tut::texto(
      "Quando um tensor tem requires_grad = true, cada operação feita com ele é\n"
      "anotada numa fita: a operação, o resultado e uma função que sabe mandar o\n"
      "gradiente de volta para as entradas. backward() percorre a fita de trás para\n"
      "frente. Exemplo: x = 2, y = 3,\n"
      "  a = x * y      (6)\n"
      "  b = a + x      (8)\n"
      "  L = b * b      (64)");

  tut::secao("Ida (forward): a fita grava");
  Tensor x = Tensor::scalar(2, /*requires_grad=*/true);
  Tensor y = Tensor::scalar(3, true);
  Tensor a = x * y;
  Tensor b = a + x;
  Tensor L = b * b;
  std::printf("L: %.6f\n", L.item());
  mostrar_fita();

  tut::secao("Volta (backward): da saída para as entradas");
  tut::texto(
      "  dL/db = 2b = 16\n"
      "  dL/da = dL/db * 1 = 16\n"
      "  dL/dy = dL/da * x = 32\n"
      "  dL/dx = dL/da * y + dL/db * 1 = 48 + 16 = 64   (x aparece duas vezes: as parcelas somam)");
  L.backward();
  tut::linha("grad x", x.grad());
  tut::linha("grad y", y.grad());
  std::printf("registros depois do backward: %zu (a fita é limpa a cada passo)\n", tape().size());

  tut::secao("Sem gravar: NoGradGuard");
  {
    NoGradGuard sem_fita;
    Tensor c = (x * y + x) * (x * y + x);
    std::printf("valor: %.6f   registros: %zu\n", c.item(), tape().size());
  }
  tut::texto(
      "Na avaliação e na geração de texto não vamos voltar: desligar a gravação\n"
      "economiza memória e tempo. Tensores sem requires_grad também não gravam nada.");

  tut::experimente({
      "troque L = b * b por L = exp(b) / 1000 e confira grad x à mão;",
      "imprima tape().size() depois de cada linha da ida;",
      "crie y com requires_grad = false: o que muda na fita e em grad y?",
  });
  return 0;
}
