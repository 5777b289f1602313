// Capítulo 15 — Atenção: os três passos e a máscara causal.
//
// The worked example with tokens 'a' and 'b' and the triangle of docs/atencao.md (3 positions,
// head dim 2), computed with the library's ops, and where the same steps sit in the model.
#include <cmath>
#include <limits>

#include "autograd/ops.hpp"
#include "common.hpp"
#include "gradcheck_da_biblioteca.hpp"

using namespace glass;

// The mask as 0/1 numbers, for printing.
static Array como_numeros(const Mask& mascara) {
  Array a(shape_of(mascara));
  for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = mascara.data()[i] ? 1 : 0;
  return a;
}

int main() {
  tut::capitulo(15, "Atenção: os três passos");
  tut::novo("a atenção: notas (Q·K), pesos (softmax) e mistura dos valores (V); a máscara causal.");
  tut::texto(
      "Exemplo minúsculo: 2 tokens, 'a' e 'b', vetores de tamanho 2. Q, K e V já\n"
      "saíram das projeções do capítulo 14:\n"
      "  'a':  Q = [2, 0]   K = [1, 0]   V = [10,  0]\n"
      "  'b':  Q = [0, 2]   K = [0, 1]   V = [ 0, 10]");
  Tensor Q = Tensor::from_vector({2, 0, 0, 2}, {2, 2});
  Tensor K = Tensor::from_vector({1, 0, 0, 1}, {2, 2});
  Tensor V = Tensor::from_vector({10, 0, 0, 10}, {2, 2});

  tut::secao("Passo 1 — quanto cada chave combina com a consulta (produto escalar)");
  tut::texto(
      "Multiplica coordenada por coordenada e soma. Para a consulta de 'a':\n"
      "  'a' com 'a': [2,0]·[1,0] = 2\n"
      "  'a' com 'b': [2,0]·[0,1] = 0\n"
      "Todas as notas de uma vez: Q Kᵀ (linha i = consulta i, coluna j = chave j).");
  Tensor notas = matmul(Q, transpose(K, 0, 1));
  tut::matriz("notas", notas.value());
  tut::linha("notas de a", slice(notas, 0, 0, 1).value());

  tut::secao("Passo 2 — notas viram pesos que somam 1 (softmax)");
  std::printf("e^2 = %.6f   e^0 = 1   total = %.6f\n", std::exp(2.0), std::exp(2.0) + 1);
  Tensor pesos = softmax(notas);
  tut::linha("pesos de a", slice(pesos, 0, 0, 1).value());
  tut::texto("'a' dá 88% da atenção a si mesmo e 12% a 'b'. Cada linha soma 1.");

  tut::secao("Passo 3 — misturar os valores com esses pesos");
  tut::texto("0.88 × [10, 0] + 0.12 × [0, 10] = [8.8, 1.2]: quase só 'a', com um pouco de 'b'.");
  Tensor saida = matmul(pesos, V);
  tut::linha("saída de a", slice(saida, 0, 0, 1).value());
  tut::matriz("saída", saida.value());

  tut::secao("O ajuste de escala: dividir as notas por √d");
  tut::texto(
      "Na prática as notas são divididas por √(tamanho do vetor) antes do softmax\n"
      "(aqui √2). Com coordenadas independentes de média 0 e variância 1, o produto\n"
      "escalar tem variância d; a divisão a traz de volta para 1 e o softmax não satura.\n"
      "As notas que entram no softmax também se chamam logits.");
  const Scalar escala = Scalar(1) / std::sqrt(Scalar(2));
  Tensor notas_escaladas = notas * escala;
  Tensor pesos_escalados = softmax(notas_escaladas);
  tut::linha("notas escaladas de a", slice(notas_escaladas, 0, 0, 1).value());
  tut::linha("pesos escalados de a", slice(pesos_escalados, 0, 0, 1).value());
  tut::linha("saída escalada de a", slice(matmul(pesos_escalados, V), 0, 0, 1).value());
  tut::texto("Mais morno: 80% / 20% em vez de 88% / 12%.");

  tut::secao("A máscara causal: só o passado");
  tut::texto(
      "O modelo gera um caractere por vez. No treino, a posição i tem que prever o\n"
      "caractere i+1 vendo só as posições 0..i; se visse o futuro, copiaria a resposta.\n"
      "Antes do softmax, as notas do futuro viram -∞. Como e^(-∞) = 0, o peso delas\n"
      "é zero. causal_mask(n, m) marca com 1 (verdadeiro) as posições proibidas: j > i.");
  const Scalar menos_infinito = -std::numeric_limits<Scalar>::infinity();
  const Mask mascara = causal_mask(2, 2);
  tut::matriz("máscara", como_numeros(mascara), 0);
  Tensor mascaradas = masked_fill(notas, mascara, menos_infinito);
  tut::matriz("notas com máscara", mascaradas.value());
  Tensor pesos_causais = softmax(mascaradas);
  tut::matriz("pesos causais", pesos_causais.value());
  tut::matriz("saída causal", matmul(pesos_causais, V).value());
  tut::texto(
      "'a' agora só enxerga a si mesmo: peso 1, saída = o próprio V de 'a'.\n"
      "'b' enxerga os dois: 0.12 para 'a' e 0.88 para si mesmo.");

  tut::secao("O triângulo: 3 posições, dimensão 2, com escala (página docs/atencao.md)");
  tut::texto("Q = K = [[1,0],[1,1],[0,1]],  V = [[2,0],[0,2],[2,2]],  notas = Q Kᵀ / √2.");
  Tensor Q3 = Tensor::from_vector({1, 0, 1, 1, 0, 1}, {3, 2});
  Tensor V3 = Tensor::from_vector({2, 0, 0, 2, 2, 2}, {3, 2});
  Tensor notas3 = matmul(Q3, transpose(Q3, 0, 1)) * escala;
  Tensor pesos3 = softmax(masked_fill(notas3, causal_mask(3, 3), menos_infinito));
  tut::matriz("triângulo de pesos", pesos3.value());
  tut::matriz("triângulo de saídas", matmul(pesos3, V3).value());
  tut::texto(
      "Acima da diagonal, tudo zero: um triângulo. A posição 0 só vê a si mesma; a 1\n"
      "mistura as duas primeiras linhas de V; a 2 usa o prefixo inteiro.");

  tut::secao("No código do modelo");
  tut::texto(
      "Estas são as linhas dos passos 5 a 8 de Attention::forward_reference, em\n"
      "nn/attention.cpp (q, k, v já com uma matriz por cabeça):\n"
      "  scores  = matmul(q, transpose(k, -2, -1)) / sqrt(head_dim);    // 5. Q Kᵀ / √dₖ\n"
      "  masked  = masked_fill(scores, causal_mask(n, m, start), -inf);  // 6. máscara causal\n"
      "  weights = softmax(masked);                                      // 7. softmax\n"
      "  mix     = matmul(weights, v);                                   // 8. mistura com V\n"
      "O teste tests/nn/attention_paths_f64_test.cpp passa este mesmo triângulo pelo\n"
      "módulo Attention do modelo e confere os pesos e as saídas com 6 casas.");

  tut::secao("A verificação de gradientes (capítulo 07) da atenção com máscara");
  tut::texto(
      "A máscara (masked_fill), a softmax (também com linhas mascaradas) e a atenção causal\n"
      "inteira (as notas, a máscara, os pesos, a média) passam pelo juiz do capítulo 07:\n"
      "(em double: o programa é float, mas o juiz roda nas bibliotecas em double, como o\n"
      "comando glass gradcheck --op masked_fill)");
  tut::gradcheck_da_biblioteca("masked_fill");
  tut::gradcheck_da_biblioteca("softmax");
  tut::gradcheck_da_biblioteca("causal_attention");

  tut::experimente({
      "troque o Q de 'a' por [4, 0]: os pesos ficam mais concentrados (0.982, 0.018);",
      "troque o Q de 'a' por [0, 0]: notas iguais, pesos meio a meio;",
      "tire a escala e refaça o triângulo: quais pesos mudam?",
  });
  tut::respostas();
  {
    for (const auto& [rotulo, qa] :
         {std::pair<const char*, std::vector<Scalar>>{"Q de a = [4, 0]", {4, 0}},
          {"Q de a = [0, 0]", {0, 0}}}) {
      Tensor q_a = Tensor::from_vector(qa, {1, 2});
      tut::linha(std::string("pesos de a com ") + rotulo,
                 softmax(matmul(q_a, transpose(K, 0, 1))).value());
    }
    Tensor pesos_sem_escala =
        softmax(masked_fill(matmul(Q3, transpose(Q3, 0, 1)), causal_mask(3, 3), menos_infinito));
    tut::matriz("triângulo de pesos sem escala", pesos_sem_escala.value());
    std::printf("  (a linha 0 não muda: só há um peso; as linhas 1 e 2 ficam mais concentradas)\n");
  }
  return 0;
}
