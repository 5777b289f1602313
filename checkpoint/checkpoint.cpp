// Checkpoint directories: model weights (safetensors, Meta LLaMA names) and config.json. See
// checkpoint/checkpoint.hpp; the training state for an exact resume is train/train_state.cpp.

#include "checkpoint/checkpoint.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "data/text.hpp"
#include "checkpoint/atomic_file.hpp"
#include "checkpoint/checkpoint_files.hpp"
#include "checkpoint/config_json.hpp"
#include "data/json_no_duplicates.hpp"
#include "checkpoint/manifest.hpp"
#include "checkpoint/model_size.hpp"
#include "checkpoint/run_dir.hpp"
#include "checkpoint/safetensors.hpp"
#include "checkpoint/sha256.hpp"

#include <map>

namespace glass {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace checkpoint_files {

namespace {

std::string shape_text(const std::vector<std::size_t>& shape) {
  return shape_str(Shape(shape.begin(), shape.end()));
}

}  // namespace

NamedTensor to_named(const std::string& name, const Array& value) {
  NamedTensor t;
  t.name = name;
  t.shape.assign(value.shape().begin(), value.shape().end());
  t.data.assign(value.data(), value.data() + value.size());
  return t;
}

void copy_into(const SafetensorsContents& file, const std::string& source, const std::string& name,
               Array& target) {
  const NamedTensor* t = file.find(name);
  if (t == nullptr) throw CheckpointError(fmt::format("{}: missing tensor '{}'", source, name));
  if (t->dtype != Dtype::F32)
    throw CheckpointError(fmt::format("{}: tensor '{}' must be F32", source, name));
  const Shape expected = shape_of(target);
  if (Shape(t->shape.begin(), t->shape.end()) != expected)
    throw CheckpointError(fmt::format("{}: tensor '{}' has shape {}, the model expects {}", source,
                                      name, shape_text(t->shape), shape_str(expected)));
  // Training never saves a non-finite value (a NaN loss or gradient stops it first), so one here
  // means a corrupt file; it would otherwise turn every prediction into NaN.
  const auto bad =
      std::find_if(t->data.begin(), t->data.end(), [](float x) { return !std::isfinite(x); });
  if (bad != t->data.end())
    throw CheckpointError(
        fmt::format("{}: tensor '{}' holds a non-finite value ({}) at index {}: the "
                    "file is corrupt",
                    source, name, std::isnan(*bad) ? "NaN" : "inf", bad - t->data.begin()));
  std::copy(t->data.begin(), t->data.end(), target.data());
}

json read_json(const std::string& path) {
  const std::string text = as_checkpoint_error([&] { return read_checkpoint_file(path); });
  try {
    return parse_json_no_duplicate_keys(text);
  } catch (const DuplicateKeyError& e) {
    throw CheckpointError(fmt::format("{}: {}", path, e.what()));
  } catch (const JsonTooDeepError& e) {
    throw CheckpointError(fmt::format("{}: {}", path, e.what()));
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number like 1e999
    throw CheckpointError(fmt::format("{}: not valid JSON ({})", path, e.what()));
  }
}

/// The tokenizer's characters in id order (id 1 first) as one UTF-8 string: recorded in the
/// weights file's metadata ("tokenizer_chars"), so that a config.json whose tokenizer lists the
/// same characters in another order (every id would then mean another character) is refused.
std::string tokenizer_fingerprint(const Tokenizer& tokenizer) {
  std::string text;
  for (char32_t c : tokenizer.chars()) text += char_to_utf8(c);
  return text;
}

/// config.json's "training": {"run_id"}, or "" when absent.
std::string config_run_id(const json& config) {
  if (config.contains("training") && config["training"].is_object() &&
      config["training"].contains("run_id") && config["training"]["run_id"].is_string())
    return config["training"]["run_id"].get<std::string>();
  return "";
}

/// Refuses two files of one checkpoint that record different run ids (or one records a run id
/// and the other none): they come from two runs (e.g. two trainers on one directory, or files
/// copied by hand).
void check_same_run(const std::string& dir, const std::string& file_a, const std::string& id_a,
                    const std::string& file_b, const std::string& id_b) {
  if (id_a == id_b) return;
  throw CheckpointError(fmt::format(
      "{}: the checkpoint mixes files of two runs: {} belongs to run {} but {} to run {}. "
      "Sample from a checkpoint whose files were written together, or start a new run",
      dir, file_a, id_a.empty() ? "(none recorded)" : id_a, file_b,
      id_b.empty() ? "(none recorded)" : id_b));
}

void check_save_consistency(const std::string& dir, const Manifest& manifest, const json& training,
                            const std::string& weights_run_id, const std::string& weights_step,
                            const ModelConfig& model) {
  const std::string config_path = path_in(dir, "config.json");
  if (!training.is_object())
    throw CheckpointError(config_path + ": \"training\" must be an object");
  // A save of a run (a step directory) written with a manifest must still have it; files copied
  // out of a save (a flat directory) are read without, with a warning (load_checkpoint).
  fs::path named = fs::path(dir).lexically_normal();
  if (named.filename().empty()) named = named.parent_path();
  if (!manifest.present && training.contains("manifest") &&
      is_step_dir_name(named.filename().string()))
    throw CheckpointError(fmt::format(
        "{}: the save has no {} although its config.json says it was written with one: its files "
        "cannot be verified. Restore the file, or use another save of the run",
        dir, kManifestFile));
  if (manifest.present) {
    check_same_run(dir, kManifestFile, manifest.run_id, "the weights", weights_run_id);
    if (!weights_step.empty() && weights_step != std::to_string(manifest.step))
      throw CheckpointError(fmt::format(
          "{}: the weights record step {} but the save's {} step {} "
          "(files of two saves mixed?)",
          dir, weights_step.empty() ? "(none)" : weights_step, kManifestFile, manifest.step));
  }
  if (training.contains("step") && !weights_step.empty() && training["step"].dump() != weights_step)
    throw CheckpointError(fmt::format(
        "{}: training.step is {} but the weights record step {} (files of two saves mixed, or "
        "config.json edited?)",
        config_path, training["step"].dump(), weights_step));
  if (training.contains("context")) {
    const json& c = training["context"];
    if (!c.is_number_unsigned() || c.get<std::size_t>() == 0)
      throw CheckpointError(fmt::format("{}: training.context must be a positive integer (got {})",
                                        config_path, c.dump()));
    if (c.get<std::size_t>() > model.context_length)
      throw CheckpointError(fmt::format(
          "{}: training.context {} exceeds the model's context_length {}: the file is corrupt",
          config_path, c.dump(), model.context_length));
  }
}

}  // namespace checkpoint_files

using namespace checkpoint_files;

// ---- model ------------------------------------------------------------------------------------

/// The model's parameters as named tensors, in parameter order (the weights file's content).
static std::vector<NamedTensor> named_weights(const Decoder& model) {
  std::vector<NamedTensor> tensors;
  for (const auto& [name, param] : model.named_parameters())
    tensors.push_back(to_named(name, param.value()));
  return tensors;
}

/// The weights file's metadata common to both tokenizers: format, step (if >= 0), run id.
static std::map<std::string, std::string> weights_metadata(long step, const std::string& run_id) {
  std::map<std::string, std::string> metadata = {{"format", "pt"}};
  if (step >= 0) metadata["step"] = std::to_string(step);
  if (!run_id.empty()) metadata["run_id"] = run_id;
  return metadata;
}

void save_model(const std::string& dir, const Decoder& model, const Tokenizer& tokenizer,
                const std::string& weights_file, const std::string& extra_json, long step,
                const std::string& run_id) {
  as_checkpoint_error([&] {
    ensure_directory(dir);
    const std::vector<NamedTensor> tensors = named_weights(model);
    std::map<std::string, std::string> metadata = weights_metadata(step, run_id);
    metadata["tokenizer_chars"] = tokenizer_fingerprint(tokenizer);
    save_safetensors(path_in(dir, weights_file), tensors, metadata);
    write_file_atomic(path_in(dir, "config.json"),
                      config_to_json(model.config(), tokenizer, extra_json));
    return 0;
  });
}

void save_model(const std::string& dir, const Decoder& model, const BpeTokenizer& tokenizer,
                const std::string& weights_file, const std::string& extra_json, long step,
                const std::string& run_id) {
  if (tokenizer.vocab_size() != model.config().vocab_size)
    throw CheckpointError(
        fmt::format("save_model: the BPE tokenizer has {} tokens but the model's "
                    "vocab_size is {}",
                    tokenizer.vocab_size(), model.config().vocab_size));
  as_checkpoint_error([&] {
    ensure_directory(dir);
    const std::string tokenizer_json = bpe_to_json(tokenizer);
    write_file_atomic(path_in(dir, kBpeTokenizerFile), tokenizer_json);
    const std::vector<NamedTensor> tensors = named_weights(model);
    std::map<std::string, std::string> metadata = weights_metadata(step, run_id);
    metadata["tokenizer"] = "bpe";
    metadata["tokenizer_sha256"] = sha256_hex(tokenizer_json);
    save_safetensors(path_in(dir, weights_file), tensors, metadata);
    write_file_atomic(path_in(dir, "config.json"),
                      config_to_json_bpe(model.config(), tokenizer.vocab_size(), extra_json));
    return 0;
  });
}

namespace {

/// The entry `key` of the weights file's metadata, "" when absent.
std::string metadata_entry(const std::map<std::string, std::string>& metadata, const char* key) {
  const auto it = metadata.find(key);
  return it == metadata.end() ? std::string() : it->second;
}

/// A BPE model's DIR/tokenizer.json: present, unchanged since the manifest, of the weights'
/// vocabulary size and the SHA-256 they record. Throws CheckpointError.
BpeTokenizer read_bpe_tokenizer(const std::string& dir, const Manifest& manifest,
                                const ModelConfig& model,
                                const std::map<std::string, std::string>& metadata,
                                const std::string& weights_name) {
  const std::string tokenizer_path = path_in(dir, kBpeTokenizerFile);
  if (!fs::exists(tokenizer_path))
    throw CheckpointError(fmt::format(
        "'{}' is a BPE model (config.json: \"tokenizer\": {{\"type\": \"bpe\"}}) but its "
        "{} is missing: without it the ids mean nothing. Restore the file, or use another "
        "save of the run",
        dir, kBpeTokenizerFile));
  const std::string tokenizer_text = read_checkpoint_file(tokenizer_path);
  check_against_manifest(manifest, dir, kBpeTokenizerFile, tokenizer_text);
  if (metadata_entry(metadata, "tokenizer") != "bpe")
    throw CheckpointError(fmt::format(
        "{}: config.json describes a BPE model but {} was not saved with a BPE tokenizer "
        "(files of two checkpoints mixed?)",
        dir, weights_name));
  BpeTokenizer tokenizer;
  try {
    tokenizer = bpe_from_json(tokenizer_text, tokenizer_path);
  } catch (const TokenizerJsonError& e) {
    throw CheckpointError(e.what());
  }
  if (tokenizer.vocab_size() != model.vocab_size)
    throw CheckpointError(fmt::format(
        "{}: the tokenizer has {} tokens but the model's embedding has {} rows (vocab_size in "
        "config.json): the tokenizer does not belong to these weights",
        tokenizer_path, tokenizer.vocab_size(), model.vocab_size));
  if (metadata.count("tokenizer_sha256") != 0 &&
      metadata_entry(metadata, "tokenizer_sha256") != sha256_hex(tokenizer_text))
    throw CheckpointError(fmt::format(
        "{}: {} is not the tokenizer {} was trained with (its SHA-256 differs from the one "
        "the weights record): every id would mean another token. Was it edited or copied "
        "from another checkpoint?",
        dir, kBpeTokenizerFile, weights_name));
  return tokenizer;
}

/// Refuses a character model's config.json whose characters are not the ones (in the order)
/// the weights record ("tokenizer_chars"), or weights saved with a BPE tokenizer.
void check_character_tokenizer(const std::string& dir, const Tokenizer& listed_tokenizer,
                               const std::map<std::string, std::string>& metadata,
                               const std::string& weights_path) {
  const std::string config_path = path_in(dir, "config.json");
  const std::string weights_name = fs::path(weights_path).filename().string();
  if (metadata_entry(metadata, "tokenizer") == "bpe")
    throw CheckpointError(fmt::format(
        "{}: {} was saved with a BPE tokenizer but config.json describes a character model "
        "(files of two checkpoints mixed?)",
        dir, weights_name));
  if (metadata.count("tokenizer_chars") == 0 ||
      metadata_entry(metadata, "tokenizer_chars") == tokenizer_fingerprint(listed_tokenizer))
    return;
  std::u32string trained;
  try {
    trained = utf8_to_u32(metadata_entry(metadata, "tokenizer_chars"));
  } catch (const Utf8Error&) {
    throw CheckpointError(
        fmt::format("{}: metadata \"tokenizer_chars\" is not valid UTF-8: the "
                    "file is corrupt",
                    weights_path));
  }
  const std::vector<char32_t>& listed = listed_tokenizer.chars();
  std::size_t i = 0;
  while (i < trained.size() && i < listed.size() && trained[i] == listed[i]) ++i;
  throw CheckpointError(fmt::format(
      "{}: the tokenizer does not match the one {} was trained with: id {} is {} in "
      "config.json but {} in the weights ({} and {} characters); every id would mean another "
      "character. Was config.json edited or copied from another checkpoint?",
      config_path, weights_name, i + 1,
      i < listed.size() ? describe_char(listed[i]) : std::string("missing"),
      i < trained.size() ? describe_char(trained[i]) : std::string("missing"), listed.size(),
      trained.size()));
}

/// The tokenizer a save was trained with, checked against the weights it belongs to: the one
/// place that reads the kind config.json records ("tokenizer": {"type": "bpe"}: tokenizer.json;
/// otherwise the characters config.json lists). Throws CheckpointError.
TextTokenizer read_saved_tokenizer(const std::string& dir, const Manifest& manifest,
                                   CheckpointConfig& config,
                                   const std::map<std::string, std::string>& metadata,
                                   const std::string& weights_path) {
  if (config.tokenizer_kind == TokenizerKind::kBpe)  // the file format: which file holds it
    return TextTokenizer(read_bpe_tokenizer(dir, manifest, config.model, metadata,
                                            fs::path(weights_path).filename().string()));
  check_character_tokenizer(dir, config.tokenizer, metadata, weights_path);
  return TextTokenizer(std::move(config.tokenizer));
}

/// Refuses a model (config.json at `config_path`) whose weights, RoPE tables (context_length x
/// head_dim) and one-sequence KV cache (keys and values of every layer: context_length x
/// n_kv_heads x head_dim each), in float32, need more than the memory available now.
void check_memory_for(const ModelConfig& model, const std::string& config_path) {
  const ModelConfig& m = model;
  const double n_params = parameter_count(m);
  const double per_position =
      static_cast<double>(m.head_dim()) *
      (1 + 2 * static_cast<double>(m.n_layers) * static_cast<double>(m.n_kv_heads));
  const double need = 4 * (n_params + static_cast<double>(m.context_length) * per_position);
  const double memory = available_memory_bytes();
  if (memory > 0 && need > memory)
    throw CheckpointError(fmt::format(
        "{}: the model it describes ({:.4g} parameters, context_length {}) needs at least {}, "
        "more than the memory available now ({}): is the file corrupt?",
        config_path, n_params, model.context_length, format_bytes(need), format_bytes(memory)));
}

/// The model `config` describes (config.json at `config_path`), its parameters read from
/// `weights` (the file at `weights_path`): every parameter present with its shape, no other
/// tensor. Throws CheckpointError.
std::unique_ptr<Decoder> model_from_weights(const ModelConfig& config,
                                            const SafetensorsContents& weights,
                                            const std::string& weights_path,
                                            const std::string& config_path) {
  // A config.json of absurd shapes (n_layers 100000 on a small model's weights) is refused
  // before the model it describes is allocated: it cannot describe more parameters than the
  // weights hold values, beyond the per-layer norm vectors a recipe option adds (QK-norm).
  double values = 0;
  for (const NamedTensor& t : weights.tensors) values += static_cast<double>(t.data.size());
  const double norms =
      (4 * static_cast<double>(config.n_layers) + 1) * static_cast<double>(config.d_model);
  if (parameter_count(config) > values + norms)
    throw CheckpointError(fmt::format(
        "{}: the shapes it describes need {:.0f} parameters but {} holds only {:.0f} values: "
        "the files do not belong together, or one is corrupt",
        config_path, parameter_count(config), weights_path, values));
  std::unique_ptr<Decoder> model;
  try {
    model = std::make_unique<Decoder>(config, 0);
  } catch (const std::invalid_argument& e) {
    throw CheckpointError(fmt::format("{}: {}", config_path, e.what()));
  }
  const auto params = model->named_parameters();
  for (auto [name, param] : params) copy_into(weights, weights_path, name, param.value());
  for (const NamedTensor& t : weights.tensors) {
    const bool known =
        std::any_of(params.begin(), params.end(), [&](const auto& p) { return p.first == t.name; });
    if (!known)
      throw CheckpointError(
          fmt::format("{}: unexpected tensor '{}' (not a parameter of the model "
                      "described by config.json)",
                      weights_path, t.name));
  }
  return model;
}

}  // namespace

Checkpoint::Checkpoint(ModelConfig config, TextTokenizer tokenizer, std::unique_ptr<Decoder> model,
                       std::size_t training_context, SaveOrigin origin)
    : config_(config),
      tokenizer_(std::make_shared<const TextTokenizer>(std::move(tokenizer))),
      model_(std::move(model)),
      window_(training_context == 0 ? config.context_length : training_context),
      origin_(std::move(origin)) {
  if (!model_) throw std::invalid_argument("a checkpoint needs its model");
  if (training_context > config.context_length)
    throw std::invalid_argument(
        fmt::format("training context {} exceeds the model's context_length {}", training_context,
                    config.context_length));
}

Checkpoint load_checkpoint(const std::string& run_dir, bool best) {
  if (fs::exists(run_dir) && !fs::is_directory(run_dir))
    throw CheckpointError(
        fmt::format("'{}' is a file; a checkpoint is the directory glass train wrote", run_dir));
  // A lost `current`: the newest complete save, said so, and the run left as it is (a resume
  // links it again).
  const SaveToRead read = save_to_read(run_dir);
  const std::string lost_link =
      read.fallback.empty()
          ? ""
          : fmt::format(
                "{}: reading the newest complete save, {} (glass train --resume restores "
                "the link)",
                read.reason, read.fallback);
  // The last complete save of a run, kept from the trainer's cleanup until the model is dropped.
  auto pin = std::make_shared<SavePin>(read.dir);
  const std::string dir = pin->dir();
  if (fs::exists(dir) && !fs::is_directory(dir))
    throw CheckpointError(
        fmt::format("'{}' is a file; a checkpoint is the directory glass train wrote", dir));
  if (!fs::is_directory(dir))
    throw CheckpointError(fmt::format("checkpoint directory '{}' does not exist", dir));
  const std::string config_path = path_in(dir, "config.json");
  const std::string weights_path = path_in(dir, best ? "best.safetensors" : "model.safetensors");
  if (!fs::exists(config_path))
    throw CheckpointError(fmt::format("'{}' is not a checkpoint: it has no config.json", dir));
  if (!fs::exists(weights_path))
    throw CheckpointError(fmt::format("'{}' is not a complete checkpoint: {} is missing", dir,
                                      fs::path(weights_path).filename().string()));
  return as_checkpoint_error([&] {
    const std::string weights_name = fs::path(weights_path).filename().string();
    // Each file is checked against the manifest as read, before it is parsed.
    const Manifest manifest = read_manifest(dir);
    const std::string config_text = read_checkpoint_file(config_path);
    check_against_manifest(manifest, dir, "config.json", config_text);
    const std::string weights_bytes = read_checkpoint_file(weights_path);
    check_against_manifest(manifest, dir, weights_name, weights_bytes);
    CheckpointConfig config = config_from_json(config_text, config_path);
    SafetensorsContents weights = safetensors_parse(weights_bytes, weights_path);
    const auto meta = [&](const char* key) { return metadata_entry(weights.metadata, key); };
    const json config_json = json::parse(config_text);
    const json training = config_json.value("training", json::object());
    check_same_run(dir, "config.json", config_run_id(config_json), weights_name, meta("run_id"));
    // The best weights record the step of the best evaluation, older than the save's: only the
    // current weights are held to the save's step (the manifest's checksum covers both; the
    // trainer always records the step of the current weights).
    check_save_consistency(dir, manifest, training, meta("run_id"), best ? "" : meta("step"),
                           config.model);
    std::string unverified;
    if (!manifest.present && training.is_object() && !training.empty())
      unverified = fmt::format(
          "{} has no {} (a save written before saves carried one, or files copied without it): "
          "its files cannot be verified. A --resume of the run writes one at its next save",
          dir, kManifestFile);
    TextTokenizer tokenizer =
        read_saved_tokenizer(dir, manifest, config, weights.metadata, weights_path);
    // A corrupt config.json (say "d_model": 1000000000) must not exhaust the memory before the
    // shapes are compared with the weights.
    check_memory_for(config.model, config_path);
    std::unique_ptr<Decoder> model =
        model_from_weights(config.model, weights, weights_path, config_path);
    // check_save_consistency has checked it: a positive integer, at most context_length.
    const std::size_t context =
        training.is_object() ? training.value("context", std::size_t(0)) : std::size_t(0);
    const std::string warning = lost_link.empty()    ? unverified
                                : unverified.empty() ? lost_link
                                                     : lost_link + "; " + unverified;
    SaveOrigin origin{meta("step"), meta("run_id"), dir, pin, warning};
    return Checkpoint(config.model, std::move(tokenizer), std::move(model), context,
                      std::move(origin));
  });
}

std::size_t training_context(const std::string& run_dir) {
  const std::string dir = SavePin(run_dir).dir();
  const json j = read_json(path_in(dir, "config.json"));
  if (!j.contains("training") || !j["training"].is_object() || !j["training"].contains("context"))
    return 0;
  const json& c = j["training"]["context"];
  if (!c.is_number_unsigned() || c.get<std::size_t>() == 0)
    throw CheckpointError(path_in(dir, "config.json") +
                          ": training.context must be a positive integer");
  return c.get<std::size_t>();
}

std::string training_data(const std::string& run_dir) {
  const json j = read_json(path_in(checkpoint_files_dir(run_dir), "config.json"));
  if (!j.contains("training") || !j["training"].is_object() || !j["training"].contains("data") ||
      !j["training"]["data"].is_string())
    return "";
  return j["training"]["data"].get<std::string>();
}

}  // namespace glass
