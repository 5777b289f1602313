#pragma once
// The bigram count model of chapter 12 as a yardstick for chapters 26 and 27: how far does a
// model get that sees only the current character?

#include <cmath>
#include <cstdint>
#include <vector>

namespace tut {

/// Losses of the bigram count model built from the pairs (t, t+1) of `treino`, in nats per
/// character (natural log, like cross_entropy).
struct PerdasBigrama {
  /// Mean -log p(next | current) on `treino` itself with the exact relative frequencies: the
  /// lowest loss any bigram model reaches on that text (chapter 12's "perda mínima possível").
  double otimo_treino = 0;
  /// The same on `validacao`, with add-one (Laplace) smoothing: a pair never seen in training
  /// gets count 1 instead of 0 (and so a finite loss).
  double validacao = 0;
};

/// Counts the pairs of `treino` (ids in [0, V)) and evaluates them as described above.
inline PerdasBigrama perdas_bigrama(const std::vector<std::int32_t>& treino,
                                    const std::vector<std::int32_t>& validacao, std::size_t V) {
  std::vector<double> contagem(V * V, 0.0), total(V, 0.0);
  for (std::size_t t = 0; t + 1 < treino.size(); ++t) {
    contagem[std::size_t(treino[t]) * V + std::size_t(treino[t + 1])] += 1;
    total[std::size_t(treino[t])] += 1;
  }
  PerdasBigrama r;
  for (std::size_t t = 0; t + 1 < treino.size(); ++t) {
    const std::size_t a = std::size_t(treino[t]), b = std::size_t(treino[t + 1]);
    r.otimo_treino -= std::log(contagem[a * V + b] / total[a]);
  }
  r.otimo_treino /= double(treino.size() - 1);
  for (std::size_t t = 0; t + 1 < validacao.size(); ++t) {
    const std::size_t a = std::size_t(validacao[t]), b = std::size_t(validacao[t + 1]);
    r.validacao -= std::log((contagem[a * V + b] + 1) / (total[a] + double(V)));
  }
  r.validacao /= double(validacao.size() - 1);
  return r;
}

}  // namespace tut
