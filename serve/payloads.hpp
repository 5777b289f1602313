#pragma once
// The JSON bodies `glass serve` answers with (inside serve/ only), built from an inspection, a
// model's config and the run directory's CSV logs.

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "inspect/inspect.hpp"
#include "serve/live_log.hpp"

namespace glass::serve_api {

/// `v` rounded to 4 decimals: enough for a picture, and a quarter of the JSON of full floats.
double rounded(double v);

/// The step a weights file records ("step" of its metadata, a decimal string) as a JSON integer,
/// or null when it records none.
nlohmann::json step_json(const std::string& weights_step);

/// The model's sizes as /api/info shows them: vocab_size, d_model, n_layers, n_heads,
/// n_kv_heads, ffn_hidden and context_length as config.json writes them
/// (checkpoint/config_json.hpp), and head_dim.
nlohmann::json model_sizes_json(const ModelConfig& config);

/// The characters of `text`, one UTF-8 string each.
nlohmann::json chars_json(const std::u32string& text);

/// attn.softmax of every layer: [layer][head][query i][key j], rounded.
nlohmann::json attention_json(const Inspection& inspection);

/// The answer of /api/inspect: prompt, chars (the prompt's characters), tokenizer ("char" or
/// "bpe"), tokens and token_texts (one per position: a BPE token as its vocabulary writes it,
/// "▁de", "<0x0A>"; a character model's character), `unknown` (characters mapped to id 0),
/// the attention, rounded logits and the `k` most probable next tokens at every position, and
/// every snapshot's shape, min, max and mean.
nlohmann::json inspect_json(const Inspection& inspection, std::size_t k, std::size_t unknown);

/// The rows of `table` as objects {column: value}; NaN becomes null. Only rows whose "step" is
/// greater than `since` (all when the table has no step column).
nlohmann::json rows_json(const CsvTable& table, long long since);

}  // namespace glass::serve_api
