// Capítulo 16 — A máscara causal: o futuro não vaza.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include <xtensor/xview.hpp>

#include "autograd/ops.hpp"
#include "common.hpp"

using namespace glass;

static Array como_numeros(const Mask& mascara) {
  Array a(shape_of(mascara));
  for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = mascara.data()[i] ? 1 : 0;
  return a;
}

static const Scalar menos_infinito = -std::numeric_limits<Scalar>::infinity();

// Atenção com escala 1/√d de q (n, d) sobre k e v (n, ...); `preenchimento` é o valor posto nas
// notas proibidas pela máscara causal (sem máscara quando `com_mascara` é falso).
static Tensor atencao(const Tensor& q, const Tensor& k, const Tensor& v, bool com_mascara = true,
                      Scalar preenchimento = menos_infinito, Tensor* pesos_saida = nullptr) {
  const std::size_t n = q.shape()[0];
  Tensor notas = matmul(q, transpose(k, 0, 1)) / std::sqrt(Scalar(q.shape()[1]));
  if (com_mascara) notas = masked_fill(notas, causal_mask(n, n), preenchimento);
  Tensor pesos = softmax(notas);
  if (pesos_saida) *pesos_saida = pesos;
  return matmul(pesos, v);
}

static double diferenca_maxima(const Array& a, const Array& b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    d = std::max(d, double(std::fabs(a.data()[i] - b.data()[i])));
  return d;
}

