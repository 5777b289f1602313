// llama2.c's int8 export (export.py's version2_export, read by runq.c) against a reader written
// here from runq.c's read_checkpoint / memory_map_weights / init_quantized_tensors / dequantize:
// the header's bytes, the quantizer against the plain-Python reference
// (tests/export/reference/llama2c_int8.py), every dequantized weight within half a scale of the
// original, and the logits of the model read back equal to glass's on the same dequantized
// weights.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "export/export_llama2c.hpp"
#include "export_test_util.hpp"

namespace {

using glass::Array;
using glass::Checkpoint;
using glass::Decoder;
using glass::ExportError;
using glass::Llama2cType;
using glass::ModelConfig;
using glass_test::logits_of;
using glass_test::Reader;
using glass_test::small_bpe_model;
using glass_test::small_model;

/// model.bin (int8) read back as runq.c reads it: the header's fields, and a fresh Decoder
/// holding the norms and every matrix dequantized (q * s[i / GS]); `scales` keeps each matrix's
/// scales in file order (token embedding, wq of each layer, ..., wcls).
struct Llama2cQ {
  std::uint32_t magic = 0;
  std::int32_t version = 0;
  std::int32_t config[7] = {};
  std::uint8_t shared_classifier = 0;
  std::int32_t group_size = 0;
  std::unique_ptr<Decoder> model;
  std::vector<std::vector<float>> scales;
};

Llama2cQ read_llama2c_int8(const std::string& bin) {
  Llama2cQ out;
  Reader r{bin};
  out.magic = r.pod<std::uint32_t>();
  out.version = r.pod<std::int32_t>();
  for (auto& v : out.config) v = r.pod<std::int32_t>();  // fread(config, sizeof(Config))
  out.shared_classifier = r.pod<std::uint8_t>();
  out.group_size = r.pod<std::int32_t>();
  const std::size_t dim = out.config[0], hidden = out.config[1], L = out.config[2],
                    n_heads = out.config[3], n_kv_heads = out.config[4], vocab = out.config[5];
  const std::size_t GS = static_cast<std::size_t>(out.group_size);
  // runq.c trusts the header; a reader in a test must not (a wrong offset gives any number).
  if (out.group_size <= 0 || dim % GS != 0 || hidden % GS != 0)
    throw std::runtime_error("group size " + std::to_string(out.group_size) +
                             " does not divide dim and hidden_dim");
  const std::size_t head_size = dim / n_heads;

  ModelConfig c;
  c.vocab_size = vocab;
  c.d_model = dim;
  c.n_layers = L;
  c.n_heads = n_heads;
  c.n_kv_heads = n_kv_heads;
  c.ffn_hidden = hidden;
  c.context_length = out.config[6];
  out.model = std::make_unique<Decoder>(c, 1);
  Decoder& d = *out.model;

  // memory_map_weights: the fp32 norms right after the 256-byte header ...
  std::size_t pos = glass::kLlama2cHeaderBytes;
  auto floats = [&](float* to, std::size_t n) {
    ASSERT_LE(pos + n * sizeof(float), bin.size());
    std::memcpy(to, bin.data() + pos, n * sizeof(float));
    pos += n * sizeof(float);
  };
  for (std::size_t l = 0; l < L; ++l)
    floats(d.layers[l]->attention_norm.weight.value().data(), dim);
  for (std::size_t l = 0; l < L; ++l) floats(d.layers[l]->ffn_norm.weight.value().data(), dim);
  floats(d.norm.weight.value().data(), dim);
  // ... then init_quantized_tensors: size_each int8, then size_each / GS float scales, each
  // dequantized as runq.c's dequantize does: x[i] = q[i] * s[i / GS].
  auto quantized = [&](Array& a, std::size_t size_each) {
    ASSERT_EQ(a.size(), size_each);
    ASSERT_LE(pos + size_each + size_each / GS * sizeof(float), bin.size());
    const auto* q = reinterpret_cast<const std::int8_t*>(bin.data() + pos);
    pos += size_each;
    std::vector<float> s(size_each / GS);
    floats(s.data(), s.size());
    for (std::size_t i = 0; i < size_each; ++i) a.data()[i] = q[i] * s[i / GS];
    out.scales.push_back(std::move(s));
  };
  const auto swiglu = [&](std::size_t l) -> glass::SwiGLU& {
    return dynamic_cast<glass::SwiGLU&>(*d.layers[l]->feed_forward);
  };
  quantized(d.tok_embeddings.weight.value(), vocab * dim);
  for (std::size_t l = 0; l < L; ++l)
    quantized(d.layers[l]->attention.wq.weight.value(), dim * (n_heads * head_size));
  for (std::size_t l = 0; l < L; ++l)
    quantized(d.layers[l]->attention.wk.weight.value(), dim * (n_kv_heads * head_size));
  for (std::size_t l = 0; l < L; ++l)
    quantized(d.layers[l]->attention.wv.weight.value(), dim * (n_kv_heads * head_size));
  for (std::size_t l = 0; l < L; ++l)
    quantized(d.layers[l]->attention.wo.weight.value(), (n_heads * head_size) * dim);
  for (std::size_t l = 0; l < L; ++l) quantized(swiglu(l).w1.weight.value(), dim * hidden);
  for (std::size_t l = 0; l < L; ++l) quantized(swiglu(l).w2.weight.value(), hidden * dim);
  for (std::size_t l = 0; l < L; ++l) quantized(swiglu(l).w3.weight.value(), dim * hidden);
  EXPECT_EQ(out.shared_classifier, 0);
  quantized(d.output.weight.value(), dim * vocab);  // wcls
  EXPECT_EQ(pos, bin.size()) << "bytes after wcls";
  return out;
}

/// Every matrix of `m` (rank 2) replaced by its int8 groups read back: the weights runq.c
/// computes with. Vectors (the RMSNorm gains) are kept.
void dequantize_in_place(Decoder& m, std::size_t group_size) {
  for (auto& [name, p] : m.named_parameters()) {
    Array& a = p.value();
    if (a.dimension() != 2) continue;
    const glass::Llama2cInt8 t = glass::llama2c_quantize_int8(a.data(), a.size(), group_size);
    for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = t.q[i] * t.scales[i / group_size];
  }
}

/// The llama2.c row of glass's row `g` of a character model's table (id 1, "<s>", inserted).
std::size_t l2c_row(std::size_t g) { return static_cast<std::size_t>(glass::llama2c_id(g)); }

/// Checks every element of `got` (a matrix read back) against `want` (glass's) within half the
/// scale of its group, and each scale against max|w| / 127 of the group's original weights.
/// `row_of(r)`: the read-back row of glass's row r.
template <typename RowOf>
void expect_within_half_a_scale(const Array& got, const Array& want,
                                const std::vector<float>& scales, std::size_t group_size,
                                RowOf row_of, const std::string& what) {
  const std::size_t rows = want.shape()[0], cols = want.shape()[1];
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t g = 0; g < cols / group_size; ++g) {
      const std::size_t at = row_of(r) * cols + g * group_size;  // in the file's order
      const float* w = want.data() + r * cols + g * group_size;
      float wmax = 0;
      for (std::size_t i = 0; i < group_size; ++i) wmax = std::max(wmax, std::abs(w[i]));
      const float s = scales[at / group_size];
      ASSERT_EQ(s, wmax / 127.0f) << what << " row " << r << " group " << g;
      for (std::size_t i = 0; i < group_size; ++i)
        ASSERT_LE(std::abs(got.data()[at + i] - w[i]), s / 2 * (1 + 1e-6f))
            << what << " row " << r << " column " << g * group_size + i;
    }
}

