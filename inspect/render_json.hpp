#pragma once
// The inspector's JSON view (`glass inspect --json`): the whole inspection for scripts and
// notebooks; the HTML page carries the same text.

#include <string>

#include "inspect/inspect.hpp"

namespace glass {

/// The whole inspection as JSON text (format in the README, section "The JSON format"): prompt,
/// tokenizer ("char" or "bpe"), tokens and token_texts, vocabulary texts, config, logits and
/// probs (n, V), and every snapshot with its shape and nested values (non-finite values as null).
std::string inspection_json(const Inspection& inspection, int indent = -1);

/// Writes inspection_json to `path` atomically (temp file + rename). Throws std::runtime_error
/// when the file cannot be written.
void write_json(const Inspection& inspection, const std::string& path);

}  // namespace glass
