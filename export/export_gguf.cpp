// GGUF writer for the `llama` architecture (see export_gguf.hpp for the layout).

#include "export/export_gguf.hpp"

#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "data/text.hpp"
#include "checkpoint/atomic_file.hpp"
#include "export/gguf_chat.hpp"

namespace glass {
namespace {

// GGUF value types (ggml's gguf.h: enum gguf_type).
enum GgufType : std::uint32_t { kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7, kString = 8, kArray = 9 };
// llama.cpp's token types (llama.h: enum llama_token_type).
enum TokenType : std::int32_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kByte = 6
};
constexpr char32_t kSpaceMark = U'\u2581';  // SentencePiece's "▁": a space in token texts
constexpr std::uint32_t kAlignment = 32;

/// general.file_type for the weights' type (llama.h: enum llama_ftype): "mostly" because the
/// norms stay F32 (and, for Q8_0/Q4_0, rows that cannot be blocked go to F16).
std::uint32_t file_type(WeightType type) {
  switch (type) {
    case WeightType::f32:
      return 0;  // LLAMA_FTYPE_ALL_F32
    case WeightType::f16:
      return 1;  // LLAMA_FTYPE_MOSTLY_F16
    case WeightType::q4_0:
      return 2;  // LLAMA_FTYPE_MOSTLY_Q4_0
    case WeightType::q8_0:
      return 7;  // LLAMA_FTYPE_MOSTLY_Q8_0
  }
  return 0;
}

/// Little-endian byte writer (the machines GlassLLM builds on are little-endian).
struct Writer {
  std::string bytes;
  std::uint64_t n_kv = 0;  // key/value pairs written so far
  template <typename T>
  void pod(T v) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    bytes.append(b, sizeof(T));
  }
  void str(const std::string& s) {
    pod<std::uint64_t>(s.size());
    bytes += s;
  }
  void key(const std::string& k, GgufType type) {
    ++n_kv;
    str(k);
    pod<std::uint32_t>(type);
  }
  void kv_u32(const std::string& k, std::uint32_t v) {
    key(k, kU32);
    pod(v);
  }
  void kv_f32(const std::string& k, float v) {
    key(k, kF32);
    pod(v);
  }
  void kv_bool(const std::string& k, bool v) {
    key(k, kBool);
    pod<std::uint8_t>(v ? 1 : 0);
  }
  void kv_str(const std::string& k, const std::string& v) {
    key(k, kString);
    str(v);
  }
  void pad_to(std::size_t alignment) {
    bytes.append((alignment - bytes.size() % alignment) % alignment, '\0');
  }
};

/// One tensor of the file: llama.cpp's name, its shape as PyTorch writes it (slowest axis
/// first), its float32 values in row-major order; then the type it is stored in (tensor_type)
/// and its data in that type.
struct GgufTensor {
  std::string name;
  std::vector<std::size_t> shape;
  std::vector<float> values;
  WeightType type = WeightType::f32;
  std::string data;
};

GgufTensor tensor(const std::string& name, const Array& a) {
  GgufTensor t{name, {a.shape().begin(), a.shape().end()}, {}, WeightType::f32, {}};
  t.values.assign(a.data(), a.data() + a.size());
  return t;
}

/// A (vocab, d_model) table with `extra` copies of row 0 (the unknown token's) appended.
GgufTensor with_unknown_rows(const std::string& name, const Array& a, std::size_t extra) {
  GgufTensor t = tensor(name, a);
  const std::size_t d = a.shape()[1];
  for (std::size_t i = 0; i < extra; ++i) t.values.insert(t.values.end(), a.data(), a.data() + d);
  t.shape[0] += extra;
  return t;
}

/// The tokenizer as llama.cpp's `llama` (SentencePiece-style) vocabulary: token texts, scores
/// and types, the special ids, whether a space goes before the text, and how many tokens it adds
/// after the model's own ids (their rows copy the unknown token's).
struct GgufVocab {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<std::int32_t> types;
  std::uint32_t unknown_id = 0, bos_id = 0, eos_id = 0;
  bool add_space_prefix = false;
  std::size_t extra = 0;
  std::string description;  ///< "GlassLLM ... model" for general.description
};

