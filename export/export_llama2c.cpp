// llama2.c writer (see export_llama2c.hpp for the layout).

#include "export/export_llama2c.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <stdexcept>
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

/// A (vocab, d_model) table in llama2.c's id order, with the row of "<s>" (id 1) taken from row
/// `bos_row`: a character model's rows 0, `bos_row`, then 1.. (glass's ids from 1 on shift by
/// one); a BPE model's rows as they are, row 1 replaced (its ids already are llama2.c's).
std::vector<float> llama2c_table(const Array& a, std::size_t bos_row, bool inserts_bos) {
  const std::size_t d = a.shape()[1];
  const float* row0 = a.data();
  const float* bos = a.data() + bos_row * d;
  std::vector<float> out;
  out.reserve((a.shape()[0] + 1) * d);
  out.insert(out.end(), row0, row0 + d);
  out.insert(out.end(), bos, bos + d);
  const std::size_t rest = inserts_bos ? 1 : BpeTokenizer::kBosId + 1;  // the next glass row
  out.insert(out.end(), a.data() + rest * d, a.data() + a.size());
  return out;
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

/// Throws ExportError when run.c / runq.c cannot run `loaded` as trained (llama2c_bytes).
void check_runnable(const Checkpoint& loaded, const ExportInfo& info, const Llama2cVocab& layout) {
  const ModelConfig& c = loaded.config();
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
  if (layout.newline_id < 0)
    throw ExportError(
        "the vocabulary has no newline, whose embedding the llama2.c start token "
        "<s> takes; llama2.c export needs a model trained on text with newlines");
  if (info.context == 0 || info.context > c.context_length)
    throw ExportError(
        fmt::format("the training context {} must be between 1 and the model's "
                    "context_length {}",
                    info.context, c.context_length));
}

/// The weights in llama2.c's order and ids: the tables with "<s>" inserted (llama2c_table),
/// the other tensors as they are.
struct Llama2cWeights {
  std::vector<float> tokens;  ///< (vocab, dim)
  std::vector<float> wcls;    ///< (vocab, dim)
  std::size_t vocab = 0;
};

Llama2cWeights llama2c_weights(const Decoder& m, const Llama2cVocab& layout) {
  const std::size_t newline = static_cast<std::size_t>(layout.newline_id);
  Llama2cWeights w;
  w.tokens = llama2c_table(m.tok_embeddings.weight.value(), newline, layout.inserts_bos);
  // A character model's "<s>" scores as "<unk>"; a BPE model's output rows are kept, so its
  // logits are glass's id for id.
  const Array& out = m.output.weight.value();
  w.wcls = layout.inserts_bos ? llama2c_table(out, /*bos_row=*/0, true)
                              : std::vector<float>(out.begin(), out.end());
  w.vocab = w.tokens.size() / m.tok_embeddings.weight.value().shape()[1];
  return w;
}

/// The matrices in run.c's order between the norms, each kind for every layer in turn: wq, wk,
/// wv, wo (kinds 0-3), then w1, w2, w3 (kinds 4-6).
constexpr int kMatrixKinds = 7;
const Array& layer_matrix(const Block& b, int kind) {
  switch (kind) {
    case 0:
      return b.attention.wq.weight.value();
    case 1:
      return b.attention.wk.weight.value();
    case 2:
      return b.attention.wv.weight.value();
    case 3:
      return b.attention.wo.weight.value();
    case 4:
      return b.swiglu().w1.weight.value();
    case 5:
      return b.swiglu().w2.weight.value();
    default:
      return b.swiglu().w3.weight.value();
  }
}

/// Every layer's RMSNorm gain of one kind.
std::vector<const Array*> norms_of_layers(const Decoder& m, bool ffn) {
  std::vector<const Array*> out;
  for (const auto& layer : m.layers)
    out.push_back(&(ffn ? layer->ffn_norm : layer->attention_norm).weight.value());
  return out;
}

/// model.bin for run.c (float32; layout in export_llama2c.hpp).
std::string model_bin_f32(const Decoder& m, const ModelConfig& c, const Llama2cWeights& lw,
                          std::size_t seq_len) {
  const std::size_t head_dim = c.head_dim();
  Writer w;
  for (std::size_t v : {c.d_model, c.ffn_hidden, c.n_layers, c.n_heads, c.n_kv_heads})
    w.pod(static_cast<std::int32_t>(v));
  w.pod(-static_cast<std::int32_t>(lw.vocab));  // negative: wcls follows, not shared
  w.pod(static_cast<std::int32_t>(seq_len));

  w.floats(lw.tokens.data(), lw.tokens.size());
  for (const Array* a : norms_of_layers(m, false)) w.array(*a);
  for (int kind = 0; kind < 4; ++kind)  // wq, wk, wv, wo
    for (const auto& layer : m.layers) w.array(layer_matrix(*layer, kind));
  for (const Array* a : norms_of_layers(m, true)) w.array(*a);
  for (int kind = 4; kind < kMatrixKinds; ++kind)  // w1, w2, w3
    for (const auto& layer : m.layers) w.array(layer_matrix(*layer, kind));
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
  w.floats(lw.wcls.data(), lw.wcls.size());
  return std::move(w.bytes);
}

/// One matrix as runq.c maps it: its int8 values, then its float32 scales.
void write_int8(Writer& w, const float* a, std::size_t n, std::size_t group_size) {
  const Llama2cInt8 t = llama2c_quantize_int8(a, n, group_size);
  w.bytes.append(reinterpret_cast<const char*>(t.q.data()), t.q.size());
  w.floats(t.scales.data(), t.scales.size());
}

/// model.bin for runq.c (version 2, int8 in groups; layout in export_llama2c.hpp).
std::string model_bin_int8(const Decoder& m, const ModelConfig& c, const Llama2cWeights& lw,
                           std::size_t seq_len) {
  const std::size_t group_size = llama2c_group_size(c.d_model, c.ffn_hidden);
  // export.py: torch.equal(tok_embeddings, output); never so for glass's untied tables.
  const bool shared = lw.tokens == lw.wcls;
  Writer w;
  w.pod(kLlama2cMagic);
  w.pod(std::int32_t{2});  // version
  for (std::size_t v :
       {c.d_model, c.ffn_hidden, c.n_layers, c.n_heads, c.n_kv_heads, lw.vocab, seq_len})
    w.pod(static_cast<std::int32_t>(v));
  w.pod(static_cast<std::uint8_t>(shared));
  w.pod(static_cast<std::int32_t>(group_size));
  w.bytes.resize(kLlama2cHeaderBytes, '\0');

  for (const Array* a : norms_of_layers(m, false)) w.array(*a);
  for (const Array* a : norms_of_layers(m, true)) w.array(*a);
  w.array(m.norm.weight.value());
  write_int8(w, lw.tokens.data(), lw.tokens.size(), group_size);
  for (int kind = 0; kind < kMatrixKinds; ++kind)
    for (const auto& layer : m.layers) {
      const Array& a = layer_matrix(*layer, kind);
      write_int8(w, a.data(), a.size(), group_size);
    }
  if (!shared) write_int8(w, lw.wcls.data(), lw.wcls.size(), group_size);
  return std::move(w.bytes);
}

/// tokenizer.bin (llama2c_vocab): max_token_length, then per token its score, length, bytes.
std::string tokenizer_bin(const Llama2cVocab& layout) {
  std::int32_t max_len = 0;
  for (const auto& p : layout.pieces)
    max_len = std::max(max_len, static_cast<std::int32_t>(p.size()));
  Writer t;
  t.pod(max_len);
  for (std::size_t i = 0; i < layout.pieces.size(); ++i) {
    t.pod(layout.scores[i]);
    t.pod(static_cast<std::int32_t>(layout.pieces[i].size()));
    t.bytes += layout.pieces[i];
  }
  return std::move(t.bytes);
}

}  // namespace

