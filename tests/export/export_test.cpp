// The exporters (export/) against readers written here from the formats' descriptions:
// - GGUF (ggml's docs/gguf.md): header, every key llama.cpp's `llama` loader reads, the
//   vocabulary and the tensor table (names, reversed dims, aligned offsets, the values);
// - llama2.c (run.c's read_checkpoint / memory_map_weights / build_tokenizer): model.bin and
//   tokenizer.bin are read back as run.c reads them into a fresh Decoder, whose logits for a
//   prompt must equal the exported model's.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "autograd/tape.hpp"
#include "data/text.hpp"
#include "export/export_gguf.hpp"
#include "export/export_llama2c.hpp"
#include "export/gguf_chat.hpp"
#include "export_test_util.hpp"

namespace {

using glass::Array;
using glass::Checkpoint;
using glass::Decoder;
using glass::ExportError;
using glass::ExportInfo;
using glass::ModelConfig;
using glass::Tokenizer;
using glass_test::logits_of;
using glass_test::Reader;
using glass_test::small_bpe_model;
using glass_test::small_model;
using glass_test::small_shape;

// ---------------------------------------------------------------------------------------------
// GGUF
// ---------------------------------------------------------------------------------------------

/// One metadata value as read (scalars as double or string, arrays as vectors).
struct Value {
  std::uint32_t type = 0;
  double number = 0;
  std::string text;
  std::uint32_t elem_type = 0;
  std::vector<double> numbers;
  std::vector<std::string> texts;
};

struct GgufTensorInfo {
  std::vector<std::uint64_t> ne;
  std::uint32_t type;
  std::uint64_t offset;
};

struct Gguf {
  std::uint32_t version;
  std::map<std::string, Value> kv;
  std::vector<std::string> order;  // tensor names in file order
  std::map<std::string, GgufTensorInfo> tensors;
  std::size_t data_start;
};

double read_scalar(Reader& r, std::uint32_t type) {
  switch (type) {
    case 0:
      return r.pod<std::uint8_t>();
    case 4:
      return r.pod<std::uint32_t>();
    case 5:
      return r.pod<std::int32_t>();
    case 6:
      return r.pod<float>();
    case 7:
      return r.pod<std::uint8_t>();
    case 10:
      return static_cast<double>(r.pod<std::uint64_t>());
    case 12:
      return r.pod<double>();
  }
  throw std::runtime_error("unexpected GGUF type " + std::to_string(type));
}

Gguf read_gguf(const std::string& bytes) {
  Reader r{bytes};
  Gguf g;
  EXPECT_EQ(bytes.substr(0, 4), "GGUF");
  r.pos = 4;
  g.version = r.pod<std::uint32_t>();
  const auto n_tensors = r.pod<std::uint64_t>();
  const auto n_kv = r.pod<std::uint64_t>();
  for (std::uint64_t i = 0; i < n_kv; ++i) {
    const std::string key = r.str();
    Value v;
    v.type = r.pod<std::uint32_t>();
    if (v.type == 8) {
      v.text = r.str();
    } else if (v.type == 9) {
      v.elem_type = r.pod<std::uint32_t>();
      const auto n = r.pod<std::uint64_t>();
      for (std::uint64_t k = 0; k < n; ++k) {
        if (v.elem_type == 8)
          v.texts.push_back(r.str());
        else
          v.numbers.push_back(read_scalar(r, v.elem_type));
      }
    } else {
      v.number = read_scalar(r, v.type);
    }
    EXPECT_EQ(g.kv.count(key), 0u) << "key written twice: " << key;
    g.kv[key] = v;
  }
  for (std::uint64_t i = 0; i < n_tensors; ++i) {
    const std::string name = r.str();
    GgufTensorInfo t;
    const auto n_dims = r.pod<std::uint32_t>();
    for (std::uint32_t d = 0; d < n_dims; ++d) t.ne.push_back(r.pod<std::uint64_t>());
    t.type = r.pod<std::uint32_t>();
    t.offset = r.pod<std::uint64_t>();
    g.order.push_back(name);
    g.tensors[name] = t;
  }
  g.data_start = (r.pos + 31) / 32 * 32;
  return g;
}

/// The float32 values of a tensor of the file.
std::vector<float> tensor_values(const std::string& bytes, const Gguf& g, const std::string& name) {
  const GgufTensorInfo& t = g.tensors.at(name);
  std::size_t n = 1;
  for (auto d : t.ne) n *= d;
  std::vector<float> v(n);
  std::memcpy(v.data(), bytes.data() + g.data_start + t.offset, n * sizeof(float));
  return v;
}

std::vector<float> flat(const Array& a) { return {a.data(), a.data() + a.size()}; }

TEST(ExportGguf, HeaderKeysAndVocabulary) {
  const Checkpoint m = small_model();
  const std::string bytes = glass::gguf_bytes(m, {"tiny", "123", 24, "domcasmurro.txt"});
  const Gguf g = read_gguf(bytes);
  EXPECT_EQ(g.version, 3u);
  auto u32 = [&](const std::string& k) {
    EXPECT_EQ(g.kv.at(k).type, 4u) << k;
    return g.kv.at(k).number;
  };
  EXPECT_EQ(g.kv.at("general.architecture").text, "llama");
  EXPECT_EQ(g.kv.at("general.name").text, "tiny");
  EXPECT_EQ(g.kv.at("glass.training.step").text, "123");
  EXPECT_EQ(g.kv.at("glass.training.data").text, "domcasmurro.txt");
  EXPECT_EQ(g.kv.at("general.description").text,
            "GlassLLM character-level model trained on domcasmurro.txt for 123 steps");
  EXPECT_EQ(u32("general.alignment"), 32);
  EXPECT_EQ(u32("general.file_type"), 0);      // all F32
  EXPECT_EQ(u32("llama.context_length"), 24);  // the training context, not the RoPE table size
  EXPECT_EQ(u32("llama.embedding_length"), 16);
  EXPECT_EQ(u32("llama.block_count"), 2);
  EXPECT_EQ(u32("llama.feed_forward_length"), 24);
  EXPECT_EQ(u32("llama.attention.head_count"), 4);
  EXPECT_EQ(u32("llama.attention.head_count_kv"), 2);
  EXPECT_EQ(u32("llama.rope.dimension_count"), 4);  // head_dim: every pair of a head turns
  EXPECT_EQ(g.kv.at("llama.attention.layer_norm_rms_epsilon").type, 6u);
  EXPECT_FLOAT_EQ(g.kv.at("llama.attention.layer_norm_rms_epsilon").number, 1e-5f);
  EXPECT_FLOAT_EQ(g.kv.at("llama.rope.freq_base").number, 10000.0f);

  // 10 checkpoint ids + <s> </s> + 256 bytes.
  EXPECT_EQ(g.kv.at("tokenizer.ggml.model").text, "llama");
  const auto& tokens = g.kv.at("tokenizer.ggml.tokens").texts;
  ASSERT_EQ(tokens.size(), 10u + 2 + 256);
  EXPECT_EQ(u32("llama.vocab_size"), 268);
  const std::vector<std::string> first = {"<unk>",  "\u2581", "e", "a",   "\n",   "s",     "o",
                                          "\u00e9", ",",      "C", "<s>", "</s>", "<0x00>"};
  for (std::size_t i = 0; i < first.size(); ++i) EXPECT_EQ(tokens[i], first[i]) << i;
  EXPECT_EQ(tokens[12 + 0x0A], "<0x0A>");
  EXPECT_EQ(tokens.back(), "<0xFF>");
  const auto& types = g.kv.at("tokenizer.ggml.token_type").numbers;
  ASSERT_EQ(types.size(), tokens.size());
  EXPECT_EQ(types[0], 2);   // UNKNOWN
  EXPECT_EQ(types[1], 1);   // NORMAL
  EXPECT_EQ(types[10], 3);  // CONTROL
  EXPECT_EQ(types[11], 3);
  EXPECT_EQ(types[12], 6);  // BYTE
  EXPECT_EQ(g.kv.at("tokenizer.ggml.scores").numbers.size(), tokens.size());
  EXPECT_EQ(u32("tokenizer.ggml.unknown_token_id"), 0);
  EXPECT_EQ(u32("tokenizer.ggml.bos_token_id"), 10);
  EXPECT_EQ(u32("tokenizer.ggml.eos_token_id"), 11);
  for (const char* k : {"tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_eos_token",
                        "tokenizer.ggml.add_space_prefix"}) {
    EXPECT_EQ(g.kv.at(k).type, 7u) << k;
    EXPECT_EQ(g.kv.at(k).number, 0) << k;
  }
}

TEST(ExportGguf, TensorTable) {
  const Checkpoint m = small_model();
  const std::string bytes = glass::gguf_bytes(m, {"tiny", "", 32, ""});
  const Gguf g = read_gguf(bytes);
  EXPECT_EQ(g.kv.count("glass.training.step"), 0u);  // no step: no key
  ASSERT_EQ(g.order.size(), 1u + 2 * 9 + 2);
  EXPECT_EQ(g.order.front(), "token_embd.weight");
  EXPECT_EQ(g.order[1], "blk.0.attn_norm.weight");
  EXPECT_EQ(g.order.back(), "output.weight");
  using Ne = std::vector<std::uint64_t>;
  // ne[0] is the fastest axis: an (out, in) weight has ne = [in, out].
  const std::map<std::string, Ne> want = {
      {"token_embd.weight", {16, 268}},    {"output_norm.weight", {16}},
      {"output.weight", {16, 268}},        {"blk.1.attn_norm.weight", {16}},
      {"blk.1.attn_q.weight", {16, 16}},   {"blk.1.attn_k.weight", {16, 8}},
      {"blk.1.attn_v.weight", {16, 8}},    {"blk.1.attn_output.weight", {16, 16}},
      {"blk.1.ffn_norm.weight", {16}},     {"blk.1.ffn_gate.weight", {16, 24}},
      {"blk.1.ffn_down.weight", {24, 16}}, {"blk.1.ffn_up.weight", {16, 24}}};
  for (const auto& [name, ne] : want) EXPECT_EQ(g.tensors.at(name).ne, ne) << name;
  // Offsets: F32, aligned to 32, in file order, back to back up to the padding.
  std::uint64_t expected_offset = 0;
  for (const auto& name : g.order) {
    const GgufTensorInfo& t = g.tensors.at(name);
    EXPECT_EQ(t.type, 0u) << name;
    EXPECT_EQ(t.offset, expected_offset) << name;
    std::uint64_t n = 4;
    for (auto d : t.ne) n *= d;
    expected_offset = (t.offset + n + 31) / 32 * 32;
  }
  EXPECT_EQ(bytes.size(), g.data_start + expected_offset);

  // The values: Meta-layout weights unchanged (GlassLLM's RoPE turns the interleaved pairs
  // (2i, 2i+1), as llama.cpp's LLAMA_ROPE_TYPE_NORM does), the added tokens' rows copy <unk>'s.
  const Decoder& d = m.model();
  EXPECT_EQ(tensor_values(bytes, g, "blk.1.attn_q.weight"),
            flat(d.layers[1]->attention.wq.weight.value()));
  EXPECT_EQ(tensor_values(bytes, g, "blk.0.attn_k.weight"),
            flat(d.layers[0]->attention.wk.weight.value()));
  EXPECT_EQ(tensor_values(bytes, g, "blk.1.ffn_down.weight"),
            flat(d.layers[1]->swiglu().w2.weight.value()));
  EXPECT_EQ(tensor_values(bytes, g, "blk.0.ffn_norm.weight"),
            flat(d.layers[0]->ffn_norm.weight.value()));
  EXPECT_EQ(tensor_values(bytes, g, "output_norm.weight"), flat(d.norm.weight.value()));
  for (const char* name : {"token_embd.weight", "output.weight"}) {
    const Array& w = std::string(name) == "output.weight" ? d.output.weight.value()
                                                          : d.tok_embeddings.weight.value();
    const std::vector<float> v = tensor_values(bytes, g, name);
    const std::vector<float> orig = flat(w);
    EXPECT_TRUE(std::equal(orig.begin(), orig.end(), v.begin())) << name;
    for (std::size_t row = 10; row < 268; ++row)
      EXPECT_TRUE(std::equal(v.begin() + row * 16, v.begin() + row * 16 + 16, orig.begin()))
          << name << " row " << row;
  }
}

/// A model whose rows can be blocked (d_model 32) but for w2's (ffn_hidden 40), as the default
/// model's w2 rows (344) cannot.
Checkpoint blockable_model() {
  ModelConfig c;
  Checkpoint small = small_model();
  c = small_shape(c, small.config().vocab_size);
  c.d_model = 32;
  c.ffn_hidden = 40;
  auto model = std::make_unique<Decoder>(c, 7);
  return Checkpoint(c, small.tokenizer(), std::move(model), 0, {});
}

TEST(ExportGguf, QuantizedTypesBlockTheMatricesNormsStayF32AndUnblockableRowsGoToF16) {
  const Checkpoint m = blockable_model();
  using glass::WeightType;
  // ggml_type ids and llama_ftype values, as llama.h and ggml.h number them.
  const std::vector<std::tuple<WeightType, std::uint32_t, double>> types = {
      {WeightType::f32, 0, 0},
      {WeightType::f16, 1, 1},
      {WeightType::q8_0, 8, 7},
      {WeightType::q4_0, 2, 2}};
  for (const auto& [type, type_id, file_type] : types) {
    glass::WeightCount count;
    const std::string bytes = glass::gguf_bytes(m, {"tiny", "", 32, ""}, type, &count);
    const Gguf g = read_gguf(bytes);
    const std::string tag = glass::weight_type_name(type);
    EXPECT_EQ(g.kv.at("general.file_type").number, file_type) << tag;
    std::uint64_t expected_offset = 0, data_bytes = 0, weights = 0;
    for (const std::string& name : g.order) {
      const GgufTensorInfo& t = g.tensors.at(name);
      const bool norm = t.ne.size() == 1, down = name.find("ffn_down") != std::string::npos;
      const std::uint32_t want = norm ? 0 : down && type_id > 1 ? 1 : type_id;
      EXPECT_EQ(t.type, want) << tag << " " << name;
      std::size_t n = 1;
      for (auto d : t.ne) n *= d;
      // Bytes per tensor: 4 or 2 per weight, 34 per 32 (Q8_0), 18 per 32 (Q4_0).
      const std::size_t size = want == 0   ? 4 * n
                               : want == 1 ? 2 * n
                               : want == 8 ? n / 32 * 34
                                           : n / 32 * 18;
      EXPECT_EQ(t.offset, expected_offset) << tag << " " << name;
      expected_offset = (t.offset + size + 31) / 32 * 32;
      data_bytes += size;
      weights += n;
    }
    EXPECT_EQ(bytes.size(), g.data_start + expected_offset) << tag;
    EXPECT_EQ(count.total(), weights) << tag;
    EXPECT_EQ(count.bytes, data_bytes) << tag;
    // The data is the reference quantizer's bytes of the weights (quantize_test.cpp checks them
    // against ggml's algorithm).
    const Array& wq = m.model().layers[1]->attention.wq.weight.value();
    const GgufTensorInfo& q = g.tensors.at("blk.1.attn_q.weight");
    const std::string block_bytes =
        glass::quantize(glass::tensor_type(type, {32, 32}), wq.data(), wq.size());
    EXPECT_EQ(bytes.substr(g.data_start + q.offset, block_bytes.size()), block_bytes) << tag;
  }
  // Q8_0 costs 8.5 bits per weight in its blocks; the file pays more for its F16 and F32 parts.
  glass::WeightCount q8;
  glass::gguf_bytes(m, {"tiny", "", 32, ""}, WeightType::q8_0, &q8);
  EXPECT_GT(q8.bits_per_weight(), 8.5);
  EXPECT_LT(q8.bits_per_weight(), 16.0);
}

TEST(ExportGguf, RefusesWhatItCannotWrite) {
  const Checkpoint m = small_model();
  EXPECT_THROW(glass::gguf_bytes(m, {"tiny", "", 0, ""}), ExportError);
  EXPECT_THROW(glass::gguf_bytes(m, {"tiny", "", 33, ""}), ExportError);  // above context_length
  EXPECT_EQ(glass::gguf_note(m), "");  // nothing to say about an ordinary vocabulary
}

/// Whether every text of a GGUF vocabulary is different (llama.cpp's loader aborts otherwise:
/// its text -> id map must hold as many entries as there are ids).
bool all_different(const std::vector<std::string>& texts) {
  return std::set<std::string>(texts.begin(), texts.end()).size() == texts.size();
}

TEST(ExportGguf, AVocabularyHoldingU2581WritesTheSpaceAndU2581AsUserDefinedTokens) {
  // ids: 0 unknown, 1 ' ', 2 'a', 3 U+2581, 4 '\n'
  const Checkpoint m = small_model({}, U" a\u2581\n");
  const Gguf g = read_gguf(glass::gguf_bytes(m, {"tiny", "", 8, ""}));
  const auto& tokens = g.kv.at("tokenizer.ggml.tokens").texts;
  const auto& types = g.kv.at("tokenizer.ggml.token_type").numbers;
  ASSERT_EQ(tokens.size(), 5u + 2 + 256);
  const std::vector<std::string> first = {"<unk>", " ", "a", "\u2581", "\n", "<s>", "</s>"};
  const std::vector<double> first_types = {2, 4, 1, 4, 1, 3, 3};  // 4 = USER_DEFINED
  for (std::size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(tokens[i], first[i]) << i;
    EXPECT_EQ(types[i], first_types[i]) << i;
  }
  EXPECT_TRUE(all_different(tokens));
  EXPECT_EQ(g.kv.at("tokenizer.ggml.add_space_prefix").number, 0);
  const std::string note = glass::gguf_note(m);
  EXPECT_NE(note.find("U+2581"), std::string::npos) << note;
  EXPECT_NE(note.find("user-defined"), std::string::npos) << note;
}

TEST(ExportGguf, ABpeVocabularyIsWrittenAsItIsWithItsScores) {
  const Checkpoint m = small_bpe_model();
  const glass::BpeTokenizer& bpe = *m.tokenizer().bpe();
  ASSERT_EQ(bpe.vocab_size(), 277u);
  const std::string bytes = glass::gguf_bytes(m, {"tiny", "5", 24, "gatos.txt"});
  const Gguf g = read_gguf(bytes);
  EXPECT_EQ(g.kv.at("general.description").text,
            "GlassLLM BPE model (277 tokens) trained on gatos.txt for 5 steps");
  EXPECT_EQ(g.kv.at("tokenizer.ggml.model").text, "llama");
  const auto& tokens = g.kv.at("tokenizer.ggml.tokens").texts;
  const auto& scores = g.kv.at("tokenizer.ggml.scores").numbers;
  const auto& types = g.kv.at("tokenizer.ggml.token_type").numbers;
  // No token added: the vocabulary already has its specials and bytes, and the weights' rows.
  ASSERT_EQ(tokens.size(), 277u);
  EXPECT_EQ(g.kv.at("llama.vocab_size").number, 277);
  EXPECT_EQ(g.tensors.at("token_embd.weight").ne, (std::vector<std::uint64_t>{16, 277}));
  EXPECT_EQ(g.tensors.at("output.weight").ne, (std::vector<std::uint64_t>{16, 277}));
  EXPECT_EQ(tensor_values(bytes, g, "output.weight"), flat(m.model().output.weight.value()));
  EXPECT_TRUE(all_different(tokens));
  // SentencePiece's layout and types (llama.h: 2 UNKNOWN, 3 CONTROL, 6 BYTE, 1 NORMAL).
  EXPECT_EQ(tokens[0], "<unk>");
  EXPECT_EQ(tokens[1], "<s>");
  EXPECT_EQ(tokens[2], "</s>");
  EXPECT_EQ(tokens[3], "<0x00>");
  EXPECT_EQ(tokens[3 + 0x0A], "<0x0A>");
  EXPECT_EQ(tokens[258], "<0xFF>");
  EXPECT_EQ(tokens[259], "\u2581");  // the most frequent character: the space, as '▁'
  EXPECT_EQ(types[0], 2);
  EXPECT_EQ(types[1], 3);
  EXPECT_EQ(types[2], 3);
  EXPECT_EQ(types[3], 6);
  EXPECT_EQ(types[258], 6);
  for (std::size_t id = 259; id < tokens.size(); ++id) EXPECT_EQ(types[id], 1) << id;
  for (std::int32_t id = 0; id < 277; ++id) {
    EXPECT_EQ(tokens[id], bpe.token_text(id)) << id;
    EXPECT_EQ(scores[id], bpe.score(id)) << id;
  }
  // Counted by hand: the pairs ("▁", "o"), ("a", "t") and ("t", "o") occur 6 times each, and
  // "▁" has the smallest id (the most frequent character, 15 times): the first merge (id 259 +
  // 12 characters) is "▁o", scored 0; the second scores -1; the base characters score below
  // every merge, the last (id 270, the 12th) -(6 merges + 11).
  EXPECT_EQ(tokens[271], "\u2581o");
  EXPECT_EQ(scores[271], 0);
  EXPECT_EQ(scores[272], -1);
  EXPECT_EQ(scores[270], -(6 + 11));
  EXPECT_EQ(g.kv.at("tokenizer.ggml.unknown_token_id").number, 0);
  EXPECT_EQ(g.kv.at("tokenizer.ggml.bos_token_id").number, 1);
  EXPECT_EQ(g.kv.at("tokenizer.ggml.eos_token_id").number, 2);
  EXPECT_EQ(g.kv.at("tokenizer.ggml.add_bos_token").number, 0);     // glass reads no BOS
  EXPECT_EQ(g.kv.at("tokenizer.ggml.add_space_prefix").number, 1);  // the dummy prefix
  EXPECT_EQ(glass::gguf_note(m), "");
}

/// `base` as a chat model: its tokenizer with the chat tokens (two more ids), random weights
/// with their rows.
Checkpoint with_chat_tokens(const Checkpoint& base) {
  glass::TextTokenizer tokenizer = base.tokenizer().with_chat_tokens();
  const ModelConfig c = small_shape(base.config(), tokenizer.vocab_size());
  return Checkpoint(c, std::move(tokenizer), std::make_unique<Decoder>(c, 7), 0,
                    glass::SaveOrigin{});
}

TEST(ExportGguf, AChatModelHasControlMarkersItsTemplateAndEndsAtImEnd) {
  const Checkpoint base = small_model();
  const Gguf plain = read_gguf(glass::gguf_bytes(base, {"tiny", "", 8, ""}));
  EXPECT_EQ(plain.kv.count("tokenizer.chat_template"), 0u);  // a base model has no template
  EXPECT_EQ(plain.kv.count("tokenizer.ggml.eot_token_id"), 0u);
  EXPECT_EQ(plain.kv.at("tokenizer.ggml.eos_token_id").number, 11);  // "</s>"

  // A character model: ids 0..9 as before, 10 <|im_start|> and 11 <|im_end|>, then <s>, </s>.
  const Checkpoint chat = with_chat_tokens(base);
  const std::string bytes = glass::gguf_bytes(chat, {"tiny", "", 8, ""});
  const Gguf g = read_gguf(bytes);
  const auto& tokens = g.kv.at("tokenizer.ggml.tokens").texts;
  const auto& types = g.kv.at("tokenizer.ggml.token_type").numbers;
  ASSERT_EQ(tokens.size(), 12u + 2 + 256);
  EXPECT_EQ(tokens[9], "C");
  EXPECT_EQ(tokens[10], "<|im_start|>");
  EXPECT_EQ(tokens[11], "<|im_end|>");
  EXPECT_EQ(tokens[12], "<s>");
  EXPECT_EQ(tokens[13], "</s>");
  for (std::size_t id : {10, 11, 12, 13}) EXPECT_EQ(types[id], 3) << id;  // CONTROL
  EXPECT_EQ(g.kv.at("tokenizer.ggml.bos_token_id").number, 12);
  EXPECT_EQ(g.kv.at("tokenizer.ggml.eos_token_id").number, 11);  // <|im_end|>, not </s>
  EXPECT_EQ(g.kv.at("tokenizer.ggml.eot_token_id").type, 4u);
  EXPECT_EQ(g.kv.at("tokenizer.ggml.eot_token_id").number, 11);
  EXPECT_EQ(g.kv.at("tokenizer.chat_template").text, glass::chatml_jinja());
  // The markers keep their trained rows; the added tokens copy the unknown token's.
  const std::vector<float> out = tensor_values(bytes, g, "output.weight");
  const std::vector<float> trained = flat(chat.model().output.weight.value());
  ASSERT_EQ(out.size(), (12u + 258) * 16);
  EXPECT_TRUE(std::equal(trained.begin(), trained.end(), out.begin()));
  EXPECT_TRUE(std::equal(out.begin(), out.begin() + 16, out.begin() + 12 * 16));

  // BPE: the markers after the merges (ids 277 and 278), nothing added.
  const Checkpoint bpe_chat = with_chat_tokens(small_bpe_model());
  const Gguf b = read_gguf(glass::gguf_bytes(bpe_chat, {"tiny", "", 8, ""}));
  const auto& bpe_tokens = b.kv.at("tokenizer.ggml.tokens").texts;
  const auto& bpe_types = b.kv.at("tokenizer.ggml.token_type").numbers;
  ASSERT_EQ(bpe_tokens.size(), 279u);
  EXPECT_EQ(bpe_tokens[277], "<|im_start|>");
  EXPECT_EQ(bpe_tokens[278], "<|im_end|>");
  EXPECT_EQ(bpe_types[276], 1);
  EXPECT_EQ(bpe_types[277], 3);
  EXPECT_EQ(bpe_types[278], 3);
  EXPECT_EQ(b.kv.at("tokenizer.ggml.eos_token_id").number, 278);
  EXPECT_EQ(b.kv.at("tokenizer.ggml.eot_token_id").number, 278);
  EXPECT_EQ(b.kv.at("tokenizer.ggml.bos_token_id").number, 1);
  EXPECT_EQ(b.kv.at("tokenizer.chat_template").text, glass::chatml_jinja());
}

// ---------------------------------------------------------------------------------------------
// llama2.c
// ---------------------------------------------------------------------------------------------

/// model.bin and tokenizer.bin read back as run.c reads them, into a new Decoder and a
/// piece -> id table.
struct Llama2c {
  std::int32_t header[7];
  std::unique_ptr<Decoder> model;
  std::vector<std::string> pieces;
  std::vector<float> scores;
  std::int32_t max_token_length;
  std::vector<float> freq_cis_real, freq_cis_imag;
};

Llama2c read_llama2c(const glass::Llama2cFiles& files) {
  Llama2c out;
  Reader r{files.model_bin};
  for (auto& h : out.header) h = r.pod<std::int32_t>();  // Config: 7 ints
  const std::size_t dim = out.header[0], hidden = out.header[1], L = out.header[2],
                    n_heads = out.header[3], n_kv_heads = out.header[4], seq_len = out.header[6];
  const bool shared_weights = out.header[5] > 0;
  EXPECT_FALSE(shared_weights);
  const std::size_t vocab = static_cast<std::size_t>(std::abs(out.header[5]));
  const std::size_t head_size = dim / n_heads, kv_dim = n_kv_heads * head_size;

  ModelConfig c;
  c.vocab_size = vocab;
  c.d_model = dim;
  c.n_layers = L;
  c.n_heads = n_heads;
  c.n_kv_heads = n_kv_heads;
  c.ffn_hidden = hidden;
  c.context_length = seq_len;
  c.rope_base = 10000;  // what run.c computes with
  c.norm_eps = 1e-5;
  out.model = std::make_unique<Decoder>(c, 1);
  Decoder& d = *out.model;

  // memory_map_weights: a pointer walking the floats after the header.
  const float* ptr =
      reinterpret_cast<const float*>(files.model_bin.data() + 7 * sizeof(std::int32_t));
  const float* end =
      reinterpret_cast<const float*>(files.model_bin.data() + files.model_bin.size());
  auto take = [&](Array& a, std::size_t n) {
    EXPECT_EQ(a.size(), n);
    EXPECT_LE(ptr + n, end);
    std::copy(ptr, ptr + n, a.data());
    ptr += n;
  };
  take(d.tok_embeddings.weight.value(), vocab * dim);
  for (std::size_t l = 0; l < L; ++l) take(d.layers[l]->attention_norm.weight.value(), dim);
  for (std::size_t l = 0; l < L; ++l)
    take(d.layers[l]->attention.wq.weight.value(), dim * n_heads * head_size);
  for (std::size_t l = 0; l < L; ++l) take(d.layers[l]->attention.wk.weight.value(), dim * kv_dim);
  for (std::size_t l = 0; l < L; ++l) take(d.layers[l]->attention.wv.weight.value(), dim * kv_dim);
  for (std::size_t l = 0; l < L; ++l)
    take(d.layers[l]->attention.wo.weight.value(), n_heads * head_size * dim);
  for (std::size_t l = 0; l < L; ++l) take(d.layers[l]->ffn_norm.weight.value(), dim);
  for (std::size_t l = 0; l < L; ++l)
    take(dynamic_cast<glass::SwiGLU&>(*d.layers[l]->feed_forward).w1.weight.value(), dim * hidden);
  for (std::size_t l = 0; l < L; ++l)
    take(dynamic_cast<glass::SwiGLU&>(*d.layers[l]->feed_forward).w2.weight.value(), hidden * dim);
  for (std::size_t l = 0; l < L; ++l)
    take(dynamic_cast<glass::SwiGLU&>(*d.layers[l]->feed_forward).w3.weight.value(), dim * hidden);
  take(d.norm.weight.value(), dim);
  out.freq_cis_real.assign(ptr, ptr + seq_len * head_size / 2);
  ptr += seq_len * head_size / 2;  // run.c: skip what used to be freq_cis_real
  out.freq_cis_imag.assign(ptr, ptr + seq_len * head_size / 2);
  ptr += seq_len * head_size / 2;              // ... and freq_cis_imag
  take(d.output.weight.value(), vocab * dim);  // wcls
  EXPECT_EQ(ptr, end) << "bytes after wcls";

  // build_tokenizer: max_token_length, then per token score, len, bytes.
  Reader t{files.tokenizer_bin};
  out.max_token_length = t.pod<std::int32_t>();
  for (std::size_t i = 0; i < vocab; ++i) {
    out.scores.push_back(t.pod<float>());
    const auto len = t.pod<std::int32_t>();
    out.pieces.push_back(files.tokenizer_bin.substr(t.pos, len));
    t.pos += len;
  }
  EXPECT_EQ(t.pos, files.tokenizer_bin.size()) << "bytes after the last token";
  return out;
}

TEST(ExportLlama2c, ReadBackAsRunCGivesTheSameLogits) {
  const Checkpoint m = small_model();
  const glass::Llama2cFiles files = glass::llama2c_bytes(m, {"tiny", "123", 24, ""});
  const Llama2c l = read_llama2c(files);
  // Header: dim, hidden_dim, n_layers, n_heads, n_kv_heads, -(vocab + <s>), seq_len.
  const std::int32_t header[7] = {16, 24, 2, 4, 2, -11, 24};
  for (int i = 0; i < 7; ++i) EXPECT_EQ(l.header[i], header[i]) << i;
  const std::vector<std::string> pieces = {"<unk>", "<s>", " ",      "e", "a", "\n",
                                           "s",     "o",   "\u00e9", ",", "C"};
  EXPECT_EQ(l.pieces, pieces);
  EXPECT_EQ(l.max_token_length, 5);  // "<unk>"
  // The RoPE tables run.c skips: cos / sin of pos * 10000^(-2i/4), i = 0, 1; pos 3, i = 1:
  // angle 3 * 10000^(-1/2) = 0.03.
  ASSERT_EQ(l.freq_cis_real.size(), 24u * 2);
  EXPECT_FLOAT_EQ(l.freq_cis_real[3 * 2 + 1], std::cos(0.03f));
  EXPECT_FLOAT_EQ(l.freq_cis_imag[3 * 2 + 1], std::sin(0.03f));
  EXPECT_FLOAT_EQ(l.freq_cis_imag[5 * 2 + 0], std::sin(5.0f));

  // The prompt as run.c encodes it (one lookup per UTF-8 character, BOS = 1 first; run.c's
  // dummy-prefix space is a character like the others), and as GlassLLM does, where "<s>"
  // stands for the newline whose embedding it has.
  const std::string prompt = " Cosa, é";
  std::vector<std::int32_t> run_c_ids{glass::kLlama2cBosId};
  std::vector<std::int32_t> glass_ids{m.tokenizer().chars()->id_of(U'\n')};
  for (char32_t ch : glass::utf8_to_u32(prompt)) {
    const std::string piece = glass::char_to_utf8(ch);
    const auto it = std::find(l.pieces.begin(), l.pieces.end(), piece);
    ASSERT_NE(it, l.pieces.end()) << piece;
    run_c_ids.push_back(static_cast<std::int32_t>(it - l.pieces.begin()));
    glass_ids.push_back(m.tokenizer().chars()->id_of(ch));
  }
  for (std::size_t i = 1; i < glass_ids.size(); ++i)
    EXPECT_EQ(run_c_ids[i], glass::llama2c_id(glass_ids[i]));

  const auto want = logits_of(m.model(), glass_ids);
  const auto got = logits_of(*l.model, run_c_ids);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t t = 0; t < want.size(); ++t) {
    ASSERT_EQ(got[t].size(), want[t].size() + 1);
    for (std::size_t g = 0; g < want[t].size(); ++g)
      EXPECT_NEAR(got[t][glass::llama2c_id(static_cast<std::int32_t>(g))], want[t][g], 1e-4)
          << "t " << t << " id " << g;
    // <s> scores exactly as <unk>, and greedy run.c (first of equal maxima) never picks it.
    EXPECT_EQ(got[t][1], got[t][0]);
  }
}

