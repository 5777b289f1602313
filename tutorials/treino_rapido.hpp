#pragma once
// A tiny decoder trained for a few seconds on the start of Dom Casmurro, for chapters 18, 28-30
// and 32-34 (chapter 27 writes the same loop out in full and explains it), the validation loss
// of chapters 26-27, and fixed validation windows for chapters 18 and 32-34. No downloaded
// weights.

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "autograd/ops.hpp"
#include "data/batches.hpp"
#include "data/text.hpp"
#include "data/tokenizer.hpp"
#include "nn/decoder.hpp"
#include "train/adamw.hpp"
#include "train/clip.hpp"
#include "train/schedule.hpp"

namespace tut {

/// The configuration of chapter 27's model: d_model 64, 2 layers, 4 query heads of dim 16, 2 KV heads,
/// SwiGLU 176, context 32.
inline glass::ModelConfig config_pequena(std::size_t vocab_size) {
  glass::ModelConfig cfg;
  cfg.vocab_size = vocab_size;
  cfg.d_model = 64;
  cfg.n_layers = 2;
  cfg.n_heads = 4;
  cfg.n_kv_heads = 2;
  cfg.ffn_hidden = 176;  // 2/3 · 4 · 64 = 170.7, rounded up to a multiple of 8
  cfg.context_length = 32;
  return cfg;
}

/// Mean cross-entropy of `modelo` over 8 fixed batches (seed 99) of 16 windows of `contexto`
/// ids from `val`, without the tape (chapters 26 and 27).
inline double perda_validacao(const glass::Decoder& modelo, const std::vector<std::int32_t>& val,
                              std::size_t contexto) {
  using namespace glass;
  NoGradGuard sem_fita;
  BatchSampler lotes(val, 16, contexto, /*seed=*/99, "validation split");
  Ids x, y;
  double total = 0;
  for (int i = 0; i < 8; ++i) {
    lotes.next(x, y);
    total += cross_entropy(modelo.forward(x), y).item();
  }
  return total / 8;
}

struct ModeloPequeno {
  glass::Tokenizer tokenizer;
  std::unique_ptr<glass::Decoder> modelo;
  double perda_inicial = 0, perda_final = 0;  ///< training-batch losses of the first/last step
};

/// Trains a model of configuration `cfg` (its vocab_size is set from the text) for `passos`
/// AdamW steps (batches of 16 windows of cfg.context_length characters from the first 30000
/// characters of data/corpora/domcasmurro.txt).
inline ModeloPequeno treinar_modelo(glass::ModelConfig cfg, long passos, std::uint64_t seed) {
  using namespace glass;
  const std::u32string livro = load_text(GLASS_SOURCE_DIR "/data/corpora/domcasmurro.txt");
  const std::u32string texto = livro.substr(0, 30000);
  ModeloPequeno r;
  r.tokenizer = Tokenizer::from_text(texto);
  cfg.vocab_size = r.tokenizer.vocab_size();
  r.modelo = std::make_unique<Decoder>(cfg, seed);
  BatchSampler lotes(r.tokenizer.encode(texto), 16, cfg.context_length, seed + 1);
  AdamW otimizador(r.modelo->named_parameters());
  LrSchedule agenda;
  agenda.lr_max = 3e-3;
  agenda.min_lr = 3e-4;
  agenda.warmup = 20;
  agenda.decay_iters = passos;
  Ids x, y;
  for (long it = 0; it < passos; ++it) {
    lotes.next(x, y);
    Tensor perda = cross_entropy(r.modelo->forward(x), y);
    if (it == 0) r.perda_inicial = perda.item();
    r.perda_final = perda.item();
    otimizador.zero_grad();
    perda.backward();
    clip_grad_norm(r.modelo->parameters(), 1.0);
    otimizador.step(agenda.at(it));
  }
  std::printf("(modelo pequeno treinado por %ld passos: perda %.3f -> %.3f)\n", passos,
              r.perda_inicial, r.perda_final);
  return r;
}

/// Trains the chapter-27 model (config_pequena) for `passos` AdamW steps.
inline ModeloPequeno treinar_rapido(long passos = 200, std::uint64_t seed = 21) {
  return treinar_modelo(config_pequena(0), passos, seed);
}

/// `n` windows of `contexto` ids from the text that follows the 30000 characters treinar_rapido
/// trains on, one after the other: inputs x (n, contexto) and targets y = x shifted by one
/// character. Characters outside the vocabulary become id 0 (chapters 33 and 34).
inline void janelas_de_validacao(const glass::Tokenizer& tokenizer, std::size_t n,
                                 std::size_t contexto, glass::Ids& x, glass::Ids& y) {
  using namespace glass;
  const std::u32string livro = load_text(GLASS_SOURCE_DIR "/data/corpora/domcasmurro.txt");
  const std::vector<std::int32_t> ids =
      tokenizer.encode(livro.substr(30000, n * contexto + 1), /*map_unknown=*/true);
  x = Ids::from_shape({n, contexto});
  y = Ids::from_shape({n, contexto});
  for (std::size_t b = 0; b < n; ++b) {
    for (std::size_t t = 0; t < contexto; ++t) {
      x(b, t) = ids[b * contexto + t];
      y(b, t) = ids[b * contexto + t + 1];
    }
  }
}

}  // namespace tut