int main() {
  tut::capitulo(16, "A máscara causal: o futuro não vaza");
  tut::novo(
      "por que a máscara põe -inf nas notas; a prova de que o futuro não vaza (mudá-lo não\n"
      "muda o passado, e o gradiente não volta para ele); n previsões por janela num passo só.");
  tut::texto(
      "O capítulo 15 montou a atenção causal: a posição i só pode olhar para as posições\n"
      "j <= i. Um modelo de linguagem aprende a prever o caractere seguinte; se a posição i\n"
      "visse a i+1, ela leria a resposta, e o modelo aprenderia a copiar em vez de prever.\n"
      "Este capítulo olha a máscara de perto: como ela é feita, por que ela funciona e o que\n"
      "ela permite (treinar todas as posições de uma janela de uma vez).");

  tut::secao("A regra: causal_mask(n, n)");
  const Mask m5 = causal_mask(5, 5);
  tut::matriz("causal_mask(5, 5)", como_numeros(m5), 0);
  std::size_t visiveis = 0;
  for (std::size_t i = 0; i < m5.size(); ++i) visiveis += m5.data()[i] ? 0 : 1;
  std::printf("posições visíveis: %zu de %zu (n(n+1)/2 = 15)\n", visiveis, m5.size());
  tut::texto(
      "1 marca o proibido: a linha i (a consulta) tem 1 nas colunas j > i (as chaves do\n"
      "futuro). Sobra o triângulo de baixo, com a diagonal: cada posição vê a si mesma e o\n"
      "passado.");

  // O exemplo do triângulo (capítulo 15, docs/atencao.md).
  Tensor Q = Tensor::from_vector({1, 0, 1, 1, 0, 1}, {3, 2});
  Tensor K = Q;
  Tensor V = Tensor::from_vector({2, 0, 0, 2, 2, 2}, {3, 2});
  Tensor pesos;
  Tensor saida = atencao(Q, K, V, true, menos_infinito, &pesos);
  tut::secao("O triângulo do capítulo 15, de novo");
  tut::matriz("pesos", pesos.value());
  tut::matriz("saída", saida.value());

  tut::secao("Por que -inf nas notas, e não 0 nos pesos");
  tut::texto(
      "A máscara entra ANTES do softmax: as notas proibidas viram -inf, e exp(-inf) = 0. O\n"
      "peso proibido sai exatamente 0 e os outros ainda somam 1. Dois jeitos que parecem\n"
      "iguais e erram, na posição 0 (notas 0.7071, 0.7071, 0):");
  Tensor pesos_zero;
  atencao(Q, K, V, true, Scalar(0), &pesos_zero);
  tut::linha("pesos da posição 0 com 0 no lugar de -inf", Array(xt::view(pesos_zero.value(), 0)));
  Tensor pesos_livres;
  atencao(Q, K, V, false, menos_infinito, &pesos_livres);
  Array zerados = xt::view(pesos_livres.value(), 0);
  zerados(1) = zerados(2) = 0;
  tut::linha("pesos da posição 0 zerados depois do softmax", zerados);
  std::printf("soma desses pesos: %.6f\n", double(zerados(0) + zerados(1) + zerados(2)));
  tut::texto(
      "Com 0 nas notas, 0 é uma nota como outra qualquer: metade do peso vai para o futuro.\n"
      "Zerar depois do softmax tira o futuro, mas a linha não soma mais 1 (seria preciso\n"
      "dividir de novo). Com -inf, o softmax faz as duas coisas numa conta só.");

  tut::secao("A prova: mudar o futuro não muda o passado");
  // A posição 2 muda por completo: outra chave, outro valor.
  Tensor K_novo = Tensor::from_vector({1, 0, 1, 1, 5, -3}, {3, 2});
  Tensor V_novo = Tensor::from_vector({2, 0, 0, 2, 100, -100}, {3, 2});
  Tensor Q_novo = Tensor::from_vector({1, 0, 1, 1, 5, -3}, {3, 2});
  const Array com_a = saida.value();
  const Array com_b = atencao(Q_novo, K_novo, V_novo).value();
  const Array sem_a = atencao(Q, K, V, false).value();
  const Array sem_b = atencao(Q_novo, K_novo, V_novo, false).value();
  const auto duas_primeiras = [](const Array& a) { return Array(xt::view(a, xt::range(0, 2))); };
  std::printf("o caractere da posição 2 trocado (q, k e v dele): saída da posição 2 muda %.6f\n",
              diferenca_maxima(Array(xt::view(com_a, 2)), Array(xt::view(com_b, 2))));
  std::printf("diferença nas saídas das posições 0 e 1, com a máscara: %.6f\n",
              diferenca_maxima(duas_primeiras(com_a), duas_primeiras(com_b)));
  std::printf("posições 0 e 1 iguais bit a bit, com a máscara: %s\n",
              duas_primeiras(com_a) == duas_primeiras(com_b) ? "sim" : "não");
  std::printf("diferença nas saídas das posições 0 e 1, sem a máscara: %.6f\n",
              diferenca_maxima(duas_primeiras(sem_a), duas_primeiras(sem_b)));
  tut::texto(
      "Com a máscara, as posições 0 e 1 dão exatamente os mesmos números, bit a bit: o que\n"
      "vem depois delas não entra na conta. Sem a máscara, o futuro vaza para o passado.");

  tut::secao("O gradiente também não volta para o futuro");
  Tensor Vg = Tensor::from_vector({2, 0, 0, 2, 2, 2}, {3, 2}, true);
  Tensor Kg = Tensor::from_vector({1, 0, 1, 1, 0, 1}, {3, 2}, true);
  Tensor saida_g = atencao(Q, Kg, Vg);
  // A perda: o primeiro número da saída da posição 1.
  sum(slice(slice(saida_g, 0, 1, 2), 1, 0, 1)).backward();
  tut::matriz("grad V (perda só da posição 1)", Vg.grad(), 6);
  tut::matriz("grad K (perda só da posição 1)", Kg.grad(), 6);
  tut::texto(
      "A perda é o primeiro número da saída da posição 1. A linha 2 dos dois gradientes é\n"
      "zero: com peso 0 (exatamente), a posição 2 não mexe nessa perda, e o treino não a\n"
      "empurra por ela. Em grad V, a linha 0 é o peso 0.330238 da posição 0 e a linha 1, o\n"
      "peso 0.669762 (a derivada de peso · v em v é o peso), só na primeira coluna.");

  tut::secao("n previsões num passo só");
  tut::texto(
      "Por causa da máscara, a linha t da saída é a mesma que daria o texto cortado na\n"
      "posição t: rodar a janela inteira uma vez vale por rodar cada começo dela.");
  for (std::size_t t = 1; t <= 3; ++t) {
    const Array so_o_comeco =
        atencao(slice(Q, 0, 0, t), slice(K, 0, 0, t), slice(V, 0, 0, t)).value();
    tut::linha("só as posições 0.." + std::to_string(t - 1) + ", última saída",
               Array(xt::view(so_o_comeco, t - 1)));
  }
  tut::texto(
      "As três linhas da saída acima. No treino (capítulo 26), uma janela de T caracteres\n"
      "dá assim T exemplos de uma vez, cada posição prevendo o caractere seguinte só com o\n"
      "seu passado. Na geração, o mesmo fato deixa guardar as chaves e os valores do\n"
      "passado num cache e calcular só a posição nova (capítulo 29).");

  tut::secao("No código do modelo");
  tut::texto(
      "Em Attention::forward_reference (nn/attention.cpp), o passo 6 é\n"
      "  masked = masked_fill(scores, causal_mask(n, m, start), -inf);\n"
      "Sem cache, m = n e start = 0: a máscara deste capítulo. O start, para quando parte\n"
      "das chaves vem de um cache, é o capítulo 29.");

  tut::experimente({
      "troque -inf por -1e9 no preenchimento: os pesos mudam?",
      "quantas notas a máscara descarta com n = 5? e com as 256 posições do modelo padrão?",
  });
  tut::respostas();
  {
    Tensor pesos_1e9;
    atencao(Q, K, V, true, Scalar(-1e9), &pesos_1e9);
    std::printf("1. diferença máxima nos pesos, -1e9 contra -inf: %.6f\n",
                diferenca_maxima(pesos_1e9.value(), pesos.value()));
    tut::texto(
        "   Nenhuma: exp(-1e9 - máximo) já é 0 em float. Mas um número finito só serve se\n"
        "   for bem menor que qualquer nota, e em float16 (docs/precisao-mista.md), cujo maior\n"
        "   número é 65504, -1e9 nem cabe. -inf serve em qualquer formato; a biblioteca usa\n"
        "   -inf. (Uma linha inteira de -inf daria 0/0 = NaN no softmax; a máscara causal\n"
        "   nunca esconde a diagonal, a própria posição, então isso não acontece aqui.)");
  }
  {
    for (std::size_t n : {std::size_t{5}, std::size_t{256}}) {
      const Mask mm = causal_mask(n, n);
      std::size_t proibidas = 0;
      for (std::size_t i = 0; i < mm.size(); ++i) proibidas += mm.data()[i] ? 1 : 0;
      std::printf("2. n = %zu: %zu de %zu notas descartadas (n(n-1)/2)\n", n, proibidas, n * n);
    }
    tut::texto(
        "   Quase metade das notas calculadas vai para o lixo. O caminho rápido da biblioteca\n"
        "   (autograd/kernels/causal_attention.cpp) anda por blocos de 32 consultas e só\n"
        "   calcula as chaves até a última posição do bloco: 56 % das notas, com 256 posições.");
  }
  return 0;
}