/// run.c's encode (llama2.c, run.c: encode), written again here from its source over the
/// pieces and scores read back from tokenizer.bin: BOS = 1, the dummy prefix " " before a
/// non-empty text, each UTF-8 character looked up (or its bytes as ids byte + 3), then the
/// adjacent pair whose concatenation is a piece of best score (the leftmost on ties, since only
/// a strictly better score replaces the best) merged until none is.
std::vector<std::int32_t> run_c_encode(const Llama2c& l, const std::string& text) {
  const auto lookup = [&](const std::string& piece) -> std::int32_t {
    const auto it = std::find(l.pieces.begin(), l.pieces.end(), piece);
    return it == l.pieces.end() ? -1 : static_cast<std::int32_t>(it - l.pieces.begin());
  };
  std::vector<std::int32_t> ids{1};
  if (!text.empty()) ids.push_back(lookup(" "));
  for (std::size_t i = 0; i < text.size();) {
    std::size_t n = 1;
    while (i + n < text.size() && (static_cast<unsigned char>(text[i + n]) & 0xC0) == 0x80 && n < 4)
      ++n;
    const std::int32_t id = lookup(text.substr(i, n));
    if (id >= 0) {
      ids.push_back(id);
    } else {
      for (std::size_t k = 0; k < n; ++k)
        ids.push_back(static_cast<unsigned char>(text[i + k]) + 3);
    }
    i += n;
  }
  while (true) {
    float best_score = -1e10f;
    std::int32_t best_id = -1;
    std::size_t best_idx = 0;
    for (std::size_t i = 0; i + 1 < ids.size(); ++i) {
      const std::int32_t id = lookup(l.pieces[ids[i]] + l.pieces[ids[i + 1]]);
      if (id != -1 && l.scores[id] > best_score) {
        best_score = l.scores[id];
        best_id = id;
        best_idx = i;
      }
    }
    if (best_id == -1) break;
    ids[best_idx] = best_id;
    ids.erase(ids.begin() + static_cast<long>(best_idx) + 1);
  }
  return ids;
}

