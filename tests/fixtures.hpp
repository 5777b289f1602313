// Fixtures shared by the suites: the small model of the tests (small_config, used from nn/ to the
// `glass` program) and an untrained checkpoint of it. Header-only; tests include it as
// "fixtures.hpp" (a test that calls write_small_checkpoint needs glass_checkpoint).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "data/tokenizer.hpp"
#include "nn/config.hpp"
#include "nn/decoder.hpp"
#include "checkpoint/checkpoint.hpp"

namespace glass_test {

/// The small model of the tests: d_model 16, 2 layers, 4 query heads over 2 KV heads (GQA,
/// head_dim 4), SwiGLU hidden size 24, with `vocab_size` characters and `context_length`
/// positions. Large enough to have every part (several layers, heads and KV heads), small
/// enough to run in milliseconds.
inline glass::ModelConfig small_config(std::size_t vocab_size, std::size_t context_length = 16) {
  glass::ModelConfig c;
  c.vocab_size = vocab_size;
  c.context_length = context_length;
  c.n_layers = 2;
  c.d_model = 16, c.ffn_hidden = 24;
  c.n_heads = 4, c.n_kv_heads = 2;  // 2 query heads share each KV head
  return c;
}

/// The text whose characters are the vocabulary of write_small_checkpoint's model.
inline const char32_t* const kSmallText = U"to be or not to be\nthat is the question";

/// Writes an untrained small_config model (vocabulary: the characters of kSmallText; weights
/// drawn with `seed` and standard deviation `init_std`) as a checkpoint directory `dir`
/// (save_model: config.json + model.safetensors). Returns its config.
inline glass::ModelConfig write_small_checkpoint(const std::string& dir, std::size_t context_length,
                                                 std::uint64_t seed,
                                                 double init_std = glass::ModelConfig().init_std) {
  const glass::Tokenizer tokenizer = glass::Tokenizer::from_text(kSmallText);
  glass::ModelConfig config = small_config(tokenizer.vocab_size(), context_length);
  config.init_std = init_std;
  const glass::Decoder model(config, seed);
  glass::save_model(dir, model, tokenizer);
  return config;
}

}  // namespace glass_test
