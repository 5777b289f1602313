// llama2.c writer (see export_llama2c.hpp for the layout).

#include "export/export_llama2c.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "data/text.hpp"
#include "checkpoint/atomic_file.hpp"

namespace glass {
namespace {

constexpr double kRunCRopeBase = 10000.0;  // run.c: powf(10000.0f, head_dim / (float)head_size)
constexpr double kRunCNormEps = 1e-5;      // run.c: ss += 1e-5f

struct Writer {
  std::string bytes;
  template <typename T>
  void pod(T v) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    bytes.append(b, sizeof(T));
  }
  void floats(const float* p, std::size_t n) {
    bytes.append(reinterpret_cast<const char*>(p), n * sizeof(float));
  }
  void array(const Array& a) { floats(a.data(), a.size()); }
};

/// A character model's (vocab, d_model) table in llama2.c's id order: row 0, then `bos_row`,
/// then rows 1.. .
void write_table(Writer& w, const Array& a, std::size_t bos_row) {
  const std::size_t d = a.shape()[1];
  w.floats(a.data(), d);
  w.floats(a.data() + bos_row * d, d);
  w.floats(a.data() + d, (a.shape()[0] - 1) * d);
}

/// A BPE model's (vocab, d_model) table, whose ids already are llama2.c's, with the row of
/// "<s>" (id 1) replaced by row `bos_row`.
void write_bpe_table(Writer& w, const Array& a, std::size_t bos_row) {
  const std::size_t d = a.shape()[1];
  const std::size_t bos = BpeTokenizer::kBosId;
  w.floats(a.data(), bos * d);
  w.floats(a.data() + bos_row * d, d);
  w.floats(a.data() + (bos + 1) * d, (a.shape()[0] - bos - 1) * d);
}

/// The tokenizer in llama2.c's layout: tokenizer.bin's pieces and scores, and where the ids go.
struct Llama2cVocab {
  std::vector<std::string> pieces;
  std::vector<float> scores;
  std::int32_t newline_id = -1;  ///< glass's id of "\n", whose embedding <s> takes; -1: none
  bool inserts_bos = false;      ///< "<s>" added at id 1, glass's ids from 1 on shifted by one
};

/// The one place this exporter asks the kind: the layouts differ. Characters: "<unk>", "<s>",
/// then each character as UTF-8 (the space as itself: run.c looks up " "), scored by frequency
/// rank (run.c only uses scores to merge pairs, and no pair is a token here), then a chat
/// model's markers "<|im_start|>" and "<|im_end|>" (score 0). BPE: glass's ids
/// as they are, the texts with '▁' written as ' ' (as llama2.c's tokenizer.py writes Llama 2's)
/// and its scores, which run.c's encode merges by.
Llama2cVocab llama2c_vocab(const TextTokenizer& tokenizer) {
  Llama2cVocab v;
  if (const BpeTokenizer* bpe = tokenizer.bpe()) {  // layout: see above
    v.newline_id = bpe->id_of_text(U"\n");
    for (std::int32_t id = 0; id < static_cast<std::int32_t>(bpe->vocab_size()); ++id) {
      std::u32string text = bpe->token_text32(id);
      std::replace(text.begin(), text.end(), BpeTokenizer::kSpaceMark, U' ');
      v.pieces.push_back(u32_to_utf8(text));
      v.scores.push_back(bpe->score(id));
    }
    return v;
  }
  const Tokenizer& chars = *tokenizer.chars();
  v.inserts_bos = true;
  v.newline_id = chars.contains(U'\n') ? chars.id_of(U'\n') : -1;
  v.pieces = {"<unk>", "<s>"};
  for (char32_t ch : chars.chars()) v.pieces.push_back(char_to_utf8(ch));
  for (std::size_t i = 0; i < v.pieces.size(); ++i)
    v.scores.push_back(i < 2 ? 0.0f : -static_cast<float>(i));
  // A chat model's markers keep their place after the characters. run.c never encodes text into
  // them (it merges adjacent pieces, and no two pieces join into "<|im_start|>"); it prints them
  // as their text when sampled.
  for (const std::u32string& special : chars.specials()) {
    v.pieces.push_back(u32_to_utf8(special));
    v.scores.push_back(0.0f);
  }
  return v;
}

}  // namespace

