#pragma once
// Export to GGUF, the file format of llama.cpp (ggml's "GGUF" documentation, docs/gguf.md of
// the ggml repository), for the `llama` architecture with F32 tensors.
//
// The file, all integers little-endian:
//   "GGUF", version 3 (u32), tensor count (u64), key/value count (u64)
//   key/values: key (u64 length + bytes), value type (u32), value
//   tensor infos: name, n_dims (u32), ne[0..n_dims) (u64, ne[0] = the fastest axis, so an
//                 (out, in) matrix is written as [in, out]), type (u32, ggml_type: 0 = F32,
//                 1 = F16, 2 = Q4_0, 8 = Q8_0), offset (u64)
//   padding to general.alignment (32), then the tensor data, each tensor at a multiple of 32.
//
// The tokenizer becomes a `llama` (SentencePiece-style) vocabulary (llama.cpp's llm_tokenizer_spm:
// token texts, scores and types; tokenizing = merging the adjacent pair whose text is the token
// with the best score). Token types are llama.h's llama_token_type.
//
// A character model, tokenized by llama.cpp one character per token:
//   id 0 .. V-1     the checkpoint's ids unchanged: 0 = "<unk>" (UNKNOWN), then the characters
//                   (NORMAL), the space written as U+2581 "▁" as SentencePiece does, then a chat
//                   model's "<|im_start|>" and "<|im_end|>" (CONTROL)
//   id V, V+1       "<s>", "</s>" (CONTROL): bos/eos ids, never added (add_bos_token = false)
//   id V+2 .. V+257 "<0x00>" .. "<0xFF>" (BYTE): the byte fallback llama.cpp's loader looks up
// The added tokens get the unknown token's embedding and output rows, so that they are never
// more likely than it. No space prefix is added (add_space_prefix = false).
// When the vocabulary holds U+2581 itself, llama.cpp could not tell it from a space (it writes
// every space as "▁" before it tokenizes, and two tokens "▁" would make its loader abort): the
// space is then written as the USER_DEFINED token " " and U+2581 as the USER_DEFINED token "▁".
// llama.cpp cuts the text at user-defined tokens before it rewrites spaces, and detokenizes them
// verbatim, so both characters keep their ids (gguf_note() says so for the user).
//
// A BPE model (data/bpe_tokenizer.hpp) is written as it is, no token added: its layout already
// is SentencePiece's (0 "<unk>" UNKNOWN, 1 "<s>" and 2 "</s>" CONTROL: the bos/eos ids, 3..258
// "<0x00>".."<0xFF>" BYTE, then the characters and the merged tokens NORMAL, "▁" for the space,
// then a chat model's "<|im_start|>" and "<|im_end|>" CONTROL),
// each token with its score (a merged token: minus its merge rank), add_space_prefix = true (the
// dummy prefix glass puts before a text) and add_bos_token = false (glass reads a prompt
// without BOS), so llama.cpp splits a prompt into glass's ids.
//
// A chat model (its tokenizer has the chat tokens) also gets its template and <|im_end|> as
// its end-of-generation id: export/gguf_chat.hpp.

#include <string>

#include "checkpoint/checkpoint.hpp"
#include "export/export_common.hpp"
#include "export/quantize.hpp"

namespace glass {

/// The whole GGUF file for `model` (a character or a BPE model) as bytes, its matrices in `type`
/// (tensor_type decides each one; general.file_type says `type`); `count`, when given, gets the
/// weights written in each type and their bytes. Throws ExportError when info.context is 0 or
/// exceeds the model's context_length, or when the tokenizer's size is not the weights' number
/// of embedding rows.
std::string gguf_bytes(const Checkpoint& model, const ExportInfo& info,
                       WeightType type = WeightType::f32, WeightCount* count = nullptr);

/// "" or one sentence for the user about a choice the export makes for this model's vocabulary
/// (today: how a character vocabulary holding U+2581 is written).
std::string gguf_note(const Checkpoint& model);

/// Writes gguf_bytes() to `path` atomically (write_file_atomic) and returns what it holds in each
/// type. Throws ExportError or FileError; `path` is then untouched.
WeightCount export_gguf(const Checkpoint& model, const ExportInfo& info, const std::string& path,
                        WeightType type = WeightType::f32);

}  // namespace glass
