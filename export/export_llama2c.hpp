#pragma once
// Export to llama2.c (github.com/karpathy/llama2.c): the model.bin and tokenizer.bin that its
// run.c reads (float32 weights), or that its runq.c reads (int8 weights).
//
// model.bin in float32, for run.c (little-endian): 7 int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads,
// vocab_size, seq_len), vocab_size negative because the output matrix is stored apart from the
// embedding, then float32 arrays in run.c's order, each (out, in) row-major and every layer
// of one kind one after the other:
//   token_embedding (vocab, dim), rms_att (L, dim), wq (L, dim, dim), wk (L, kv_dim, dim),
//   wv (L, kv_dim, dim), wo (L, dim, dim), rms_ffn (L, dim), w1 (L, hidden, dim),
//   w2 (L, dim, hidden), w3 (L, hidden, dim), rms_final (dim),
//   freq_cis_real (seq_len, head_dim / 2), freq_cis_imag (seq_len, head_dim / 2), wcls (vocab, dim)
// The two RoPE tables (cos and sin of pos * 10000^(-2i/head_dim)) are skipped by run.c, which
// computes them itself; they are written for older readers.
//
// model.bin in int8, for runq.c (export.py's version2_export, "version 2"; little-endian):
//   a 256-byte header: uint32 magic 0x616b3432 ("ak42"), int32 version 2, the 7 int32 above
//   with vocab_size positive, uint8 shared_classifier (1: wcls is the token embedding), int32
//   group_size (at byte 37: export.py packs each field apart, without alignment), zeros;
//   then float32 rms_att (L, dim), rms_ffn (L, dim), rms_final (dim);
//   then each matrix quantized, as int8 q (all its elements) followed by its float32 scales
//   (elements / group_size), in this order, every layer of one kind one after the other:
//   token_embedding, wq, wk, wv, wo, w1, w2, w3, and wcls unless shared. No RoPE tables.
// The quantizer (export.py's quantize_q80): the elements of a matrix in row-major order are cut
// into groups of group_size; a group's scale is s = max|w| / 127 and each w is stored as
// q = round(w / s) in [-127, 127], read back as q * s (error at most s / 2). Both are float32
// operations and round() takes halves to even (torch.round); a group of zeros gets s = 0 and
// q = 0. The group size is the largest of 64, 32, 16, 8 that divides both dim and hidden_dim:
// runq.c multiplies a row group by group (each row must be whole groups) and quantizes the
// activations x (dim) and the hidden vector (hidden_dim) in groups too. export.py backs off
// from 64 checking dim alone; dim 128 and hidden_dim 344 need 8. Below 8 the float32 scales
// cost more than the int8 values save (group 4: 2 bytes a weight; group 1: 5, more than
// float32), so such shapes are refused.
//
// tokenizer.bin: int32 max_token_length, then per token: float32 score, int32 length, bytes.
//
// run.c prepends BOS = id 1 to every prompt and stops when it samples id 1, so a character
// vocabulary is shifted by one: id 0 = "<unk>" (the checkpoint's id 0), id 1 = "<s>", id i + 1 = the
// checkpoint's id i for i >= 1. "<s>" gets the newline's embedding (the model reads it as the
// start of a paragraph) and the unknown token's output row, so that it is never more likely
// than "<unk>" and greedy sampling, which takes the first of equal maxima, never picks it.
// A BPE model (data/bpe_tokenizer.hpp) already has run.c's layout (0 "<unk>", 1 "<s>", 2 "</s>",
// byte b at id b + 3, as run.c's byte fallback hard-codes), so its ids are kept: tokenizer.bin
// holds its texts with '▁' written as ' ' (run.c looks up " " for its dummy prefix and for each
// space of a prompt) and its scores (merged tokens: minus the merge rank; run.c's encode merges
// the adjacent pair of best score, as glass's does), so run.c encodes a prompt P as
// [1] + glass's ids of P. "<s>" (id 1, never read in training) gets the newline token's
// embedding, as above; every output row is kept, so run.c's logits are glass's for every id.
// run.c reads a literal '▁' of a prompt as its 3 byte tokens, glass as a space: only prompts
// without it encode alike.
// run.c computes RoPE with base 10000 and RMSNorm with eps 1e-5: other values are refused.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.hpp"
#include "export/export_common.hpp"

namespace glass {

/// The two files' bytes.
struct Llama2cFiles {
  std::string model_bin;
  std::string tokenizer_bin;
};

/// The llama2.c id of a character model's id (0 -> 0, i -> i + 1; a BPE model's ids are kept)
/// and the id of "<s>".
inline std::int32_t llama2c_id(std::int32_t glass_id) { return glass_id == 0 ? 0 : glass_id + 1; }
constexpr std::int32_t kLlama2cBosId = 1;

/// The number type of model.bin's matrices: float32 (run.c) or int8 in groups (runq.c).
enum class Llama2cType { f32, int8 };

/// "f32", "int8".
const char* llama2c_type_name(Llama2cType type);

constexpr std::uint32_t kLlama2cMagic = 0x616b3432;  ///< "ak42" (export.py, runq.c)
constexpr std::size_t kLlama2cHeaderBytes = 256;     ///< version 2's header, padded
constexpr std::size_t kLlama2cMaxGroupSize = 64;     ///< export.py's default group size
constexpr std::size_t kLlama2cMinGroupSize = 8;      ///< the smallest this exporter writes

/// The group size of the int8 format for a model of width `dim` and feed-forward width
/// `hidden_dim`: the largest of 64, 32, 16, 8 dividing both. Throws ExportError (naming both
/// widths and what would work) when none does.
std::size_t llama2c_group_size(std::size_t dim, std::size_t hidden_dim);

/// One matrix in llama2.c's int8 format: q[i] * scales[i / group_size] reads back element i.
struct Llama2cInt8 {
  std::vector<std::int8_t> q;  ///< n values in [-127, 127]
  std::vector<float> scales;   ///< n / group_size scales, max|w| / 127 of each group
};

/// w[0..n) quantized as export.py's quantize_q80 does (see above): groups of `group_size`
/// consecutive elements, s = max|w| / 127 in float32, q = w / s in float32 rounded half to
/// even; a zero group gets s = 0, q = 0. n must be a multiple of group_size (else
/// std::invalid_argument).
Llama2cInt8 llama2c_quantize_int8(const float* w, std::size_t n, std::size_t group_size);

/// Both files for `model` (a character or a BPE model). seq_len = info.context. Throws
/// ExportError when run.c cannot run the model as trained: rope_base != 10000, norm_eps != 1e-5,
/// a vocabulary without the newline (the "<s>" embedding; for BPE, the token "\n") or
/// info.context of 0 or above the model's context_length; for int8, widths without a group size
/// of 8 or more (llama2c_group_size).
Llama2cFiles llama2c_bytes(const Checkpoint& model, const ExportInfo& info,
                           Llama2cType type = Llama2cType::f32);

/// Writes DIR/model.bin and DIR/tokenizer.bin, each atomically, creating DIR if needed.
/// Everything is checked and built before the first file is written. Throws ExportError or
/// FileError.
void export_llama2c(const Checkpoint& model, const ExportInfo& info, const std::string& dir,
                    Llama2cType type = Llama2cType::f32);

}  // namespace glass
