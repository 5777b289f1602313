// Capítulo 35 — experimento
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <random>

#include "common.hpp"
#include "treino_rapido.hpp"

#include "interp/interp.hpp"

using namespace glass;

int main(int argc, char** argv) {
  const std::size_t V = argc > 1 ? std::atoi(argv[1]) : 16;
  const std::size_t P = argc > 2 ? std::atoi(argv[2]) : 16;
  const long passos = argc > 3 ? std::atol(argv[3]) : 600;
  const double lr = argc > 4 ? std::atof(argv[4]) : 3e-3;
  const std::size_t d = argc > 5 ? std::atoi(argv[5]) : 64;
  const std::size_t heads = argc > 6 ? std::atoi(argv[6]) : 4;
  const std::size_t B = 16, T = 2 * P;
  ModelConfig cfg;
  cfg.vocab_size = V;
  cfg.d_model = d;
  cfg.n_layers = 2;
  cfg.n_heads = heads;
  cfg.n_kv_heads = heads;
  cfg.ffn_hidden = 2 * d;
  cfg.context_length = T;
  Decoder modelo(cfg, 7);
  AdamW opt(modelo.named_parameters());
  LrSchedule agenda;
  agenda.lr_max = lr;
  agenda.min_lr = lr / 10;
  agenda.warmup = 20;
  agenda.decay_iters = passos;
  Rng rng(5);
  std::uniform_int_distribution<std::int32_t> pick(0, std::int32_t(V) - 1);
  Ids x = Ids::from_shape({B, T}), y = Ids::from_shape({B, T});
  const std::vector<std::int32_t> sonda = repeated_random_tokens(P, V, 123);
  auto t0 = std::chrono::steady_clock::now();
  for (long it = 0; it <= passos; ++it) {
    for (std::size_t b = 0; b < B; ++b) {
      std::vector<std::int32_t> s(P);
      for (auto& v : s) v = pick(rng);
      for (std::size_t t = 0; t < T; ++t) {
        x(b, t) = s[t % P];
        y(b, t) = s[(t + 1) % P];
      }
    }
    Tensor logits = modelo.forward(x);
    Tensor perda = cross_entropy(logits, y);
    if (it % 25 == 0) {
      // second-half loss
      NoGradGuard g;
      Ids x2 = Ids::from_shape({B, P - 1}), y2 = Ids::from_shape({B, P - 1});
      const Array& L = logits.value();
      double sh = 0; int cnt = 0;
      for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = P; t < T - 1; ++t) {
          const Scalar* row = L.data() + (b * T + t) * V;
          double m = row[0];
          for (std::size_t v = 0; v < V; ++v) m = std::max(m, double(row[v]));
          double z = 0;
          for (std::size_t v = 0; v < V; ++v) z += std::exp(row[v] - m);
          sh += -(row[y(b, t)] - m - std::log(z));
          ++cnt;
        }
      HeadScores hs = head_scores(modelo, sonda, P);
      double best = 0, bestp = 0;
      for (std::size_t i = 0; i < hs.induction.size(); ++i) best = std::max(best, double(hs.induction.data()[i]));
      for (std::size_t i = 0; i < hs.previous_token.size(); ++i) bestp = std::max(bestp, double(hs.previous_token.data()[i]));
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("passo %4ld perda %.3f segunda metade %.3f inducao max %.3f anterior max %.3f  t=%.1fs\n", it,
                  perda.item(), sh / cnt, best, bestp, secs);
    }
    if (it == passos) break;
    opt.zero_grad();
    perda.backward();
    clip_grad_norm(modelo.parameters(), 1.0);
    opt.step(agenda.at(it));
  }
  return 0;
}
