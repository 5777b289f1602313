// Capítulo 11 — Embeddings: de id para vetor.
#include <xtensor/xview.hpp>

#include "autograd/ops.hpp"
#include "common.hpp"

using namespace glass;

int main() {
  tut::capitulo(11, "Embeddings");
  tut::novo("a tabela de embeddings: cada id escolhe uma linha aprendível.");
  tut::texto(
      "Um id (por exemplo 3) não diz nada por si: 3 não é 'maior' que 2. Então cada id\n"
      "ganha um vetor de d_model números, guardado na linha id de uma tabela\n"
      "(vocab_size, d_model). Consultar a tabela é só copiar linhas; o treino ajusta as\n"
      "linhas para que caracteres parecidos fiquem com vetores parecidos.");

  Rng rng(10);
  const std::size_t vocab_size = 5, d_model = 3;
  Tensor tabela = Tensor::randn({vocab_size, d_model}, 1.0, rng, true);
  tut::matriz("tabela", tabela.value(), 3);

  tut::secao("Consultar: ids (B, T) -> vetores (B, T, d_model)");
  Ids ids = {{1, 3, 3}, {0, 4, 1}};  // B = 2 sequências, T = 3 posições
  Tensor x = embedding(tabela, ids);
  std::printf("forma dos ids: %s\n", shape_str(shape_of(ids)).c_str());
  tut::forma("forma da saída", x.value());
  tut::matriz("saída da sequência 0", reshape(slice(x, 0, 0, 1), {3, d_model}).value(), 3);
  tut::texto("As linhas 1 e 2 da saída são iguais: o id 3 apareceu duas vezes.");

  tut::secao("É o mesmo que one-hot @ tabela");
  Tensor one_hot = Tensor::from_vector({0, 1, 0, 0, 0,  //
                                        0, 0, 0, 1, 0,  //
                                        0, 0, 0, 1, 0},
                                       {3, vocab_size});
  tut::matriz("one_hot @ tabela", matmul(one_hot, tabela).value(), 3);
  tut::texto("Mesmo resultado, mas sem multiplicar por um monte de zeros.");

  tut::secao("O gradiente só chega às linhas usadas");
  tut::texto("L = soma(saída). Cada uso de uma linha devolve 1 a cada número dela:");
  Tensor L = sum(x);
  L.backward();
  tut::matriz("grad tabela", tabela.grad(), 1);
  tut::texto(
      "Linha 1: usada 2 vezes -> 2. Linha 3: 2 vezes -> 2. Linhas 0 e 4: uma vez.\n"
      "Linha 2: nunca usada -> 0. É a acumulação do capítulo 04 outra vez.");

  tut::secao("Id fora da tabela");
  try {
    Ids ruim = {7};
    embedding(tabela, ruim);
  } catch (const std::exception& e) {
    std::printf("erro: %s\n", e.what());
  }

  tut::experimente({
      "mude d_model para 8 e veja a forma (2, 3, 8);",
      "use L = soma(saída * saída): agora o gradiente da linha r é 2 · (número de usos de r) · tabela[r]; a linha 1, usada 2 vezes, recebe 4 · tabela[1];",
      "no modelo padrão a tabela é (vocab_size, 128): quantos parâmetros para 83 caracteres?",
  });
  tut::respostas();
  {
    Rng rng8(11);
    Tensor tabela8 = Tensor::randn({5, 8}, 1.0, rng8);
    tut::forma("saída com d_model = 8", embedding(tabela8, ids).value());
    tabela.zero_grad();
    Tensor saida2 = embedding(tabela, ids);
    sum(saida2 * saida2).backward();
    const Array esperado = Scalar(4) * xt::view(tabela.value(), 1, xt::all());
    const Array grad_linha1 = xt::view(tabela.grad(), 1, xt::all());
    tut::linha("grad tabela[1] com L = soma(saída²)", grad_linha1);
    tut::linha("4 · tabela[1]", esperado);
    std::printf("parâmetros da tabela para 83 caracteres: 83 * 128 = %d\n", 83 * 128);
  }
  return 0;
}
