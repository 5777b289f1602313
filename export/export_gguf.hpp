#pragma once
// Export to GGUF, the file format of llama.cpp (ggml's "GGUF" documentation, docs/gguf.md of
// the ggml repository), for the `llama` architecture with F32 tensors.
//
// The file, all integers little-endian:
//   "GGUF", version 3 (u32), tensor count (u64), key/value count (u64)
//   key/values: key (u64 length + bytes), value type (u32), value
//   tensor infos: name, n_dims (u32), ne[0..n_dims) (u64, ne[0] = the fastest axis, so an
//                 (out, in) matrix is written as [in, out]), type (u32, 0 = F32), offset (u64)
//   padding to general.alignment (32), then the tensor data, each tensor at a multiple of 32.
//
// The character vocabulary becomes a `llama` (SentencePiece-style) vocabulary that llama.cpp
// tokenizes one character per token:
//   id 0 .. V-1     the checkpoint's ids unchanged: 0 = "<unk>" (UNKNOWN), then the characters
//                   (NORMAL), the space written as U+2581 "▁" as SentencePiece does
//   id V, V+1       "<s>", "</s>" (CONTROL): bos/eos ids, never added (add_bos_token = false)
//   id V+2 .. V+257 "<0x00>" .. "<0xFF>" (BYTE): the byte fallback llama.cpp's loader looks up
// The added tokens get the unknown token's embedding and output rows, so that they are never
// more likely than it. No space prefix is added (add_space_prefix = false).

#include <string>

#include "checkpoint/checkpoint.hpp"
#include "export/export_common.hpp"

namespace glass {

/// The whole GGUF file for `model` as bytes. Throws ExportError when the vocabulary holds
/// U+2581 (the character that stands for the space) or info.context is 0 or exceeds the model's
/// context_length.
std::string gguf_bytes(const LoadedModel& model, const ExportInfo& info);

/// Writes gguf_bytes() to `path` atomically (write_file_atomic). Throws ExportError or FileError;
/// `path` is then untouched.
void export_gguf(const LoadedModel& model, const ExportInfo& info, const std::string& path);

}  // namespace glass