TEST(ExportLlama2cInt8, HeaderIsExportPysVersion2) {
  const Checkpoint m = small_model();
  const std::string bin =
      glass::llama2c_bytes(m, {"tiny", "123", 24, ""}, Llama2cType::int8).model_bin;
  ASSERT_GE(bin.size(), 256u);
  EXPECT_EQ(bin.substr(0, 4), "24ka");  // 0x616b3432 little-endian: "ak42" read backwards
  Reader r{bin};
  EXPECT_EQ(r.pod<std::uint32_t>(), 0x616b3432u);
  EXPECT_EQ(r.pod<std::int32_t>(), 2);  // version
  // dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size (+1: "<s>"; positive), seq_len.
  const std::int32_t config[7] = {16, 24, 2, 4, 2, 11, 24};
  for (int i = 0; i < 7; ++i) EXPECT_EQ(r.pod<std::int32_t>(), config[i]) << i;
  EXPECT_EQ(bin[36], 0);  // shared_classifier: glass's tables are untied
  std::int32_t group_size = 0;
  std::memcpy(&group_size, bin.data() + 37, 4);  // unaligned, as struct.pack('i') after 'B'
  EXPECT_EQ(group_size, 8);                      // 16 and 24: 8 divides both, 16 not 24
  for (std::size_t i = 41; i < 256; ++i) ASSERT_EQ(bin[i], 0) << "padding byte " << i;
  // Size: the norms (2 L + 1) * dim floats, then each matrix n bytes + n / 8 floats (1.5 bytes a
  // weight): embedding and wcls 11 * 16, wq and wo 16 * 16, wk and wv 8 * 16, w1, w2, w3 24 * 16.
  const std::size_t weights = 2 * 11 * 16 + 2 * (2 * 256 + 2 * 128 + 3 * 384);
  EXPECT_EQ(bin.size(), 256 + (2 * 2 + 1) * 16 * 4 + weights + weights / 8 * 4);
  // tokenizer.bin does not depend on the type.
  EXPECT_EQ(glass::llama2c_bytes(m, {"tiny", "123", 24, ""}, Llama2cType::int8).tokenizer_bin,
            glass::llama2c_bytes(m, {"tiny", "123", 24, ""}).tokenizer_bin);
}