/// A character vocabulary's special tokens (the chat markers), after its characters, as CONTROL
/// tokens with score 0: llama.cpp matches their texts only where it parses special tokens.
void append_chat_tokens(GgufVocab& v, const std::vector<std::u32string>& specials) {
  for (const std::u32string& text : specials) {
    v.tokens.push_back(u32_to_utf8(text));
    v.scores.push_back(0.0f);
    v.types.push_back(kControl);
  }
}

/// A character vocabulary (see the header): the checkpoint's ids (its chat tokens CONTROL), then
/// <s>, </s> and the 256 byte tokens. With U+2581 in the vocabulary, the space and U+2581 become
/// user-defined tokens " " and "▁".
GgufVocab char_vocab(const Tokenizer& tokenizer) {
  const bool block = tokenizer.contains(kSpaceMark);
  GgufVocab v;
  v.tokens = {"<unk>"};
  v.scores = {0.0f};
  v.types = {kUnknown};
  for (std::size_t i = 0; i < tokenizer.chars().size(); ++i) {
    const char32_t ch = tokenizer.chars()[i];
    const bool user_defined = block && (ch == U' ' || ch == kSpaceMark);
    v.tokens.push_back(ch == U' ' && !block ? std::string("\u2581") : char_to_utf8(ch));
    v.scores.push_back(-static_cast<float>(i + 1));  // most frequent first, as ids are
    v.types.push_back(user_defined ? kUserDefined : kNormal);
  }
  append_chat_tokens(v, tokenizer.specials());
  const std::size_t V = v.tokens.size();
  v.bos_id = static_cast<std::uint32_t>(V);
  v.eos_id = static_cast<std::uint32_t>(V + 1);
  v.tokens.push_back("<s>");
  v.tokens.push_back("</s>");
  for (int k = 0; k < 2; ++k) {
    v.scores.push_back(0.0f);
    v.types.push_back(kControl);
  }
  for (int b = 0; b < 256; ++b) {
    v.tokens.push_back(fmt::format("<0x{:02X}>", b));
    v.scores.push_back(0.0f);
    v.types.push_back(kByte);
  }
  v.extra = v.tokens.size() - V;
  v.description = "GlassLLM character-level model";
  return v;
}

/// A BPE vocabulary (data/bpe_tokenizer.hpp) as it is: its texts (already SentencePiece's:
/// "▁" for the space, "<0xHH>" for the bytes), its scores, and the types of its fixed layout
/// (the special tokens added after the merges, the chat markers, CONTROL).
GgufVocab bpe_vocab(const BpeTokenizer& bpe) {
  GgufVocab v;
  for (std::int32_t id = 0; id < static_cast<std::int32_t>(bpe.vocab_size()); ++id) {
    v.tokens.push_back(bpe.token_text(id));
    v.scores.push_back(bpe.score(id));
    v.types.push_back(id == BpeTokenizer::kUnknownId                             ? kUnknown
                      : id == BpeTokenizer::kBosId || id == BpeTokenizer::kEosId ? kControl
                      : id >= bpe.first_added_id()                               ? kControl
                      : id < BpeTokenizer::kFirstCharId                          ? kByte
                                                                                 : kNormal);
  }
  v.unknown_id = BpeTokenizer::kUnknownId;
  v.bos_id = BpeTokenizer::kBosId;
  v.eos_id = BpeTokenizer::kEosId;
  v.add_space_prefix = true;  // the dummy prefix, as BpeTokenizer::normalize adds it
  v.description = fmt::format("GlassLLM BPE model ({} tokens)", bpe.vocab_size());
  return v;
}

/// The model's vocabulary in llama.cpp's layout. One of the two places this exporter asks the kind:
/// the layouts differ (a character model's ids get <s>, </s> and byte tokens after them; a BPE
/// vocabulary already has llama's layout).
GgufVocab gguf_vocab(const TextTokenizer& tokenizer) {
  if (const BpeTokenizer* bpe = tokenizer.bpe()) return bpe_vocab(*bpe);  // layout: see above
  return char_vocab(*tokenizer.chars());
}

}  // namespace