Llama2cFiles llama2c_bytes(const Checkpoint& loaded, const ExportInfo& info) {
  const ModelConfig& c = loaded.config();
  const Decoder& m = loaded.model();
  refuse_recipe_options(c, "llama2.c's run.c");
  if (c.rope_base != kRunCRopeBase)
    throw ExportError(
        fmt::format("llama2.c's run.c computes RoPE with base 10000; this model was "
                    "trained with rope_base {} and would give other numbers there",
                    c.rope_base));
  if (std::abs(c.norm_eps - kRunCNormEps) > 1e-12)
    throw ExportError(
        fmt::format("llama2.c's run.c computes RMSNorm with eps 1e-5; this model was "
                    "trained with norm_eps {} and would give other numbers there",
                    c.norm_eps));
  const Llama2cVocab layout = llama2c_vocab(loaded.tokenizer());
  if (layout.newline_id < 0)
    throw ExportError(
        "the vocabulary has no newline, whose embedding the llama2.c start token "
        "<s> takes; llama2.c export needs a model trained on text with newlines");
  if (info.context == 0 || info.context > c.context_length)
    throw ExportError(
        fmt::format("the training context {} must be between 1 and the model's "
                    "context_length {}",
                    info.context, c.context_length));

  const std::size_t newline = static_cast<std::size_t>(layout.newline_id);
  const std::size_t vocab = layout.inserts_bos ? c.vocab_size + 1 : c.vocab_size;
  const std::size_t L = m.layers.size(), head_dim = c.head_dim(), seq_len = info.context;

  Writer w;
  for (std::size_t v : {c.d_model, c.ffn_hidden, c.n_layers, c.n_heads, c.n_kv_heads})
    w.pod(static_cast<std::int32_t>(v));
  w.pod(-static_cast<std::int32_t>(vocab));  // negative: wcls follows, not shared
  w.pod(static_cast<std::int32_t>(seq_len));

  if (layout.inserts_bos)
    write_table(w, m.tok_embeddings.weight.value(), newline);
  else
    write_bpe_table(w, m.tok_embeddings.weight.value(), newline);
  for (std::size_t l = 0; l < L; ++l) w.array(m.layers[l]->attention_norm.weight.value());
  for (std::size_t l = 0; l < L; ++l) w.array(m.layers[l]->attention.wq.weight.value());
  for (std::size_t l = 0; l < L; ++l) w.array(m.layers[l]->attention.wk.weight.value());
  for (std::size_t l = 0; l < L; ++l) w.array(m.layers[l]->attention.wv.weight.value());
  for (std::size_t l = 0; l < L; ++l) w.array(m.layers[l]->attention.wo.weight.value());
  for (std::size_t l = 0; l < L; ++l) w.array(m.layers[l]->ffn_norm.weight.value());
  for (std::size_t l = 0; l < L; ++l) w.array(m.layers[l]->swiglu().w1.weight.value());
  for (std::size_t l = 0; l < L; ++l) w.array(m.layers[l]->swiglu().w2.weight.value());
  for (std::size_t l = 0; l < L; ++l) w.array(m.layers[l]->swiglu().w3.weight.value());
  w.array(m.norm.weight.value());
  // freq_cis_real, freq_cis_imag: cos and sin of pos * theta_i, theta_i = 10000^(-2i/head_dim)
  // (Su et al. 2021, eq. 15), (seq_len, head_dim / 2) each.
  for (int part = 0; part < 2; ++part)
    for (std::size_t pos = 0; pos < seq_len; ++pos)
      for (std::size_t i = 0; i < head_dim / 2; ++i) {
        const double angle =
            static_cast<double>(pos) *
            std::pow(kRunCRopeBase, -2.0 * static_cast<double>(i) / static_cast<double>(head_dim));
        w.pod(static_cast<float>(part == 0 ? std::cos(angle) : std::sin(angle)));
      }
  if (layout.inserts_bos)
    write_table(w, m.output.weight.value(), /*bos_row=*/0);  // "<s>" scores as "<unk>"
  else
    w.array(m.output.weight.value());  // unchanged: the logits are glass's, id for id

  // tokenizer.bin (llama2c_vocab).
  const std::vector<std::string>& pieces = layout.pieces;
  const std::vector<float>& scores = layout.scores;
  std::int32_t max_len = 0;
  for (const auto& p : pieces) max_len = std::max(max_len, static_cast<std::int32_t>(p.size()));
  Writer t;
  t.pod(max_len);
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    t.pod(scores[i]);
    t.pod(static_cast<std::int32_t>(pieces[i].size()));
    t.bytes += pieces[i];
  }
  return {std::move(w.bytes), std::move(t.bytes)};
}

void export_llama2c(const Checkpoint& model, const ExportInfo& info, const std::string& dir) {
  const Llama2cFiles files = llama2c_bytes(model, info);
  ensure_writable_directory(dir);
  const std::filesystem::path model_path = std::filesystem::path(dir) / "model.bin";
  const bool model_existed = std::filesystem::exists(model_path);
  write_file_atomic(model_path.string(), files.model_bin);
  try {
    write_file_atomic((std::filesystem::path(dir) / "tokenizer.bin").string(), files.tokenizer_bin);
  } catch (...) {
    // A new model.bin without its tokenizer would be half an export: take it back.
    std::error_code ec;
    if (!model_existed) std::filesystem::remove(model_path, ec);
    throw;
  }
}

}  // namespace glass
