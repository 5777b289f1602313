// Capítulo 17 — RoPE: a posição como rotação.
#include <algorithm>
#include <cmath>

#include "autograd/ops.hpp"
#include "common.hpp"

using namespace glass;

// A vector (D,) placed at absolute position p: rope of a (1, 1, 1, D) tensor with start = p.
static Tensor na_posicao(const Tensor& v, std::size_t p) {
  const std::size_t D = v.size();
  return reshape(rope(reshape(v, {1, 1, 1, D}), p), {D});
}

int main() {
  tut::capitulo(17, "RoPE: posição como rotação");
  tut::novo(
      "a posição entra no modelo girando Q e K (rope), e o produto Q·K passa a depender da distância.");
  tut::texto(
      "A atenção do capítulo 15 não sabe a ordem das posições: fora a máscara, embaralhar\n"
      "as chaves visíveis só embaralha os pesos junto. O RoPE (Su et al., 2021) resolve\n"
      "isso girando Q e K: as coordenadas são agrupadas em pares (x[2i], x[2i+1]) e o\n"
      "par i da posição p gira pelo ângulo p · base^(-2i/D), com base = 10000. Girar\n"
      "dois vetores pelo mesmo tanto não muda o produto escalar entre eles; por isso\n"
      "q·k depois do RoPE depende só da DIFERENÇA de posições.");

  tut::secao("Um par só (D = 2): o vetor [1, 0] gira 1 radiano por posição");
  Tensor x = Tensor::from_vector({1, 0, 1, 0, 1, 0, 1, 0}, {1, 4, 1, 2});  // (B, T, H, D)
  Tensor girado = rope(x, 0);
  for (std::size_t p = 0; p < 4; ++p) {
    tut::linha("posição " + std::to_string(p), reshape(slice(girado, 1, p, p + 1), {2}).value());
  }
  tut::texto("São [cos p, sin p]: p = 1 dá [0.540302, 0.841471].");

  tut::secao("Só a distância importa");
  Tensor q = Tensor::from_vector({0.5f, -1.0f, 2.0f, 0.3f}, {4});
  Tensor k = Tensor::from_vector({1.0f, 0.4f, -0.7f, 1.5f}, {4});
  for (auto [m, n] : {std::pair<int, int>{2, 0}, {5, 3}, {12, 10}, {3, 0}, {13, 10}}) {
    const Scalar produto = sum(na_posicao(q, m) * na_posicao(k, n)).item();
    std::printf("q na posição %2d, k na posição %2d (distância %d): q·k = %.6f\n", m, n, m - n,
                produto);
  }
  tut::texto("Mesma distância, mesmo produto (até o arredondamento de float).");

  tut::secao("E se só q girar?");
  tut::texto(
      "Gire q e deixe k parado: agora só q muda com a posição, e o produto passa a depender\n"
      "da posição ABSOLUTA de q, não da distância. Os mesmos pares de posições de cima:");
  for (auto [m, n] : {std::pair<int, int>{2, 0}, {5, 3}, {12, 10}}) {
    const Scalar produto = sum(na_posicao(q, m) * k).item();
    std::printf("só q girado, q na posição %2d, k na %2d: q·k = %.6f\n", m, n, produto);
  }
  tut::texto("Três distâncias iguais, três produtos diferentes: por isso o RoPE gira Q E K.");

  tut::secao("Girar não muda o tamanho");
  std::printf("|q| = %.6f   |q na posição 7| = %.6f\n", std::sqrt(sum(q * q).item()),
              std::sqrt(sum(na_posicao(q, 7) * na_posicao(q, 7)).item()));

  tut::secao("Velocidades dos pares, head_dim = 32");
  tut::texto(
      "O par 0 gira rápido (1 rad por posição); o último, devagar: cada par mede distâncias numa escala.");
  for (int i : {0, 1, 2, 4, 8, 15}) {
    const double theta = std::pow(10000.0, -2.0 * i / 32.0);
    std::printf("par %2d: %.6f rad por posição, volta completa a cada %.1f posições\n", i, theta,
                2 * M_PI / theta);
  }

  tut::secao("O start: a posição absoluta de um pedaço");
  tut::texto(
      "Com cache (capítulo 29) entra só o token novo, e rope recebe start = sua\n"
      "posição. Girar a sequência inteira e pegar a posição 3 dá o mesmo que girar só ela com start = 3:");
  Tensor seq =
      Tensor::from_vector({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, {1, 4, 1, 4});
  tut::linha("rope(seq)[3]", reshape(slice(rope(seq, 0), 1, 3, 4), {4}).value());
  tut::linha("rope(seq[3], start = 3)", reshape(rope(slice(seq, 1, 3, 4), 3), {4}).value());

  tut::experimente({
      "na seção 'O start', use a base 100 nas duas chamadas (rope(seq, 0, 100) e rope(..., 3, 100)): o par 1 gira 0.1 rad por posição em vez de 0.01, os números mudam e a igualdade continua (o par 0 gira sempre 1 rad: base^0 = 1);",
      "confira à mão a posição 2: [cos 2, sin 2] = [-0.416147, 0.909297];",
      "aplique rope só em k (não em q): como na seção 'E se só q girar?', o produto passa a depender da posição absoluta de k, e a mesma distância deixa de dar o mesmo número.",
  });

  tut::respostas();
  const Tensor inteira_100 = reshape(slice(rope(seq, 0, 100), 1, 3, 4), {4});
  const Tensor so_ela_100 = reshape(rope(slice(seq, 1, 3, 4), 3, 100), {4});
  tut::linha("1) base 100: rope(seq)[3]", inteira_100.value());
  tut::linha("1) base 100: rope(seq[3], start = 3)", so_ela_100.value());
  double diferenca = 0;
  for (std::size_t i = 0; i < 4; ++i)
    diferenca =
        std::max(diferenca, double(std::fabs(inteira_100.value()(i) - so_ela_100.value()(i))));
  std::printf("1) diferença máxima: %.6f\n", diferenca);
  tut::linha("2) posição 2 pelo rope", reshape(slice(girado, 1, 2, 3), {2}).value());
  std::printf("2) [cos 2, sin 2] à mão: %.6f %.6f\n", std::cos(2.0), std::sin(2.0));
  for (auto [m, n] : {std::pair<int, int>{2, 0}, {5, 3}, {12, 10}}) {
    const Scalar produto = sum(q * na_posicao(k, n)).item();
    std::printf("3) só k girado, q na posição %2d, k na %2d (a distância %d): q·k = %.6f\n", m, n,
                m - n, produto);
  }
  tut::texto(
      "1) Os números mudam com a base, a igualdade fica: o start não depende da base.\n"
      "2) É o que o rope dá na posição 2.\n"
      "3) q parado, k girado: três distâncias iguais, três produtos diferentes.");
  return 0;
}
