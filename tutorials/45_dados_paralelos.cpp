// Capítulo 45 — Dados paralelos: a média dos gradientes de meio lote é o gradiente do lote.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include "autograd/ops.hpp"
#include "common.hpp"
#include "nn/decoder.hpp"

using namespace glass;

// O gradiente de W da perda média das linhas [de, ate) do lote: logits = x W^T, entropia
// cruzada com y. Devolve dW; a perda vai para *perda.
static Array gradiente_de_W(const Array& W0, const Array& x, const Ids& y, std::size_t de,
                            std::size_t ate, double* perda) {
  Tensor W(W0, /*requires_grad=*/true);
  const Tensor linhas(Array(xt::view(x, xt::range(de, ate), xt::all())));
  const Ids alvos = xt::view(y, xt::range(de, ate));
  Tensor l = cross_entropy(linear(linhas, W), alvos);  // média sobre ate - de exemplos
  l.backward();
  *perda = l.item();
  return W.grad();
}

static double maior_diferenca(const Array& a, const Array& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    m = std::max(m, static_cast<double>(std::abs(a.data()[i] - b.data()[i])));
  return m;
}

int main() {
  tut::capitulo(45, "Dados paralelos: vários processos, um lote");
  tut::novo(
      "treinar com N processos (mpirun -np N glass train): cada um faz 1/N do lote, e a média\n"
      "dos gradientes deles é o gradiente do lote inteiro.");
  tut::texto(
      "A perda de um lote é a MÉDIA das perdas dos seus exemplos, e a derivada de uma média é a\n"
      "média das derivadas. Corte o lote em duas metades iguais: o gradiente da perda média de\n"
      "cada metade é a média das derivadas dos seus exemplos, e a média desses dois gradientes\n"
      "é a média sobre todos os exemplos, ou seja, o gradiente do lote inteiro. Então dois\n"
      "processos podem calcular uma metade cada um, ao mesmo tempo, trocar os gradientes,\n"
      "tirar a média e dar o MESMO passo do AdamW: continuam com os mesmos pesos, e aprendem\n"
      "o que um processo sozinho aprenderia com o lote inteiro.");

  // ---- 1. Um modelo linear: 2 entradas, 3 classes, um lote de 4 exemplos -------------------
  tut::secao("Um lote, duas metades");
  const Array W0 = {{0.5, -0.2}, {0.1, 0.3}, {-0.4, 0.6}};             // (3 classes, 2 entradas)
  const Array x = {{1.0, 2.0}, {0.5, -1.0}, {-1.5, 0.5}, {2.0, 1.0}};  // (B = 4, 2)
  const Ids y = {0, 2, 1, 1};  // a classe certa de cada linha
  tut::texto("logits = x W^T, perda = entropia cruzada média. W (3, 2) e o lote x (4, 2):");
  tut::matriz("W", W0);
  tut::matriz("x", x);
  double perda_todo = 0, perda_a = 0, perda_b = 0;
  const Array g_todo = gradiente_de_W(W0, x, y, 0, 4, &perda_todo);  // o lote inteiro
  const Array g_a = gradiente_de_W(W0, x, y, 0, 2, &perda_a);        // processo 0: linhas 0 e 1
  const Array g_b = gradiente_de_W(W0, x, y, 2, 4, &perda_b);        // processo 1: linhas 2 e 3
  const Array g_media = (g_a + g_b) / 2;
  tut::linha("perda do lote", std::vector<double>{perda_todo});
  tut::linha("perdas das metades", std::vector<double>{perda_a, perda_b});
  tut::linha("média das perdas", std::vector<double>{(perda_a + perda_b) / 2});
  tut::matriz("dW do lote", g_todo);
  tut::matriz("dW metade 0", g_a);
  tut::matriz("dW metade 1", g_b);
  tut::matriz("dW média das metades", g_media);
  std::printf("maior diferença |média - lote|: %.2e (só arredondamento de float)\n",
              maior_diferenca(g_media, g_todo));

  // ---- 2. Metades desiguais: a média simples erra --------------------------------------------
  tut::secao("Pedaços desiguais");
  tut::texto(
      "A média das médias só é a média de tudo quando os pedaços têm o mesmo tamanho. Com 1\n"
      "exemplo num processo e 3 no outro, a média simples dá peso demais ao exemplo sozinho;\n"
      "o certo seria pesar por tamanho (1/4 e 3/4). Por isso `glass train` exige um\n"
      "--batch-size divisível pelo número de processos: cada um faz B/N janelas.");
  double p1 = 0, p3 = 0;
  const Array g_1 = gradiente_de_W(W0, x, y, 0, 1, &p1);
  const Array g_3 = gradiente_de_W(W0, x, y, 1, 4, &p3);
  std::printf("maior diferença, média simples (g1 + g3) / 2: %.6f\n",
              maior_diferenca((g_1 + g_3) / 2, g_todo));
  std::printf("maior diferença, média pesada (1 g1 + 3 g3) / 4: %.6f\n",
              maior_diferenca((g_1 + 3 * g_3) / 4, g_todo));

  // ---- 3. O decoder inteiro ------------------------------------------------------------------
  tut::secao("No decoder de verdade");
  ModelConfig cfg;
  cfg.vocab_size = 12;
  cfg.d_model = 16;
  cfg.n_layers = 2;
  cfg.n_heads = 2;
  cfg.n_kv_heads = 1;
  cfg.ffn_hidden = 32;
  cfg.context_length = 8;
  cfg.ops_path = OpsPath::reference;
  Decoder modelo(cfg, /*seed=*/30);
  // 4 janelas de 6 caracteres (ids) e os alvos: cada janela deslocada de um.
  const Ids jx = {{1, 2, 3, 4, 5, 6}, {7, 8, 9, 10, 11, 1}, {3, 1, 4, 1, 5, 9}, {2, 6, 5, 3, 5, 8}};
  const Ids jy = {{2, 3, 4, 5, 6, 7}, {8, 9, 10, 11, 1, 2}, {1, 4, 1, 5, 9, 2}, {6, 5, 3, 5, 8, 9}};
  auto gradientes = [&](std::size_t de, std::size_t ate, double* perda) {
    for (Tensor& p : modelo.parameters()) p.zero_grad();
    const Ids xs = xt::view(jx, xt::range(de, ate), xt::all());
    const Ids ys = xt::view(jy, xt::range(de, ate), xt::all());
    Tensor l = cross_entropy(modelo.forward(xs), ys);
    l.backward();
    *perda = l.item();
    std::vector<Array> g;
    for (const Tensor& p : modelo.parameters()) g.push_back(p.grad());
    return g;
  };
  double q_todo = 0, q_a = 0, q_b = 0;
  const std::vector<Array> d_todo = gradientes(0, 4, &q_todo);
  const std::vector<Array> d_a = gradientes(0, 2, &q_a);
  const std::vector<Array> d_b = gradientes(2, 4, &q_b);
  double pior =
      0;  // a maior diferença relativa entre a média das metades e o lote, tensor a tensor
  for (std::size_t i = 0; i < d_todo.size(); ++i) {
    const double escala = std::max(1e-30, static_cast<double>(xt::amax(xt::abs(d_todo[i]))()));
    pior = std::max(pior, maior_diferenca((d_a[i] + d_b[i]) / 2, d_todo[i]) / escala);
  }
  std::printf("parâmetros: %zu em %zu tensores\n", modelo.num_parameters(), d_todo.size());
  tut::linha("perda do lote, média das metades", std::vector<double>{q_todo, (q_a + q_b) / 2});
  std::printf("maior diferença relativa dos gradientes: %.1e\n", pior);
  tut::texto(
      "Os mesmos gradientes, a menos da ordem das somas em float. `glass train` junta todos\n"
      "os gradientes (e a perda) num só vetor e faz UMA soma entre os processos por passo\n"
      "(train/distributed.cpp, average_gradients), depois divide por N.");

  // ---- 4. mpirun --------------------------------------------------------------------------------
  tut::secao("Com mpirun");
  tut::texto(
      "MPI (Message Passing Interface) é o padrão de programas com vários processos que\n"
      "conversam; o OpenMPI é uma implementação (Debian: openmpi-bin, libopenmpi-dev). O\n"
      "comando\n"
      "    mpirun -np 2 ./build/glass train --batch-size 16 --threads 1\n"
      "começa 2 cópias do glass. Cada uma sabe seu número (rank 0 ou 1) e quantas são (2):\n"
      "  - as duas sorteiam o MESMO lote de 16 janelas (mesma semente) e cada uma fica com\n"
      "    8: o rank 0 com as janelas 0-7, o rank 1 com as 8-15;\n"
      "  - forward e backward na sua metade; então MPI_Allreduce soma os gradientes das duas\n"
      "    (cada uma recebe a soma) e cada uma divide por 2: o gradiente do lote de 16;\n"
      "  - clipping e AdamW iguais nas duas: os pesos continuam iguais (glass confere isso a\n"
      "    cada avaliação, com uma soma de verificação dos pesos);\n"
      "  - só o rank 0 escreve: progresso, amostras, log.csv e checkpoints.\n"
      "Em várias máquinas, um arquivo de hosts diz quantos processos vão em cada uma:\n"
      "    mpirun --hostfile maquinas.txt -np 8 ./build/glass train --batch-size 64\n"
      "(o texto e o diretório do treino no mesmo caminho em todas). docs/treino.md conta o resto.");

  tut::experimente({
      "mude a divisão da seção 1 para 3 + 1 linhas e confira a média pesada",
      "rode `mpirun -np 2 --oversubscribe ./build/glass train --iters 80 --batch-size 16` e o mesmo sem mpirun: compare o log.csv",
      "rode com --batch-size 15 e -np 2: leia a mensagem",
  });
  tut::respostas();
  {
    // A divisão 3 + 1 com as janelas da seção 3: a média simples erra, a pesada (3 e 1) acerta.
    double q3 = 0, q1 = 0;
    const std::vector<Array> d3 = gradientes(0, 3, &q3);
    const std::vector<Array> d1 = gradientes(3, 4, &q1);
    double simples = 0, pesada = 0;
    for (std::size_t i = 0; i < d_todo.size(); ++i) {
      const double escala = std::max(1e-30, static_cast<double>(xt::amax(xt::abs(d_todo[i]))()));
      simples = std::max(simples, maior_diferenca((d3[i] + d1[i]) / 2, d_todo[i]) / escala);
      pesada = std::max(pesada, maior_diferenca((3 * d3[i] + d1[i]) / 4, d_todo[i]) / escala);
    }
    std::printf(
        "3 + 1 janelas: diferença relativa da média simples %.2f, da média pesada (3 e 1) %.1e\n",
        simples, pesada);
    tut::texto(
        "  (mpirun e a mensagem de --batch-size 15 com -np 2 são conferidos pelo teste\n"
        "  tests/cli/train_mpi_test.cpp, que roda glass train com mpirun quando o build tem\n"
        "  MPI: dois processos aprendem o mesmo que um com o mesmo lote, e um lote que não se\n"
        "  divide entre os processos é recusado com uma mensagem que diz por quê)");
  }
  return 0;
}
