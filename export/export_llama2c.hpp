#pragma once
// Export to llama2.c (github.com/karpathy/llama2.c): the model.bin and tokenizer.bin that its
// run.c reads.
//
// model.bin (little-endian): 7 int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads,
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

#include <cstdint>
#include <string>

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

/// Both files for `model` (a character or a BPE model). seq_len = info.context. Throws
/// ExportError when run.c cannot run the model as trained: rope_base != 10000, norm_eps != 1e-5,
/// a vocabulary without the newline (the "<s>" embedding; for BPE, the token "\n") or
/// info.context of 0 or above the model's context_length.
Llama2cFiles llama2c_bytes(const Checkpoint& model, const ExportInfo& info);

/// Writes DIR/model.bin and DIR/tokenizer.bin, each atomically, creating DIR if needed.
/// Everything is checked and built before the first file is written. Throws ExportError or
/// FileError.
void export_llama2c(const Checkpoint& model, const ExportInfo& info, const std::string& dir);

}  // namespace glass
