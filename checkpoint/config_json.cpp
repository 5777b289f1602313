// config.json of a checkpoint: ModelConfig + tokenizer to and from JSON. See config_json.hpp.

#include "checkpoint/config_json.hpp"

#include "data/json_no_duplicates.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <set>

#include "data/text.hpp"

namespace glass {

namespace {

using nlohmann::json;
using ordered_json = nlohmann::ordered_json;

constexpr int kFormatVersion = 1;

[[noreturn]] void fail(const std::string& source, const std::string& what) {
  throw ConfigError(fmt::format("bad config '{}': {}", source, what));
}

json parse_json(const std::string& text, const std::string& source) {
  try {
    return parse_json_no_duplicate_keys(text);
  } catch (const DuplicateKeyError& e) {
    fail(source, e.what());
  } catch (const JsonTooDeepError& e) {
    fail(source, e.what());
  } catch (const json::exception& e) {
    fail(source, fmt::format("not valid JSON ({})", e.what()));
  }
}

ordered_json model_to_ordered_json(const ModelConfig& m) {
  ordered_json j = ordered_json::object();
  j["vocab_size"] = m.vocab_size;
  j["d_model"] = m.d_model;
  j["n_layers"] = m.n_layers;
  j["n_heads"] = m.n_heads;
  j["n_kv_heads"] = m.n_kv_heads;
  j["ffn_hidden"] = m.ffn_hidden;
  j["context_length"] = m.context_length;
  j["vocab_cap"] = m.vocab_cap;
  j["rope_base"] = m.rope_base;
  j["norm_eps"] = m.norm_eps;
  j["init_std"] = m.init_std;
  j["attention"] = to_string(m.ops_path);  // the ops path, under the name it was first saved with
  // The recipe options, only when on: a LLaMA-style model's config.json stays as it was, and
  // a program that predates them refuses (unknown field) a model it would compute wrongly.
  if (m.qk_norm) j["qk_norm"] = true;
  if (m.mlp != Mlp::swiglu) j["mlp"] = to_string(m.mlp);
  if (m.logit_softcap > 0) j["logit_softcap"] = m.logit_softcap;
  return j;
}

std::size_t get_size(const json& obj, const char* key, const std::string& where,
                     const std::string& source) {
  if (!obj.contains(key)) fail(source, fmt::format("{}: missing field \"{}\"", where, key));
  const json& v = obj.at(key);
  if (!v.is_number_unsigned()) {
    fail(source,
         fmt::format("{}: \"{}\" must be a non-negative integer, got {}", where, key, v.dump()));
  }
  return v.get<std::size_t>();
}

double get_double(const json& obj, const char* key, const std::string& where,
                  const std::string& source) {
  if (!obj.contains(key)) fail(source, fmt::format("{}: missing field \"{}\"", where, key));
  const json& v = obj.at(key);
  if (!v.is_number())
    fail(source, fmt::format("{}: \"{}\" must be a number, got {}", where, key, v.dump()));
  return v.get<double>();
}

/// The optional recipe options of "model" into `m` (absent: off, as every save before them).
void read_recipe_options(const json& j, ModelConfig& m, const std::string& where,
                         const std::string& source) {
  if (j.contains("qk_norm")) {
    if (!j.at("qk_norm").is_boolean())
      fail(source, fmt::format("{}: \"qk_norm\" must be true or false, got {}", where,
                               j.at("qk_norm").dump()));
    m.qk_norm = j.at("qk_norm").get<bool>();
  }
  if (j.contains("mlp")) {
    if (!j.at("mlp").is_string())
      fail(source, fmt::format("{}: \"mlp\" must be \"swiglu\" or \"relu2\", got {}", where,
                               j.at("mlp").dump()));
    try {
      m.mlp = parse_mlp(j.at("mlp").get<std::string>());
    } catch (const std::invalid_argument& e) {
      fail(source, fmt::format("{}: \"mlp\": {}", where, e.what()));
    }
  }
  if (j.contains("logit_softcap")) m.logit_softcap = get_double(j, "logit_softcap", where, source);
}

ModelConfig model_from(const json& j, const std::string& source) {
  const std::string where = "\"model\"";
  if (!j.is_object()) fail(source, where + " must be a JSON object");
  static const std::set<std::string> known = {
      "vocab_size", "d_model",        "n_layers",  "n_heads",   "n_kv_heads",
      "ffn_hidden", "context_length", "vocab_cap", "rope_base", "norm_eps",
      "init_std",   "attention",      "qk_norm",   "mlp",       "logit_softcap"};
  for (const auto& [key, value] : j.items()) {
    if (!known.count(key)) fail(source, fmt::format("{}: unknown field \"{}\"", where, key));
  }
  ModelConfig m;
  m.vocab_size = get_size(j, "vocab_size", where, source);
  m.d_model = get_size(j, "d_model", where, source);
  m.n_layers = get_size(j, "n_layers", where, source);
  m.n_heads = get_size(j, "n_heads", where, source);
  m.n_kv_heads = get_size(j, "n_kv_heads", where, source);
  m.ffn_hidden = get_size(j, "ffn_hidden", where, source);
  m.context_length = get_size(j, "context_length", where, source);
  m.vocab_cap = get_size(j, "vocab_cap", where, source);
  m.rope_base = get_double(j, "rope_base", where, source);
  m.norm_eps = get_double(j, "norm_eps", where, source);
  m.init_std = get_double(j, "init_std", where, source);
  if (j.contains("attention")) {  // optional: a config.json written before the switch runs "fast"
    if (!j.at("attention").is_string())
      fail(source, fmt::format("{}: \"attention\" must be \"reference\" or \"fast\", got {}", where,
                               j.at("attention").dump()));
    try {
      m.ops_path = parse_ops_path(j.at("attention").get<std::string>());
    } catch (const std::invalid_argument& e) {
      fail(source, fmt::format("{}: \"attention\": {}", where, e.what()));
    }
  }
  read_recipe_options(j, m, where, source);
  try {
    m.validate();
  } catch (const std::invalid_argument& e) {
    fail(source, e.what());
  }
  return m;
}

}  // namespace

std::string model_config_to_json(const ModelConfig& model) {
  return model_to_ordered_json(model).dump(2) + "\n";
}

ModelConfig model_config_from_json(const std::string& text, const std::string& source) {
  return model_from(parse_json(text, source), source);
}

namespace {

std::string config_text(const ModelConfig& model, ordered_json tokenizer,
                        const std::string& extra_json) {
  ordered_json j = ordered_json::object();
  j["format"] = "glassllm";
  j["version"] = kFormatVersion;
  j["model"] = model_to_ordered_json(model);
  j["tokenizer"] = std::move(tokenizer);
  if (!extra_json.empty()) {
    ordered_json extra;
    try {
      extra = ordered_json::parse(extra_json);
    } catch (const ordered_json::exception& e) {
      throw std::invalid_argument(
          fmt::format("config_to_json: extra_json is not valid JSON ({})", e.what()));
    }
    if (!extra.is_object())
      throw std::invalid_argument("config_to_json: extra_json must be a JSON object");
    for (const auto& [key, value] : extra.items()) {
      if (j.contains(key)) {
        throw std::invalid_argument(
            fmt::format("config_to_json: extra key \"{}\" is reserved", key));
      }
      j[key] = value;
    }
  }
  return j.dump(2) + "\n";
}

}  // namespace

std::string config_to_json(const ModelConfig& model, const Tokenizer& tokenizer,
                           const std::string& extra_json) {
  ordered_json chars = ordered_json::array();
  for (char32_t c : tokenizer.chars()) chars.push_back(char_to_utf8(c));
  ordered_json tok = {{"type", "char"}, {"unknown_id", Tokenizer::kUnknownId}, {"chars", chars}};
  // The special tokens (chat markers) after the characters, only when there are some: a
  // vocabulary without them is written as before.
  if (!tokenizer.specials().empty()) {
    ordered_json specials = ordered_json::array();
    for (const std::u32string& t : tokenizer.specials()) specials.push_back(u32_to_utf8(t));
    tok["special_tokens"] = std::move(specials);
  }
  return config_text(model, std::move(tok), extra_json);
}

std::string config_to_json_bpe(const ModelConfig& model, std::size_t bpe_vocab_size,
                               const std::string& extra_json) {
  return config_text(model,
                     {{"type", "bpe"}, {"file", kBpeTokenizerFile}, {"vocab_size", bpe_vocab_size}},
                     extra_json);
}

namespace {

/// The top level of config.json: an object with "format": "glassllm", this program's "version",
/// a "model" and a "tokenizer". ConfigError (fail) otherwise.
void check_top_level(const json& j, const std::string& source) {
  if (!j.is_object()) fail(source, "the top level must be a JSON object");
  if (!j.contains("format") || j["format"] != "glassllm") {
    fail(source, "missing \"format\": \"glassllm\" (not a GlassLLM checkpoint config)");
  }
  if (!j.contains("version") || !j["version"].is_number_integer()) {
    fail(source, "missing integer \"version\"");
  }
  if (j["version"].get<long long>() != kFormatVersion) {
    fail(source, fmt::format("version {} is not supported (this program reads version {})",
                             j["version"].dump(), kFormatVersion));
  }
  if (!j.contains("model")) fail(source, "missing \"model\"");
  if (!j.contains("tokenizer")) fail(source, "missing \"tokenizer\"");
}

/// A BPE "tokenizer" block: its vocab_size equal to the model's `vocab_size`, and the file, when
/// named, tokenizer.json (the vocabulary itself is read from there by load_checkpoint).
void check_bpe_block(const json& tok, std::size_t vocab_size, const std::string& source) {
  if (!tok.contains("vocab_size") || !tok["vocab_size"].is_number_unsigned())
    fail(source, "\"tokenizer\": a BPE tokenizer needs an integer \"vocab_size\"");
  if (tok["vocab_size"].get<std::size_t>() != vocab_size)
    fail(source, fmt::format("\"tokenizer\": the BPE vocabulary has {} tokens but the model's "
                             "vocab_size is {}",
                             tok["vocab_size"].dump(), vocab_size));
  if (tok.contains("file") && tok["file"] != kBpeTokenizerFile)
    fail(source, fmt::format("\"tokenizer\": file {} is not supported (only \"{}\")",
                             tok["file"].dump(), kBpeTokenizerFile));
}

/// The "chars" of a character tokenizer: one character (a UTF-8 string of one code point) per
/// entry, in id order from 1.
std::vector<char32_t> chars_from(const json& tok, const std::string& source) {
  if (!tok.contains("chars") || !tok["chars"].is_array()) {
    fail(source, "\"tokenizer\": missing \"chars\" (an array of one-character strings)");
  }
  std::vector<char32_t> chars;
  const json& list = tok["chars"];
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_string()) {
      fail(source,
           fmt::format("\"tokenizer\": chars[{}] must be a string, got {}", i, list[i].dump()));
    }
    std::u32string decoded;
    try {
      decoded = utf8_to_u32(list[i].get<std::string>());
    } catch (const Utf8Error& e) {
      fail(source, fmt::format("\"tokenizer\": chars[{}]: {}", i, e.what()));
    }
    if (decoded.size() != 1) {
      fail(source, fmt::format("\"tokenizer\": chars[{}] = {} must be exactly one character", i,
                               list[i].dump()));
    }
    chars.push_back(decoded[0]);
  }
  return chars;
}

