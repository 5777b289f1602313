#pragma once
// What the exporters' tests share: a small model with random weights, a little-endian reader
// and the logits of one sequence.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/tape.hpp"
#include "checkpoint/checkpoint.hpp"
#include "data/bpe_tokenizer.hpp"
#include "data/text.hpp"

namespace glass_test {

using glass::Array;
using glass::Checkpoint;
using glass::Decoder;
using glass::ModelConfig;
using glass::Tokenizer;

/// The small model's shape, with `vocab_size`.
inline ModelConfig small_shape(ModelConfig c, std::size_t vocab_size) {
  c.d_model = 16;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.ffn_hidden = 24;
  c.context_length = 32;
  c.vocab_size = vocab_size;
  return c;
}

/// A small model with random weights: gains drawn away from 1 so that every tensor matters.
inline Checkpoint small_model(ModelConfig c = {}, std::u32string chars = U" ea\nsoé,C") {
  c = small_shape(c, chars.size() + 1);
  auto model = std::make_unique<Decoder>(c, 42);
  std::uint32_t state = 1;
  for (auto& [name, p] : model->named_parameters())
    if (p.value().dimension() == 1)
      for (float& v : p.value()) {
        state = state * 1664525u + 1013904223u;
        v = 0.5f + static_cast<float>(state >> 8) / static_cast<float>(1u << 24);
      }
  glass::SaveOrigin origin;
  origin.weights_step = "123";
  return Checkpoint(
      c, glass::TextTokenizer(Tokenizer(std::vector<char32_t>(chars.begin(), chars.end()))),
      std::move(model), 0, origin);
}

/// A small model with a BPE vocabulary trained on a short text.
inline Checkpoint small_bpe_model(std::size_t merges = 6) {
  const std::u32string text = U"o gato e o rato, o pato e o gato; o rato e o pato.\n";
  // 259 specials and bytes + 12 distinct characters ('\u2581' for the space) + the merges.
  glass::BpeTokenizer bpe = glass::BpeTokenizer::train(text, 259 + 12 + merges);
  const ModelConfig c = small_shape({}, bpe.vocab_size());
  glass::SaveOrigin origin;
  origin.weights_step = "123";
  return Checkpoint(c, glass::TextTokenizer(std::move(bpe)), std::make_unique<Decoder>(c, 42), 0,
                    origin);
}

/// Little-endian reader over a byte string; throws on reading past the end.
struct Reader {
  const std::string& b;
  std::size_t pos = 0;
  template <typename T>
  T pod() {
    if (pos + sizeof(T) > b.size()) throw std::out_of_range("read past the end");
    T v;
    std::memcpy(&v, b.data() + pos, sizeof(T));
    pos += sizeof(T);
    return v;
  }
  std::string str() {
    const auto n = pod<std::uint64_t>();
    if (pos + n > b.size()) throw std::out_of_range("string past the end");
    std::string s = b.substr(pos, n);
    pos += n;
    return s;
  }
};

/// Logits (T, vocab) of one sequence.
inline std::vector<std::vector<float>> logits_of(const Decoder& d,
                                                 const std::vector<std::int32_t>& ids) {
  glass::NoGradGuard no_grad;
  glass::Ids x = glass::Ids::from_shape({1, ids.size()});
  std::copy(ids.begin(), ids.end(), x.begin());
  const Array y = d.forward(x).value();
  std::vector<std::vector<float>> out(ids.size());
  const std::size_t V = y.shape()[2];
  for (std::size_t t = 0; t < ids.size(); ++t)
    out[t].assign(y.data() + t * V, y.data() + (t + 1) * V);
  return out;
}

}  // namespace glass_test