const char* llama2c_type_name(Llama2cType type) {
  return type == Llama2cType::int8 ? "int8" : "f32";
}

std::size_t llama2c_group_size(std::size_t dim, std::size_t hidden_dim) {
  for (std::size_t gs = kLlama2cMaxGroupSize; gs >= kLlama2cMinGroupSize; gs /= 2)
    if (dim % gs == 0 && hidden_dim % gs == 0) return gs;
  throw ExportError(fmt::format(
      "llama2.c's int8 format cuts every row into groups of 8 to 64 weights, and no such group "
      "size divides both d_model {} and ffn_hidden {} (runq.c needs whole groups in every row); "
      "a model whose d_model and ffn_hidden are multiples of 8 can be exported in int8, this "
      "one in f32 (--type f32)",
      dim, hidden_dim));
}

Llama2cInt8 llama2c_quantize_int8(const float* w, std::size_t n, std::size_t group_size) {
  if (group_size == 0 || n % group_size != 0)
    throw std::invalid_argument(
        fmt::format("{} weights are not whole groups of {}", n, group_size));
  Llama2cInt8 out;
  out.q.resize(n);
  out.scales.resize(n / group_size);
  for (std::size_t g = 0; g < out.scales.size(); ++g) {
    const float* x = w + g * group_size;
    float wmax = 0.0f;
    for (std::size_t i = 0; i < group_size; ++i) wmax = std::max(wmax, std::abs(x[i]));
    const float scale = wmax / 127.0f;  // float = q * scale
    out.scales[g] = scale;
    for (std::size_t i = 0; i < group_size; ++i)
      // std::nearbyint in the default rounding mode: halves to even, as torch.round.
      out.q[g * group_size + i] =
          scale == 0.0f ? std::int8_t{0} : static_cast<std::int8_t>(std::nearbyint(x[i] / scale));
  }
  return out;
}

Llama2cFiles llama2c_bytes(const Checkpoint& loaded, const ExportInfo& info, Llama2cType type) {
  const Llama2cVocab layout = llama2c_vocab(loaded.tokenizer());
  check_runnable(loaded, info, layout);
  const ModelConfig& c = loaded.config();
  const Decoder& m = loaded.model();
  const Llama2cWeights lw = llama2c_weights(m, layout);
  std::string model = type == Llama2cType::int8 ? model_bin_int8(m, c, lw, info.context)
                                                : model_bin_f32(m, c, lw, info.context);
  return {std::move(model), tokenizer_bin(layout)};
}

void export_llama2c(const Checkpoint& model, const ExportInfo& info, const std::string& dir,
                    Llama2cType type) {
  const Llama2cFiles files = llama2c_bytes(model, info, type);
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