/// The optional "special_tokens" of a character tokenizer: UTF-8 strings, each one token
/// (none when absent).
std::vector<std::u32string> special_tokens_from(const json& tok, const std::string& source) {
  std::vector<std::u32string> specials;
  if (!tok.contains("special_tokens")) return specials;
  const json& listed = tok["special_tokens"];
  if (!listed.is_array()) fail(source, "\"tokenizer\": \"special_tokens\" must be an array");
  for (std::size_t i = 0; i < listed.size(); ++i) {
    if (!listed[i].is_string())
      fail(source, fmt::format("\"tokenizer\": special_tokens[{}] must be a string, got {}", i,
                               listed[i].dump()));
    try {
      specials.push_back(utf8_to_u32(listed[i].get<std::string>()));
    } catch (const Utf8Error& e) {
      fail(source, fmt::format("\"tokenizer\": special_tokens[{}]: {}", i, e.what()));
    }
  }
  return specials;
}

}  // namespace

CheckpointConfig config_from_json(const std::string& text, const std::string& source) {
  const json j = parse_json(text, source);
  check_top_level(j, source);

  CheckpointConfig config;
  config.model = model_from(j["model"], source);

  const json& tok = j["tokenizer"];
  if (!tok.is_object()) fail(source, "\"tokenizer\" must be a JSON object");
  if (tok.contains("type") && tok["type"] == "bpe") {
    config.tokenizer_kind = TokenizerKind::kBpe;
    check_bpe_block(tok, config.model.vocab_size, source);
    return config;
  }
  if (tok.contains("type") && tok["type"] != "char") {
    fail(source, fmt::format("\"tokenizer\": type {} is not supported (only \"char\" and \"bpe\")",
                             tok["type"].dump()));
  }
  if (tok.contains("unknown_id") && tok["unknown_id"] != Tokenizer::kUnknownId) {
    fail(source, "\"tokenizer\": unknown_id must be 0");
  }
  std::vector<char32_t> chars = chars_from(tok, source);
  std::vector<std::u32string> specials = special_tokens_from(tok, source);
  try {
    config.tokenizer = Tokenizer(std::move(chars), std::move(specials));
  } catch (const std::invalid_argument& e) {
    fail(source, e.what());
  }
  if (config.tokenizer.vocab_size() != config.model.vocab_size) {
    fail(source,
         fmt::format("the tokenizer has {} characters (vocab_size {} with the unknown id 0) "
                     "but the model's vocab_size is {}",
                     config.tokenizer.chars().size(), config.tokenizer.vocab_size(),
                     config.model.vocab_size));
  }
  return config;
}

}  // namespace glass
