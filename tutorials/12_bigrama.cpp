// Capítulo 12 — Um modelo de bigramas treinado de ponta a ponta.
#include <cmath>
#include <map>
#include <random>

#include "autograd/ops.hpp"
#include "common.hpp"
#include "data/text.hpp"
#include "data/tokenizer.hpp"

using namespace glass;

int main() {
  tut::capitulo(12, "Um modelo de bigramas, treinado de ponta a ponta");
  tut::novo("o primeiro treino: texto -> ids -> logits -> perda -> gradiente -> ajuste, em laço.");
  tut::texto(
      "O modelo mais simples de linguagem: o próximo caractere depende só do atual.\n"
      "Os parâmetros são uma tabela W (V, V): a linha do caractere atual são os logits\n"
      "do próximo. Juntamos tudo o que vimos: tokenizador (10), embedding (11, aqui\n"
      "a 'embedding' já são os logits), entropia cruzada (09), backward (03) e o passo\n"
      "mais simples de otimização, a descida do gradiente:  W <- W - lr * grad W.");

  // Um pedaço do livro, para o capítulo rodar em segundos.
  const std::u32string livro = load_text(GLASS_SOURCE_DIR "/data/corpora/domcasmurro.txt");
  const std::u32string texto = livro.substr(0, 20000);
  const Tokenizer tok = Tokenizer::from_text(texto);
  const std::vector<std::int32_t> ids = tok.encode(texto);
  const std::size_t V = tok.vocab_size(), N = ids.size() - 1;
  std::printf("caracteres: %zu   vocabulário V: %zu   pares (atual, próximo): %zu\n", texto.size(),
              V, N);

  // Entradas e alvos: o alvo da posição t é o caractere t+1.
  Ids entradas(Shape{N}), alvos(Shape{N});
  for (std::size_t t = 0; t < N; ++t) {
    entradas(t) = ids[t];
    alvos(t) = ids[t + 1];
  }

  tut::secao("Treino: descida do gradiente com lr = 50, o lote é o texto inteiro");
  Tensor W = Tensor::zeros({V, V}, true);  // zeros: começa prevendo a distribuição uniforme
  std::printf("log(V): %.6f   (perda esperada no início, capítulo 09)\n", std::log(double(V)));
  const int passos = 150;
  const Scalar lr = 50;
  double perda_inicial = 0, perda_final = 0, perda_50 = 0;
  for (int passo = 0; passo <= passos; ++passo) {
    Tensor logits = embedding(W, entradas);       // (N, V)
    Tensor perda = cross_entropy(logits, alvos);  // escalar
    if (passo == 0) perda_inicial = perda.item();
    if (passo == 50) perda_50 = perda.item();
    perda_final = perda.item();
    if (passo % 25 == 0) std::printf("passo %3d: perda %.4f\n", passo, perda.item());
    if (passo == passos) {
      tape().clear();
      break;
    }
    W.zero_grad();
    perda.backward();
    W.value() -= lr * W.grad();  // o passo de otimização, à mão
  }
  std::printf("perda inicial: %.4f\n", perda_inicial);
  std::printf("perda final: %.4f\n", perda_final);

  tut::secao("Até onde dá para chegar? Contando pares");
  tut::texto(
      "Para bigramas existe resposta exata: a melhor tabela dá a cada par a sua\n"
      "frequência relativa, e a perda mínima é a entropia condicional dos pares.");
  std::vector<double> contagem(V * V, 0.0), total(V, 0.0);
  for (std::size_t t = 0; t < N; ++t) {
    contagem[entradas(t) * V + alvos(t)] += 1;
    total[entradas(t)] += 1;
  }
  double minima = 0;
  for (std::size_t t = 0; t < N; ++t) {
    minima -= std::log(contagem[entradas(t) * V + alvos(t)] / total[entradas(t)]);
  }
  minima /= double(N);
  std::printf("perda mínima possível: %.4f\n", minima);
  tut::texto("Com mais passos (ou um otimizador melhor, capítulo 25) a perda desce até lá.");

  tut::secao("Gerando texto com a tabela treinada");
  std::mt19937_64 rng(12);
  std::int32_t atual = tok.id_of(U'A');
  std::vector<std::int32_t> saida = {atual};
  {
    NoGradGuard sem_fita;
    for (int i = 0; i < 120; ++i) {
      Ids um = {atual};
      Tensor p = softmax(embedding(W, um));
      std::discrete_distribution<int> sorteio(p.value().begin(), p.value().end());
      atual = sorteio(rng);
      saida.push_back(atual);
    }
  }
  std::printf("amostra: %s\n", tok.decode_utf8(saida).c_str());
  tut::texto(
      "Parece português de longe: sílabas plausíveis, palavras inventadas. Um caractere\n"
      "de memória é pouco. O capítulo 13 dá o primeiro passo para enxergar mais: misturar\n"
      "os vetores do passado; a atenção (capítulos 14 a 20) deixa cada posição escolher\n"
      "quanto pegar de cada posição anterior.");

  tut::experimente({
      "troque lr = 50 por 5 e por 500: devagar demais, ou instável?",
      "aumente o pedaço do livro para 100000 caracteres;",
      "troque Tensor::zeros({V, V}, true) por Tensor::randn({V, V}, 1.0, rng_w, true), com Rng rng_w(12) antes: a perda inicial fica acima de log(V) (logits aleatórios erram com confiança).",
  });
  tut::respostas();
  {
    // O mesmo laço, com outro lr: a perda depois de 50 passos.
    const auto treinar = [&](Scalar lr_teste, int n_passos) {
      Tensor Wt = Tensor::zeros({V, V}, true);
      double ultima = 0;
      for (int passo = 0; passo <= n_passos; ++passo) {
        Tensor perda = cross_entropy(embedding(Wt, entradas), alvos);
        ultima = perda.item();
        if (passo == n_passos) break;
        Wt.zero_grad();
        perda.backward();
        Wt.value() -= lr_teste * Wt.grad();
      }
      tape().clear();
      return ultima;
    };
    std::printf("lr =   5: perda depois de 50 passos %.4f (com lr = 50: %.4f)\n",
                static_cast<double>(treinar(5, 50)), perda_50);
    // Com lr = 500 cada passo salta por cima do vale: os algarismos da perda dependem de cada
    // arredondamento (mudam de uma máquina ou compilação para outra); o que não muda é o lado.
    const Scalar perda_500 = treinar(500, 50);
    std::printf("lr = 500: perda depois de 50 passos %s da de lr = 50 (%s)\n",
                perda_500 > perda_50 ? "acima" : "abaixo",
                perda_500 > 2 * perda_50 ? "mais que o dobro" : "menos que o dobro");
    std::printf("  (lr = 5 anda devagar demais; lr = 500 salta por cima do vale e oscila)\n");
    // 100000 caracteres: a perda mínima (a contagem de pares) desse pedaço maior.
    const std::u32string maior = livro.substr(0, 100000);
    const Tokenizer tok_maior = Tokenizer::from_text(maior);
    const std::vector<std::int32_t> ids_maior = tok_maior.encode(maior);
    const std::size_t Vm = tok_maior.vocab_size();
    std::vector<double> cont(Vm * Vm, 0.0), tot(Vm, 0.0);
    for (std::size_t t = 0; t + 1 < ids_maior.size(); ++t) {
      cont[ids_maior[t] * Vm + ids_maior[t + 1]] += 1;
      tot[ids_maior[t]] += 1;
    }
    double minima_maior = 0;
    for (std::size_t t = 0; t + 1 < ids_maior.size(); ++t) {
      minima_maior -= std::log(cont[ids_maior[t] * Vm + ids_maior[t + 1]] / tot[ids_maior[t]]);
    }
    minima_maior /= double(ids_maior.size() - 1);
    std::printf(
        "100000 caracteres: vocabulário %zu, perda mínima possível %.4f (com 20000: %.4f)\n", Vm,
        minima_maior, minima);
    std::printf(
        "  (mais texto, mais pares raros contados de verdade: a tabela exata decora menos)\n");
    Rng rng_w(12);
    Tensor Wr = Tensor::randn({V, V}, 1.0, rng_w);
    std::printf("com W = randn(1.0): perda inicial %.4f, acima de log(V) = %.4f\n",
                cross_entropy(embedding(Wr, entradas), alvos).item(), std::log(double(V)));
  }
  return 0;
}