TEST(ExportLlama2cInt8, ReadBackAsRunQIsWithinHalfAScaleAndGivesGlasssLogits) {
  const Checkpoint m = small_model();
  const Llama2cQ l = read_llama2c_int8(
      glass::llama2c_bytes(m, {"tiny", "123", 24, ""}, Llama2cType::int8).model_bin);
  ASSERT_EQ(l.magic, glass::kLlama2cMagic);
  ASSERT_EQ(l.group_size, 8);
  const Decoder& want = m.model();
  const Decoder& got = *l.model;
  // The norms are float32, exactly.
  EXPECT_EQ(got.norm.weight.value(), want.norm.weight.value());
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(got.layers[i]->attention_norm.weight.value(),
              want.layers[i]->attention_norm.weight.value());
    EXPECT_EQ(got.layers[i]->ffn_norm.weight.value(), want.layers[i]->ffn_norm.weight.value());
  }
  // Every matrix within half a scale, each scale max|w| / 127 of its group.
  const auto same = [](std::size_t r) { return r; };
  expect_within_half_a_scale(got.tok_embeddings.weight.value(), want.tok_embeddings.weight.value(),
                             l.scales[0], 8, l2c_row, "token embedding");
  std::size_t k = 1;
  for (const char* kind : {"wq", "wk", "wv", "wo", "w1", "w2", "w3"})
    for (std::size_t i = 0; i < 2; ++i, ++k) {
      const std::string name = std::string(kind);
      const auto pick = [&](const Decoder& d) -> const Array& {
        const glass::Block& b = *d.layers[i];
        if (name == "wq") return b.attention.wq.weight.value();
        if (name == "wk") return b.attention.wk.weight.value();
        if (name == "wv") return b.attention.wv.weight.value();
        if (name == "wo") return b.attention.wo.weight.value();
        if (name == "w1") return b.swiglu().w1.weight.value();
        if (name == "w2") return b.swiglu().w2.weight.value();
        return b.swiglu().w3.weight.value();
      };
      expect_within_half_a_scale(pick(got), pick(want), l.scales[k], 8, same,
                                 name + " of layer " + std::to_string(i));
    }
  expect_within_half_a_scale(got.output.weight.value(), want.output.weight.value(), l.scales[k], 8,
                             l2c_row, "wcls");

  // glass on the same dequantized weights: the logits of the model read back, id for id.
  Checkpoint dequantized = small_model();
  dequantize_in_place(dequantized.model(), 8);
  std::vector<std::int32_t> glass_ids{m.tokenizer().chars()->id_of(U'\n')};
  std::vector<std::int32_t> run_q_ids{glass::kLlama2cBosId};
  for (char32_t ch : std::u32string(U" Cosa, é")) {
    glass_ids.push_back(m.tokenizer().chars()->id_of(ch));
    run_q_ids.push_back(glass::llama2c_id(glass_ids.back()));
  }
  const auto expected = logits_of(dequantized.model(), glass_ids);
  const auto read_back = logits_of(got, run_q_ids);
  const auto float_logits = logits_of(want, glass_ids);
  float moved = 0;
  for (std::size_t t = 0; t < expected.size(); ++t)
    for (std::size_t g = 0; g < expected[t].size(); ++g) {
      EXPECT_NEAR(read_back[t][l2c_row(g)], expected[t][g], 1e-4) << "t " << t << " id " << g;
      moved = std::max(moved, std::abs(expected[t][g] - float_logits[t][g]));
    }
  // Quantization changes the logits (else the comparison above would not tell the two apart)
  // but little: about a scale's worth.
  EXPECT_GT(moved, 0.0f);
  EXPECT_LT(moved, 0.05f);
}

TEST(ExportLlama2cInt8, ABpeModelReadBackGivesGlasssLogits) {
  const Checkpoint m = small_bpe_model();
  const Llama2cQ l = read_llama2c_int8(
      glass::llama2c_bytes(m, {"tiny", "5", 24, ""}, Llama2cType::int8).model_bin);
  EXPECT_EQ(l.config[5], 277);  // the vocabulary as it is
  Checkpoint dequantized = small_bpe_model();
  dequantize_in_place(dequantized.model(), 8);
  std::vector<std::int32_t> ids = m.tokenizer().bpe()->encode(U"o rato e o pato");
  ids.insert(ids.begin(), glass::BpeTokenizer::kBosId);
  std::vector<std::int32_t> glass_ids = ids;
  glass_ids.front() = m.tokenizer().bpe()->id_of_text(U"\n");  // "<s>" has its embedding
  const auto expected = logits_of(dequantized.model(), glass_ids);
  const auto read_back = logits_of(*l.model, ids);
  for (std::size_t t = 0; t < expected.size(); ++t)
    for (std::size_t g = 0; g < expected[t].size(); ++g)
      EXPECT_NEAR(read_back[t][g], expected[t][g], 1e-4) << "t " << t << " id " << g;
}

