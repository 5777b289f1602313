// Capítulo 25 — AdamW e a agenda da taxa de aprendizado.
#include <cmath>

#include "autograd/ops.hpp"
#include "common.hpp"
#include "train/adamw.hpp"
#include "train/schedule.hpp"

using namespace glass;

int main() {
  tut::capitulo(25, "AdamW e a agenda de lr");
  tut::novo(
      "o otimizador AdamW (train/adamw.hpp) e o aquecimento + decaimento em cosseno (train/schedule.hpp).");
  tut::texto(
      "No capítulo 12 usamos W <- W - lr · grad. Funciona, mas um único lr serve mal a\n"
      "parâmetros com gradientes de tamanhos muito diferentes. O Adam (Kingma & Ba, 2015)\n"
      "guarda, por número, médias móveis do gradiente (m) e do seu quadrado (v), e anda\n"
      "lr · m / √v: o passo fica com tamanho parecido em toda coordenada. O AdamW\n"
      "(Loshchilov & Hutter, 2019) ainda encolhe os pesos um pouco a cada passo\n"
      "(p <- p - lr · wd · p), separado do gradiente: 'weight decay desacoplado'.");

  tut::secao("Um vale estreito: f(w) = 50·w0² + 0.5·w1², começando em [1, 1]");
  tut::texto(
      "A curvatura em w0 é 100 vezes a de w1. Na descida simples, cada passo multiplica w0\n"
      "por (1 - 100·lr) e w1 por (1 - lr): lr acima de 0.02 faz w0 explodir, e com\n"
      "lr = 0.019 cada passo tira só 1.9% de w1. O AdamW roda aqui com lr 0.05 e weight\n"
      "decay 0 (o vale não tem matriz a decair): cada método com um lr que ele aguenta, não\n"
      "o mesmo lr nos dois.");
  const Tensor curvatura = Tensor::from_vector({100, 1}, {2});
  auto perda = [&](const Tensor& w) { return sum(curvatura * w * w) * Scalar(0.5); };
  Tensor w_sgd = Tensor::from_vector({1, 1}, {2}, true);
  Tensor w_adam = Tensor::from_vector({1, 1}, {2}, true);
  AdamWConfig sem_decaimento;
  sem_decaimento.weight_decay = 0;
  AdamW adam({{"w", w_adam}}, sem_decaimento);
  std::vector<double> w0_sgd = {1.0};  // w0 da descida simples depois de cada passo
  for (int passo = 1; passo <= 60; ++passo) {
    w_sgd.zero_grad();
    perda(w_sgd).backward();
    w_sgd.value() -= Scalar(0.019) * w_sgd.grad();
    w0_sgd.push_back(w_sgd.value()(0));
    adam.zero_grad();
    perda(w_adam).backward();
    adam.step(0.05);
    if (passo % 20 == 0) {
      std::printf("passo %2d   descida simples w = [%.6f, %.6f]   AdamW w = [%.6f, %.6f]\n", passo,
                  w_sgd.value()(0), w_sgd.value()(1), w_adam.value()(0), w_adam.value()(1));
    }
  }
  tut::texto(
      "De 20 em 20 passos, w0 da descida simples parece só encolher. Passo a passo, não:\n"
      "cada passo multiplica w0 por 1 - 100·0.019 = -0.9, e w0 troca de sinal a cada passo,\n"
      "pulando de uma parede do vale para a outra e encolhendo só 10% por pulo:");
  tut::linha("w0 da descida simples, passos 0 a 8",
             std::vector<double>(w0_sgd.begin(), w0_sgd.begin() + 9));
  tut::texto(
      "(Depois de um número par de passos o sinal volta a ser +: por isso a tabela acima,\n"
      "de 20 em 20, esconde o zigue-zague.) Com lr acima de 0.02 o fator passa de -1 e\n"
      "cada pulo fica MAIOR que o anterior: w0 explode.\n"
      "A descida simples encolhe |w0| depressa (1 -> 0.12 -> 0.015 -> 0.002, em zigue-zague)\n"
      "e w1 devagar (1 -> 0.68 -> 0.46 -> 0.32): o único lr que não faz w0 explodir é pequeno\n"
      "demais para w1. O AdamW anda nas duas direções no mesmo ritmo (w0 = w1 o tempo todo) e leva w1\n"
      "para perto de 0 muito antes. Em w0, porém, a descida simples termina melhor: perto\n"
      "do mínimo o passo do AdamW continua com tamanho ~lr e ele oscila em volta do 0. É um\n"
      "dos motivos para reduzir o lr no fim (a agenda, abaixo).");

  tut::secao("O primeiro passo tem tamanho lr, seja o gradiente grande ou pequeno");
  for (double g : {1e-4, 1.0, 100.0}) {
    Tensor p = Tensor::from_vector({0}, {1}, true);
    AdamW opt({{"p", p}}, sem_decaimento);
    p.grad()(0) = Scalar(g);
    opt.step(0.01);
    std::printf("gradiente %8.4f -> passo %.6f\n", g, -double(p.value()(0)));
  }
  tut::texto("Graças à correção de viés (divide m e v por 1 - beta^t), m/√v ≈ ±1 logo no início.");

  tut::secao("Weight decay só nas matrizes");
  Tensor matriz = Tensor::ones({2, 2}, true);
  Tensor ganho = Tensor::ones({2}, true);
  AdamW com_decaimento({{"matriz", matriz}, {"ganho", ganho}});  // weight_decay = 0.1
  com_decaimento.zero_grad();
  matriz.grad();  // gradientes zero: só o decaimento age
  ganho.grad();
  com_decaimento.step(0.1);
  for (const AdamWParam& p : com_decaimento.params()) {
    std::printf("%-7s decai: %-3s  valor depois de 1 passo: %.6f\n", p.name.c_str(),
                p.decay ? "sim" : "não", double(p.param.value().data()[0]));
  }
  tut::texto(
      "1 - lr·wd = 1 - 0.1·0.1 = 0.99. Os ganhos da RMSNorm (1-D) não decaem.\n"
      "Por que decair à parte (AdamW) e não somar wd·p ao gradiente (Adam com L2): o Adam\n"
      "dividiria esse termo por √v, e o decaimento passaria a depender do tamanho dos\n"
      "gradientes de cada peso. Os números estão em docs/adamw.md.");

  tut::secao("A agenda: aquecimento linear e depois cosseno");
  LrSchedule agenda;
  agenda.lr_max = 1e-3;
  agenda.min_lr = 1e-4;
  agenda.warmup = 10;
  agenda.decay_iters = 100;
  tut::texto(
      "Nos primeiros passos as médias m e v ainda são ruins: começamos devagar\n"
      "(lr_max · (it+1)/(warmup+1)). Depois o lr desce em cosseno até min_lr = lr_max/10.");
  for (long it : {0L, 1L, 5L, 9L, 10L, 25L, 55L, 85L, 99L, 100L, 150L}) {
    std::printf("lr(%3ld): %.6f\n", it, agenda.at(it));
  }

  tut::experimente({
      "aumente o lr da descida simples para 0.021 e veja w0 explodir: o fator vira 1 - 2.1 = -1.1, e |w0| cresce 10% por passo (1.1^60 = 304.5 no passo 60);",
      "troque beta2 para 0.999 (o padrão do PyTorch) e compare a trajetória do AdamW;",
      "mude warmup para 0: o primeiro lr já é lr_max.",
  });

  tut::respostas();
  // 1) The plain descent with lr 0.021: w0 is multiplied by 1 - 100·0.021 = -1.1 per step.
  Tensor w_021 = Tensor::from_vector({1, 1}, {2}, true);
  for (int passo = 1; passo <= 60; ++passo) {
    w_021.zero_grad();
    perda(w_021).backward();
    w_021.value() -= Scalar(0.021) * w_021.grad();
    if (passo % 20 == 0)
      std::printf("1) lr 0.021, passo %2d: w0 = %.4f\n", passo, double(w_021.value()(0)));
  }
  // 2) The same AdamW with beta2 0.999 next to the 0.99 of above.
  Tensor w_099 = Tensor::from_vector({1, 1}, {2}, true);
  Tensor w_0999 = Tensor::from_vector({1, 1}, {2}, true);
  AdamWConfig beta2_0999 = sem_decaimento;
  beta2_0999.beta2 = 0.999;
  AdamW adam_099({{"w", w_099}}, sem_decaimento), adam_0999({{"w", w_0999}}, beta2_0999);
  for (int passo = 1; passo <= 60; ++passo) {
    for (auto [w, opt] : {std::pair<Tensor*, AdamW*>{&w_099, &adam_099}, {&w_0999, &adam_0999}}) {
      opt->zero_grad();
      perda(*w).backward();
      opt->step(0.05);
    }
    if (passo % 20 == 0) {
      std::printf("2) passo %2d: beta2 0.99  w = [%.6f, %.6f]   beta2 0.999  w = [%.6f, %.6f]\n",
                  passo, w_099.value()(0), w_099.value()(1), w_0999.value()(0), w_0999.value()(1));
    }
  }
  // 3) The schedule without warm-up.
  LrSchedule sem_aquecimento = agenda;
  sem_aquecimento.warmup = 0;
  std::printf("3) warmup 0: lr(0) = %.6f   lr(1) = %.6f   lr(55) = %.6f\n", sem_aquecimento.at(0),
              sem_aquecimento.at(1), sem_aquecimento.at(55));
  tut::texto(
      "1) O fator -1.1 faz |w0| crescer 10% por passo, trocando de sinal: 1.1^60 = 304.5.\n"
      "2) Quase a mesma trajetória: w0 = w1 nos dois, os dois passam do 0 e voltam (perto do\n"
      "   mínimo o passo continua com tamanho ~lr), e as marcas diferem na segunda casa. Com\n"
      "   0.999, v esquece mais devagar e guarda os gradientes grandes do começo; num vale\n"
      "   tão pequeno, quem manda é o lr, não o beta2.\n"
      "3) Sem aquecimento o primeiro lr já é lr_max, e o cosseno começa no passo 0.");
  return 0;
}
