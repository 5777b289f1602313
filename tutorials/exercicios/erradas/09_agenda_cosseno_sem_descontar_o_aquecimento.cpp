// Uma resposta ERRADA do exercício 09 — A agenda de lr, à mão: o cosseno anda com it / decay_iters,
// sem descontar o aquecimento (começa a descer do ponto errado). O exercício tem de reprová-la
// (tests/cli/tutorials_test.cpp confere).
//
// Escreva o aquecimento linear + cosseno do capítulo 25:
//   it <  warmup:              lr = lr_max · (it + 1) / (warmup + 1)
//   warmup <= it < decay:      r = (it - warmup) / (decay - warmup)
//                              lr = min_lr + 0.5 · (1 + cos(π r)) · (lr_max - min_lr)
//   it >= decay:               lr = min_lr
// e compare com LrSchedule::at.
#include <cmath>

#include "exercicios/conferir.hpp"
#include "train/schedule.hpp"

using namespace glass;

static double minha_agenda(long it, double lr_max, double min_lr, long warmup, long decay) {
  // --- a sua parte ---
  if (it < warmup) return lr_max * double(it + 1) / double(warmup + 1);
  if (it >= decay) return min_lr;
  const double r = double(it) / double(decay);  // o erro: o aquecimento não é descontado
  return min_lr + 0.5 * (1 + std::cos(M_PI * r)) * (lr_max - min_lr);
  // --- fim ---
}

int main() {
  exercicio::titulo(9, "A agenda de lr, à mão");
  LrSchedule agenda;
  agenda.lr_max = 1e-3;
  agenda.min_lr = 1e-4;
  agenda.warmup = 10;
  agenda.decay_iters = 100;
  std::vector<double> minha, referencia;
  for (long it : {0L, 5L, 10L, 55L, 100L, 150L}) {
    minha.push_back(minha_agenda(it, 1e-3, 1e-4, 10, 100));
    referencia.push_back(agenda.at(it));
  }
  tut::linha("LrSchedule::at", referencia);
  // lr(55) = 1e-4 + 0.5 · (1 + cos(π/2)) · 9e-4 = 0.00055 (à mão).
  const bool certo = exercicio::conferir("resposta", minha, referencia, 1e-9) &&
                     std::fabs(minha[3] - 0.00055) < 1e-9;
  return exercicio::resultado(certo);
}
