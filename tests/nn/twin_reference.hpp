#pragma once
// The small fixed model whose logits were computed by the PyTorch twin of GlassLLM
// (bench/torch_twin/model.py), used by reference_test.cpp (float) and reference_f64_test.cpp
// (double).
//
// How the literals below were produced: tests/nn/reference/make_reference.py builds the twin's
// Decoder with twin_config() below (rope_style "interleaved", float64), sets parameter number p
// (in the order of Decoder::named_parameters(), twin names mapped as tok_embeddings -> tok_emb,
// attention_norm -> attn_norm, attention -> attn, feed_forward -> ffn, output -> lm_head) to
// reference_weight(p, i, is_gain) element by element, runs twin_tokens() and prints the logits
// with repr(). Command: /usr/bin/python3 tests/nn/reference/make_reference.py (Debian
// python3-torch 1.13). The script rebuilds the twin's RoPE tables in float64 (the twin makes
// them in float32) and checks that the twin's KV-cache path agrees.

#include <cstdint>
#include <string>
#include <vector>

#include "nn/decoder.hpp"

namespace glass_test {

/// The twin's model: vocab 11, d_model 16, 2 layers, 4 heads / 2 KV heads, ffn_hidden 24,
/// context 16 (CONFIG in reference/make_reference.py uses the same sizes).
inline glass::ModelConfig twin_config() {
  glass::ModelConfig c;
  c.vocab_size = 11;
  c.d_model = 16;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.ffn_hidden = 24;
  c.context_length = 16;
  return c;
}

/// tokens[b][t] = (3 b + 5 t + 1) mod 11, shape (2, 7).
inline glass::Ids twin_tokens() {
  glass::Ids ids = glass::Ids::from_shape({2, 7});
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t t = 0; t < 7; ++t)
      ids(b, t) = static_cast<std::int32_t>((3 * b + 5 * t + 1) % 11);
  return ids;
}

/// Element i (row-major, (out, in) layout) of parameter number p: a multiplicative hash of
/// (p, i) mapped to u in [0, 1); weights 0.6 (u - 0.5), RMSNorm gains 1 + 0.5 (u - 0.5).
/// Same formula as reference_weight() in make_reference.py.
inline double reference_weight(std::size_t p, std::size_t i, bool is_gain) {
  const std::uint64_t h =
      (std::uint64_t(i) * 2654435761ull + std::uint64_t(p + 1) * 97531ull) & 0xffffffffull;
  const double u = static_cast<double>(h >> 8) / 16777216.0;
  return is_gain ? 1.0 + 0.5 * (u - 0.5) : 0.6 * (u - 0.5);
}

/// Writes reference_weight into every parameter of `model`.
inline void set_reference_weights(glass::Decoder& model) {
  std::size_t p = 0;
  for (auto& [name, tensor] : model.named_parameters()) {
    const bool is_gain =
        name.size() >= 11 && name.compare(name.size() - 11, 11, "norm.weight") == 0;
    auto& value = tensor.value();
    for (std::size_t i = 0; i < value.size(); ++i)
      value.data()[i] = static_cast<glass::Scalar>(reference_weight(p, i, is_gain));
    ++p;
  }
}

/// The twin's logits for twin_tokens(), shape (2, 7, 11), row-major.
inline const std::vector<double>& twin_logits() {
  static const std::vector<double> logits = {
      // logits (2, 7, 11), row-major, torch 1.13.0a0, float64
      0.7672713601182499,   0.7116786676256464,   0.8806013471737952,    -0.20349911493246292,
      -0.272163239347698,   -1.0619906730048014,  0.5502729761691126,    0.008913244523187985,
      0.1814345309866723,   0.3853608585460945,   0.7112289193415654,    0.6372073849594778,
      -0.09330524039984223, -0.48730563427379936, 0.20760396957625254,   0.24658864821633875,
      -0.4414282618483369,  0.7290404955207531,   0.4655971848053689,    -0.12802957421639433,
      0.4561450490791979,   -0.10206815296727763, 0.11636404103507621,   -0.7374249789875121,
      -1.4111449475088058,  -0.9320368604524895,  0.1935783138306737,    0.014546631146902536,
      0.2297529083098912,   1.386368459880096,    0.6525256201685921,    0.10403480017836049,
      -0.7432789002343846,  -0.9240448185080118,  -0.29344669537176093,  -0.1271615843461435,
      0.44466189823226665,  0.27908157621383856,  1.3727825330350825,    0.49164297829513887,
      0.643681610890165,    -1.2411294836578595,  -1.0070706586465972,   -0.29718072931478623,
      1.1945835490491408,   0.5195423608062064,   -0.10990578110261785,  -0.20359031611812714,
      -0.17254698196252474, -0.8844659880517465,  -0.6435526272599054,   0.0008540642602594913,
      0.12299251070257447,  0.5246774515408732,   0.521652371372159,     -1.2451696937254169,
      -0.3299275192321892,  0.22842269597057324,  0.5345927487136908,    0.4921160990369733,
      0.7733569737697545,   0.8317552827305743,   0.8778332752038426,    -1.3357871845260658,
      -1.1067104435388837,  -0.3338757839409317,  0.20451953450118798,   -0.6690959889048536,
      -1.168459005542442,   -0.571194506081648,   0.16409972671887849,   0.10044948053274785,
      0.47831308333363926,  1.5348051303468009,   0.09799318055292212,   0.07903302792891793,
      -0.6770567660123789,  -1.0704398697996147,  -0.24159619680803435,  0.06390439021671684,
      0.34713415046025753,  0.3872169685028958,   1.4088750930142047,    0.0662511660903232,
      -0.27122374212141165, -1.0661750582486946,  -0.7090750484146402,   -0.2452272537078705,
      -0.2710778294337892,  -0.8443106414708375,  -0.8778311392629449,   -0.7429582463212812,
      0.11603428618116034,  0.421981239134796,    -0.08586817004240696,  0.5789720957407317,
      0.6836583421883857,   0.3598846581561914,   -0.8458054634566722,   -0.6511426847150704,
      0.5761195366061143,   0.9699629845496369,   0.5686009142551666,    0.35640315896824093,
      0.027329444489510545, -0.5809937410808678,  -0.4853363986592283,   -1.609814925916836,
      0.7478224259314518,   0.5773162503580481,   -0.20416662529855215,  -0.8437711410036076,
      -1.2245204106472662,  -0.4940304377628171,  0.014579453908893309,  0.22863579544126716,
      0.8041197382083581,   1.5077341615550308,   0.4456202678253808,    -0.15603772629121457,
      -0.8540937589006582,  0.6213684094577623,   1.0514674643066275,    1.0446976167836401,
      -0.25786334912112413, -0.1450655699386889,  -0.008280979565583086, -1.2242552646344542,
      -0.8830587079689209,  -0.2777749480591558,  0.6110915237081344,    1.060614762835522,
      0.11963326410560558,  -0.2541672324020838,  -0.8757486077589138,   -0.66945313480973,
      0.19690432312098965,  0.6326365465899938,   0.5893807489213959,    0.9408791538904333,
      0.33540763766830617,  -0.06262281437946342, -0.2605634435029767,   1.1359205947237616,
      0.8691977057611401,   0.5539587867081854,   -0.5102575013482714,   -0.27447987941684304,
      -0.3126662284457862,  -1.0366116264702872,  -0.7364306955400537,   -0.31944045560672746,
      0.7525210725061916,   0.8754650642902733,
  };
  return logits;
}

}  // namespace glass_test