/// The literals of tests/export/reference/llama2c_int8.py (group size 8).
struct ReferenceRow {
  const char* name;
  std::vector<float> w;
  std::vector<int> q;
  std::vector<float> scales;
};

TEST(ExportLlama2cInt8, QuantizerMatchesThePythonReference) {
  const std::vector<ReferenceRow> rows = {
      // Halves go to the even neighbour (torch.round), where C's round() would give 1, 3, -3.
      {"ties",
       {127.0f, 0.5f, 1.5f, 2.5f, -2.5f, -0.5f, 63.5f, -126.5f},
       {127, 0, 2, 2, -2, 0, 64, -126},
       {1.0f}},
      {"negative_max",
       {-3.0f, 1.0f, 0.75f, -1.5f, 2.0f, 0.0f, -0.25f, 0.003f},
       {-127, 42, 32, -64, 85, 0, -11, 0},
       {0.0236220472f}},
      {"zeros", std::vector<float>(8, 0.0f), std::vector<int>(8, 0), {0.0f}},
      // The scale is max|w| / 127 divided in float32 (0.00105356425 if multiplied by 1/127).
      {"division",
       {0.13380266726016998f, -0.1f, 0.05f, 0.0625f, -0.125f, 0.01f, 0.12f, -0.03f},
       {127, -95, 47, 59, -119, 9, 114, -28},
       {0.00105356437f}},
      {"weights",
       {-0.05224383994936943f, 0.08269864320755005f, 0.022498320788145065f, 0.08539628982543945f,
        -0.09013177454471588f, 0.07115670293569565f, -0.027802979573607445f, -0.0893787369132042f,
        -0.08624319732189178f, 0.09678739309310913f, 0.09456100314855576f, 0.006250155158340931f,
        -0.009628486819565296f, 0.009567868895828724f, 0.021007191389799118f,
        0.055483460426330566f},
       {-74, 117, 32, 120, -127, 100, -39, -126, -113, 127, 124, 8, -13, 13, 28, 73},
       {0.000709699001f, 0.000762105454f}},
  };
  for (const ReferenceRow& row : rows) {
    const glass::Llama2cInt8 t = glass::llama2c_quantize_int8(row.w.data(), row.w.size(), 8);
    EXPECT_EQ(std::vector<int>(t.q.begin(), t.q.end()), row.q) << row.name;
    EXPECT_EQ(t.scales, row.scales) << row.name;
  }
  // A row that is not whole groups is a programming error.
  const float five[5] = {1, 2, 3, 4, 5};
  EXPECT_THROW(glass::llama2c_quantize_int8(five, 5, 8), std::invalid_argument);
}

TEST(ExportLlama2cInt8, GroupSizeDividesDimAndHiddenDim) {
  EXPECT_EQ(glass::llama2c_group_size(128, 344), 8u);  // the default model: 344 = 8 * 43
  EXPECT_EQ(glass::llama2c_group_size(16, 24), 8u);
  EXPECT_EQ(glass::llama2c_group_size(96, 288), 32u);
  EXPECT_EQ(glass::llama2c_group_size(256, 768), 64u);  // export.py's default, at most
  EXPECT_EQ(glass::llama2c_group_size(512, 1376), 32u);
  try {
    glass::llama2c_group_size(12, 40);  // both multiples of 4, not of 8
    FAIL() << "group size 4 was accepted";
  } catch (const ExportError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("d_model 12 and ffn_hidden 40"), std::string::npos) << what;
    EXPECT_NE(what.find("--type f32"), std::string::npos) << what;
  }
  // A model of such widths: refused in int8, exported in f32.
  ModelConfig c;
  c.d_model = 12;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.ffn_hidden = 40;
  c.n_layers = 1;
  c.context_length = 8;
  const std::u32string chars = U" ab\n";
  c.vocab_size = chars.size() + 1;
  Checkpoint m(
      c, glass::TextTokenizer(glass::Tokenizer(std::vector<char32_t>(chars.begin(), chars.end()))),
      std::make_unique<Decoder>(c, 3), 0, glass::SaveOrigin{});
  EXPECT_THROW(glass::llama2c_bytes(m, {"w", "", 8, ""}, Llama2cType::int8), ExportError);
  EXPECT_NO_THROW(glass::llama2c_bytes(m, {"w", "", 8, ""}, Llama2cType::f32));
}

}  // namespace
