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
  tut::respostas();
  {
    // L = exp(b) / 1000, b = x y + x: dL/db = exp(b) / 1000, dL/dx = dL/db · (y + 1).
    Tensor x2 = Tensor::scalar(2, true);
    Tensor y2 = Tensor::scalar(3, true);
    Tensor b2 = x2 * y2 + x2;
    Tensor L2 = exp(b2) / 1000;
    L2.backward();
    std::printf("L = exp(b)/1000: grad x = %.6f; à mão, exp(8)/1000 · (y + 1) = %.6f\n",
                static_cast<double>(x2.grad().data()[0]), std::exp(8.0) / 1000 * 4);
    Tensor x3 = Tensor::scalar(2, true);
    Tensor y3 = Tensor::scalar(3);  // requires_grad = false
    Tensor a3 = x3 * y3;
    std::printf("tamanho da fita depois de a = x * y: %zu\n", tape().size());
    Tensor b3 = a3 + x3;
    std::printf("tamanho da fita depois de b = a + x: %zu\n", tape().size());
    Tensor L3 = b3 * b3;
    std::printf("tamanho da fita depois de L = b * b: %zu\n", tape().size());
    L3.backward();
    std::printf("com y sem requires_grad: grad x = %.6f (o mesmo 64), y tem gradiente? %s\n",
                static_cast<double>(x3.grad().data()[0]), y3.has_grad() ? "sim" : "não");
    std::printf(
        "  (a fita grava as mesmas 3 operações, porque x participa de todas; só y fica sem grad)\n");
  }
  return 0;
}
