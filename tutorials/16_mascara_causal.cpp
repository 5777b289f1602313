// Capítulo 16 — A máscara causal com cache (start > 0).
#include <cmath>
#include <limits>

#include "autograd/ops.hpp"
#include "common.hpp"

using namespace glass;

static Array como_numeros(const Mask& mascara) {
  Array a(shape_of(mascara));
  for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = mascara.data()[i] ? 1 : 0;
  return a;
}

// Scaled causal attention of n new queries against all m keys, `start` positions cached.
static Tensor atencao(const Tensor& q, const Tensor& k, const Tensor& v, std::size_t start,
                      Tensor* pesos_saida = nullptr) {
  const std::size_t n = q.shape()[0], m = k.shape()[0];
  Tensor notas = matmul(q, transpose(k, 0, 1)) / std::sqrt(Scalar(q.shape()[1]));
  Tensor pesos = softmax(
      masked_fill(notas, causal_mask(n, m, start), -std::numeric_limits<Scalar>::infinity()));
  if (pesos_saida) *pesos_saida = pesos;
  return matmul(pesos, v);
}

int main() {
  tut::capitulo(16, "A máscara causal com cache (start > 0)");
  tut::novo("consultas novas contra chaves antigas: causal_mask(n, m, start) com m = start + n.");
  tut::texto(
      "Na geração, o texto cresce um caractere por vez. As chaves e valores das posições\n"
      "já processadas não mudam, então ficam guardados num cache (capítulo 29). A cada\n"
      "passo entram só n consultas novas, nas posições start .. start+n-1, e elas são\n"
      "comparadas com todas as m = start + n chaves. A regra da máscara continua a\n"
      "mesma, mas em posições absolutas: a consulta i (posição start+i) não pode ver a\n"
      "chave j quando j > start + i. Sem cache, start = 0 e m = n.");

  // O exemplo do triângulo (capítulo 15, docs/atencao.md).
  Tensor Q = Tensor::from_vector({1, 0, 1, 1, 0, 1}, {3, 2});
  Tensor K = Q;
  Tensor V = Tensor::from_vector({2, 0, 0, 2, 2, 2}, {3, 2});

  tut::secao("Tudo de uma vez: n = 3, m = 3, start = 0");
  Tensor pesos;
  Tensor saida = atencao(Q, K, V, 0, &pesos);
  tut::matriz("máscara (3, 3, 0)", como_numeros(causal_mask(3, 3, 0)), 0);
  tut::matriz("pesos sem cache", pesos.value());
  tut::matriz("saída sem cache", saida.value());

  tut::secao("Em dois pedaços: primeiro as posições 0 e 1 ...");
  Tensor k_cache = slice(K, 0, 0, 2), v_cache = slice(V, 0, 0, 2);
  Tensor saida01 = atencao(slice(Q, 0, 0, 2), k_cache, v_cache, 0);
  tut::matriz("saída das posições 0 e 1", saida01.value());

  tut::secao("... depois a posição 2 sozinha: n = 1, start = 2, m = 3");
  Tensor q2 = slice(Q, 0, 2, 3);
  Tensor k_todas = concat({k_cache, slice(K, 0, 2, 3)}, 0);  // o cache ganha a chave nova
  Tensor v_todas = concat({v_cache, slice(V, 0, 2, 3)}, 0);
  tut::matriz("máscara (1, 3, 2)", como_numeros(causal_mask(1, 3, 2)), 0);
  Tensor saida2 = atencao(q2, k_todas, v_todas, 2, &pesos);
  tut::linha("pesos da posição 2 com cache", pesos.value());
  tut::linha("saída da posição 2 com cache", saida2.value());
  tut::texto("Os mesmos números da última linha do triângulo: o cache não muda a conta.");

  tut::secao("O erro clássico: esquecer o start");
  tut::texto(
      "Com causal_mask(1, 3, 0), a única consulta seria tratada como posição 0 e só\n"
      "poderia ver a chave 0, como se o texto anterior não existisse:");
  atencao(q2, k_todas, v_todas, 0, &pesos);
  tut::linha("pesos com start errado", pesos.value());

  tut::secao("Um pedaço do meio: n = 2 consultas novas, start = 1, m = 3");
  tut::matriz("máscara (2, 3, 1)", como_numeros(causal_mask(2, 3, 1)), 0);
  atencao(slice(Q, 0, 1, 3), K, V, 1, &pesos);
  tut::matriz("pesos das posições 1 e 2", pesos.value());
  tut::texto(
      "São as linhas 1 e 2 do triângulo: a máscara é o triângulo deslocado de start colunas.");

  tut::secao("No código do modelo");
  tut::texto(
      "Em Attention::forward_reference (nn/attention.cpp), o passo 3 lê as chaves e os\n"
      "valores das posições 0 .. start-1 do cache da própria camada (LayerKVCache, em\n"
      "nn/kv_cache.cpp), guarda os novos e junta tudo com concat; o passo 6 usa\n"
      "causal_mask(n, m, start) com m = start + n, exatamente como acima.");

  tut::experimente({
      "processe as posições uma por uma (start = 0, 1, 2) e confira cada linha do triângulo;",
      "imprima causal_mask(2, 5, 3): a consulta 0 (posição 3) vê 4 chaves, a consulta 1 (posição 4) vê as 5;",
      "com start = m não há consulta nova (n = 0): causal_mask(0, m, m) é uma máscara vazia, de forma (0, m).",
  });
  tut::respostas();
  {
    for (std::size_t p = 0; p < 3; ++p) {
      Tensor pesos_p;
      atencao(slice(Q, 0, p, p + 1), slice(K, 0, 0, p + 1), slice(V, 0, 0, p + 1), p, &pesos_p);
      tut::linha("uma por uma, start = " + std::to_string(p) + ", pesos", pesos_p.value());
    }
    std::printf("  (as três linhas do triângulo, uma por vez)\n");
    tut::matriz("causal_mask(2, 5, 3)", como_numeros(causal_mask(2, 5, 3)), 0);
    std::printf("  (0 = pode ver: a consulta 0 vê 4 chaves, a consulta 1 vê as 5)\n");
    std::printf("causal_mask(0, 3, 3): forma %s\n",
                shape_str(shape_of(causal_mask(0, 3, 3))).c_str());
  }
  return 0;
}