TEST(ExportLlama2c, ABpeModelKeepsItsIdsAndRunCEncodesAsGlass) {
  const Checkpoint m = small_bpe_model();
  const glass::BpeTokenizer& bpe = *m.tokenizer().bpe();
  const glass::Llama2cFiles files = glass::llama2c_bytes(m, {"tiny", "5", 24, ""});
  const Llama2c l = read_llama2c(files);
  const std::int32_t header[7] = {16, 24, 2, 4, 2, -277, 24};  // the vocabulary as it is
  for (int i = 0; i < 7; ++i) EXPECT_EQ(l.header[i], header[i]) << i;
  ASSERT_EQ(l.pieces.size(), 277u);
  // run.c's layout; '▁' written as ' ' ("▁o" is the first merge, id 271: see the GGUF test).
  EXPECT_EQ(l.pieces[0], "<unk>");
  EXPECT_EQ(l.pieces[1], "<s>");
  EXPECT_EQ(l.pieces[2], "</s>");
  EXPECT_EQ(l.pieces[3 + 'A'], "<0x41>");
  EXPECT_EQ(l.pieces[259], " ");
  EXPECT_EQ(l.pieces[271], " o");
  for (std::int32_t id = 0; id < 277; ++id) EXPECT_EQ(l.scores[id], bpe.score(id)) << id;
  EXPECT_EQ(l.max_token_length, 6);  // "<0x00>"

  // run.c's ids: BOS, then glass's ids of the prompt (dummy prefix, merges by score, byte
  // fallback for "ç" and "✓", which the vocabulary lacks).
  const std::int32_t newline = bpe.id_of_text(U"\n");
  ASSERT_GE(newline, 0);
  for (const std::string prompt : {"o gato", "o rato e o pato", "ça e o ✓ gato;", "pato.\no"}) {
    const std::vector<std::int32_t> run_c_ids = run_c_encode(l, prompt);
    std::vector<std::int32_t> glass_ids = bpe.encode(glass::utf8_to_u32(prompt));
    glass_ids.insert(glass_ids.begin(), glass::BpeTokenizer::kBosId);
    EXPECT_EQ(run_c_ids, glass_ids) << prompt;
    // The logits: "<s>" has the newline's embedding, every other row is glass's.
    glass_ids.front() = newline;
    const auto want = logits_of(m.model(), glass_ids);
    const auto got = logits_of(*l.model, run_c_ids);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t t = 0; t < want.size(); ++t) {
      ASSERT_EQ(got[t].size(), want[t].size());
      for (std::size_t g = 0; g < want[t].size(); ++g)
        EXPECT_NEAR(got[t][g], want[t][g], 1e-4) << prompt << " t " << t << " id " << g;
    }
  }
  // "o gato" by hand: " o" (the first merge) then the word " gato" from its characters.
  const std::vector<std::int32_t> o_gato = run_c_encode(l, "o gato");
  ASSERT_GE(o_gato.size(), 3u);
  EXPECT_EQ(o_gato[1], 271);
}