std::string gguf_note(const Checkpoint& model) {
  // Only a character vocabulary can hold U+2581 as a character of the text (BPE writes its
  // spaces with it).
  const Tokenizer* chars = model.tokenizer().chars();
  if (chars == nullptr || !chars->contains(kSpaceMark)) return "";
  return "the vocabulary holds U+2581 (\u2581), the character llama.cpp writes for a space: the "
         "space and U+2581 are written as user-defined tokens \" \" and \"\u2581\", which "
         "llama.cpp matches before it rewrites spaces and copies back as they are, so it reads "
         "both characters as glass does";
}

std::string gguf_bytes(const Checkpoint& loaded, const ExportInfo& info, WeightType type,
                       WeightCount* count) {
  const ModelConfig& c = loaded.config();
  const Decoder& m = loaded.model();
  refuse_recipe_options(c, "llama.cpp's `llama` architecture");
  if (info.context == 0 || info.context > c.context_length)
    throw ExportError(
        fmt::format("the training context {} must be between 1 and the model's "
                    "context_length {}",
                    info.context, c.context_length));

  const GgufVocab vocab = gguf_vocab(loaded.tokenizer());
  if (vocab.tokens.size() - vocab.extra != m.tok_embeddings.weight.value().shape()[0])
    throw ExportError(fmt::format("the tokenizer has {} tokens but the weights {} rows",
                                  vocab.tokens.size() - vocab.extra,
                                  m.tok_embeddings.weight.value().shape()[0]));
  const std::size_t extra = vocab.extra;

  std::vector<GgufTensor> tensors;
  tensors.push_back(with_unknown_rows("token_embd.weight", m.tok_embeddings.weight.value(), extra));
  for (std::size_t l = 0; l < m.layers.size(); ++l) {
    const Block& b = *m.layers[l];
    const std::string p = fmt::format("blk.{}.", l);
    tensors.push_back(tensor(p + "attn_norm.weight", b.attention_norm.weight.value()));
    tensors.push_back(tensor(p + "attn_q.weight", b.attention.wq.weight.value()));
    tensors.push_back(tensor(p + "attn_k.weight", b.attention.wk.weight.value()));
    tensors.push_back(tensor(p + "attn_v.weight", b.attention.wv.weight.value()));
    tensors.push_back(tensor(p + "attn_output.weight", b.attention.wo.weight.value()));
    tensors.push_back(tensor(p + "ffn_norm.weight", b.ffn_norm.weight.value()));
    tensors.push_back(tensor(p + "ffn_gate.weight", b.swiglu().w1.weight.value()));
    tensors.push_back(tensor(p + "ffn_down.weight", b.swiglu().w2.weight.value()));
    tensors.push_back(tensor(p + "ffn_up.weight", b.swiglu().w3.weight.value()));
  }
  tensors.push_back(tensor("output_norm.weight", m.norm.weight.value()));
  tensors.push_back(with_unknown_rows("output.weight", m.output.weight.value(), extra));
  WeightCount written;
  for (GgufTensor& t : tensors) {
    t.type = tensor_type(type, t.shape);
    t.data = quantize(t.type, t.values.data(), t.values.size());
    written.add(t.type, t.values.size());
  }
  if (count != nullptr) *count = written;

  Writer kv;
  kv.kv_str("general.architecture", "llama");
  kv.kv_str("general.name", info.name);
  kv.kv_u32("general.alignment", kAlignment);
  kv.kv_u32("general.file_type", file_type(type));
  if (!info.step.empty()) kv.kv_str("glass.training.step", info.step);
  if (!info.data.empty()) {
    kv.kv_str("glass.training.data", info.data);
    kv.kv_str("general.description", vocab.description + " trained on " + info.data +
                                         (info.step.empty() ? "" : " for " + info.step + " steps"));
  }
  kv.kv_u32("llama.vocab_size", static_cast<std::uint32_t>(vocab.tokens.size()));
  kv.kv_u32("llama.context_length", static_cast<std::uint32_t>(info.context));
  kv.kv_u32("llama.embedding_length", static_cast<std::uint32_t>(c.d_model));
  kv.kv_u32("llama.block_count", static_cast<std::uint32_t>(c.n_layers));
  kv.kv_u32("llama.feed_forward_length", static_cast<std::uint32_t>(c.ffn_hidden));
  kv.kv_u32("llama.attention.head_count", static_cast<std::uint32_t>(c.n_heads));
  kv.kv_u32("llama.attention.head_count_kv", static_cast<std::uint32_t>(c.n_kv_heads));
  kv.kv_f32("llama.attention.layer_norm_rms_epsilon", static_cast<float>(c.norm_eps));
  kv.kv_u32("llama.rope.dimension_count", static_cast<std::uint32_t>(c.head_dim()));
  kv.kv_f32("llama.rope.freq_base", static_cast<float>(c.rope_base));
  kv.kv_str("tokenizer.ggml.model", "llama");
  kv.key("tokenizer.ggml.tokens", kArray);
  kv.pod<std::uint32_t>(kString);
  kv.pod<std::uint64_t>(vocab.tokens.size());
  for (const auto& t : vocab.tokens) kv.str(t);
  kv.key("tokenizer.ggml.scores", kArray);
  kv.pod<std::uint32_t>(kF32);
  kv.pod<std::uint64_t>(vocab.scores.size());
  for (float s : vocab.scores) kv.pod(s);
  kv.key("tokenizer.ggml.token_type", kArray);
  kv.pod<std::uint32_t>(kI32);
  kv.pod<std::uint64_t>(vocab.types.size());
  for (std::int32_t t : vocab.types) kv.pod(t);
  kv.kv_u32("tokenizer.ggml.unknown_token_id", vocab.unknown_id);
  kv.kv_u32("tokenizer.ggml.bos_token_id", vocab.bos_id);
  // A chat model ends its answers with <|im_end|> (export/gguf_chat.hpp).
  const std::optional<GgufChatKeys> chat = gguf_chat_keys(loaded.tokenizer());
  kv.kv_u32("tokenizer.ggml.eos_token_id", chat ? chat->end_of_turn_id : vocab.eos_id);
  if (chat) kv.kv_u32("tokenizer.ggml.eot_token_id", chat->end_of_turn_id);
  kv.kv_bool("tokenizer.ggml.add_bos_token", false);
  kv.kv_bool("tokenizer.ggml.add_eos_token", false);
  kv.kv_bool("tokenizer.ggml.add_space_prefix", vocab.add_space_prefix);
  if (chat) kv.kv_str("tokenizer.chat_template", chat->chat_template);

  Writer out;
  out.bytes = "GGUF";
  out.pod<std::uint32_t>(3);
  out.pod<std::uint64_t>(tensors.size());
  out.pod<std::uint64_t>(kv.n_kv);
  out.bytes += kv.bytes;
  std::uint64_t offset = 0;
  for (const GgufTensor& t : tensors) {
    out.str(t.name);
    out.pod<std::uint32_t>(static_cast<std::uint32_t>(t.shape.size()));
    for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it) out.pod<std::uint64_t>(*it);
    out.pod<std::uint32_t>(ggml_type_id(t.type));
    out.pod<std::uint64_t>(offset);
    offset += t.data.size();
    offset += (kAlignment - offset % kAlignment) % kAlignment;
  }
  out.pad_to(kAlignment);
  for (const GgufTensor& t : tensors) {
    out.bytes += t.data;
    out.pad_to(kAlignment);
  }
  return out.bytes;
}

WeightCount export_gguf(const Checkpoint& model, const ExportInfo& info, const std::string& path,
                        WeightType type) {
  WeightCount count;
  write_file_atomic(path, gguf_bytes(model, info, type, &count));
  return count;
}

}  // namespace glass