TEST(ExportLlama2c, AChatModelKeepsItsMarkersWhichRunCNeverEncodesFromText) {
  // A character model knowing every character of the markers' texts, with the chat tokens.
  const Checkpoint chat = with_chat_tokens(small_model({}, U" ea\nsoé,C<|>_imtrnd"));
  const glass::TextTokenizer& tokenizer = chat.tokenizer();
  const std::int32_t im_start = *tokenizer.special_id(glass::SpecialToken::kImStart);
  const std::int32_t im_end = *tokenizer.special_id(glass::SpecialToken::kImEnd);
  const Llama2c l = read_llama2c(glass::llama2c_bytes(chat, {"tiny", "", 24, ""}));
  const auto vocab = static_cast<std::int32_t>(tokenizer.vocab_size()) + 1;  // + "<s>"
  EXPECT_EQ(l.header[5], -vocab);
  ASSERT_EQ(l.pieces.size(), static_cast<std::size_t>(vocab));
  EXPECT_EQ(l.pieces[glass::llama2c_id(im_start)], "<|im_start|>");
  EXPECT_EQ(l.pieces[glass::llama2c_id(im_end)], "<|im_end|>");
  EXPECT_EQ(l.max_token_length, 12);

  // Typed ChatML stays characters in run.c, as in glass: BOS, the dummy prefix, each character.
  const std::string typed = "<|im_start|>assistant\nsim<|im_end|>";
  std::vector<std::int32_t> want{glass::kLlama2cBosId,
                                 glass::llama2c_id(tokenizer.encode(U" ")[0])};
  for (std::int32_t id : tokenizer.encode(glass::utf8_to_u32(typed)))
    want.push_back(glass::llama2c_id(id));
  const std::vector<std::int32_t> run_c_ids = run_c_encode(l, typed);
  EXPECT_EQ(run_c_ids, want);
  EXPECT_EQ(std::count(run_c_ids.begin(), run_c_ids.end(), glass::llama2c_id(im_end)), 0);

  // The markers' rows are the model's: given by id, run.c's logits are glass's.
  const std::vector<std::int32_t> glass_ids = {im_start, tokenizer.encode(U"s")[0], im_end};
  std::vector<std::int32_t> shifted;
  for (std::int32_t id : glass_ids) shifted.push_back(glass::llama2c_id(id));
  const auto expected = logits_of(chat.model(), glass_ids);
  const auto got = logits_of(*l.model, shifted);
  for (std::size_t t = 0; t < expected.size(); ++t)
    for (std::size_t g = 0; g < expected[t].size(); ++g)
      EXPECT_NEAR(got[t][glass::llama2c_id(static_cast<std::int32_t>(g))], expected[t][g], 1e-4)
          << "t " << t << " id " << g;

  // A BPE chat model: the markers keep their ids after the merges.
  const Checkpoint bpe_chat = with_chat_tokens(small_bpe_model());
  const Llama2c b = read_llama2c(glass::llama2c_bytes(bpe_chat, {"tiny", "", 24, ""}));
  ASSERT_EQ(b.pieces.size(), 279u);
  EXPECT_EQ(b.pieces[277], "<|im_start|>");
  EXPECT_EQ(b.pieces[278], "<|im_end|>");
  const std::vector<std::int32_t> bpe_ids = run_c_encode(b, "<|im_end|> o gato");
  EXPECT_EQ(std::count(bpe_ids.begin(), bpe_ids.end(), 278), 0);
}

TEST(ExportLlama2c, RefusesWhatRunCComputesDifferently) {
  ModelConfig c;
  c.rope_base = 500000;
  try {
    glass::llama2c_bytes(small_model(c), {"tiny", "", 8, ""});
    FAIL() << "rope_base 500000 was accepted";
  } catch (const ExportError& e) {
    EXPECT_NE(std::string(e.what()).find("rope_base 500000"), std::string::npos) << e.what();
  }
  c.rope_base = 10000;
  c.norm_eps = 1e-6;
  EXPECT_THROW(glass::llama2c_bytes(small_model(c), {"tiny", "", 8, ""}), ExportError);
  EXPECT_THROW(glass::llama2c_bytes(small_model({}, U" ab"), {"tiny", "", 8, ""}),
               ExportError);  // no newline
  EXPECT_THROW(glass::llama2c_bytes(small_model(), {"tiny", "", 0, ""}), ExportError);
  // GGUF has no such limits: llama.cpp reads the base and eps from the file.
  c.rope_base = 500000;
  EXPECT_NO_THROW(glass::gguf_bytes(small_model(c), {"tiny", "", 8, ""}));
}

}  // namespace
