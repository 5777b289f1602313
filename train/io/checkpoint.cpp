// Checkpoint directories: model weights (safetensors, Meta LLaMA names) and config.json. See
// train/io/checkpoint.hpp; the training state for an exact resume is train/train_state.cpp.

#include "train/io/checkpoint.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "train/io/atomic_file.hpp"
#include "train/io/checkpoint_files.hpp"
#include "train/io/config_json.hpp"
#include "train/io/model_size.hpp"
#include "train/io/safetensors.hpp"

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
  const auto bad = std::find_if(t->data.begin(), t->data.end(), [](float x) { return !std::isfinite(x); });
  if (bad != t->data.end())
    throw CheckpointError(fmt::format("{}: tensor '{}' holds a non-finite value ({}) at index {}: the "
                                      "file is corrupt",
                                      source, name, std::isnan(*bad) ? "NaN" : "inf",
                                      bad - t->data.begin()));
  std::copy(t->data.begin(), t->data.end(), target.data());
}

json read_json(const std::string& path) {
  const std::string text = as_checkpoint_error([&] { return read_file(path); });
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    throw CheckpointError(fmt::format("{}: not valid JSON ({})", path, e.what()));
  }
}

}  // namespace checkpoint_files

using namespace checkpoint_files;

// ---- model ------------------------------------------------------------------------------------

void save_model(const std::string& dir, const Decoder& model, const Tokenizer& tokenizer,
                const std::string& weights_file, const std::string& extra_json, long step) {
  as_checkpoint_error([&] {
    ensure_directory(dir);
    std::vector<NamedTensor> tensors;
    for (const auto& [name, param] : model.named_parameters())
      tensors.push_back(to_named(name, param.value()));
    std::map<std::string, std::string> metadata = {{"format", "pt"}};
    if (step >= 0) metadata["step"] = std::to_string(step);
    save_safetensors(path_in(dir, weights_file), tensors, metadata);
    write_file_atomic(path_in(dir, "config.json"),
                      config_to_json(model.config(), tokenizer, extra_json));
    return 0;
  });
}

LoadedModel load_checkpoint(const std::string& dir, bool best) {
  if (fs::exists(dir) && !fs::is_directory(dir))
    throw CheckpointError(fmt::format("'{}' is a file; a checkpoint is the directory glass train "
                                      "wrote (its --out)", dir));
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
    CheckpointConfig config = config_from_json(read_file(config_path), config_path);
    SafetensorsContents weights = load_safetensors(weights_path);
    // A corrupt config.json (say "d_model": 1000000000) must not exhaust the memory before the
    // shapes are compared with the weights.
    // Weights, the RoPE tables (context_length x head_dim) and a one-sequence KV cache (keys and
    // values of every layer: context_length x n_kv_heads x head_dim each), in float32.
    const ModelConfig& m = config.model;
    const double n_params = parameter_count(m);
    const double per_position = static_cast<double>(m.head_dim()) *
                                (1 + 2 * static_cast<double>(m.n_layers) * static_cast<double>(m.n_kv_heads));
    const double need = 4 * (n_params + static_cast<double>(m.context_length) * per_position);
    const double memory = physical_memory_bytes();
    if (memory > 0 && need > memory)
      throw CheckpointError(fmt::format(
          "{}: the model it describes ({:.4g} parameters, context_length {}) needs at least {}, "
          "more than this machine's memory ({}): is the file corrupt?",
          config_path, n_params, config.model.context_length, format_bytes(need), format_bytes(memory)));
    LoadedModel loaded;
    loaded.config = config.model;
    loaded.tokenizer = std::move(config.tokenizer);
    if (const auto it = weights.metadata.find("step"); it != weights.metadata.end())
      loaded.weights_step = it->second;
    try {
      loaded.model = std::make_unique<Decoder>(config.model, 0);
    } catch (const std::invalid_argument& e) {
      throw CheckpointError(fmt::format("{}: {}", config_path, e.what()));
    }
    const auto params = loaded.model->named_parameters();
    for (auto [name, param] : params) copy_into(weights, weights_path, name, param.value());
    for (const NamedTensor& t : weights.tensors) {
      const bool known = std::any_of(params.begin(), params.end(),
                                     [&](const auto& p) { return p.first == t.name; });
      if (!known)
        throw CheckpointError(fmt::format("{}: unexpected tensor '{}' (not a parameter of the model "
                                          "described by config.json)", weights_path, t.name));
    }
    return loaded;
  });
}

std::size_t training_context(const std::string& dir) {
  const json j = read_json(path_in(dir, "config.json"));
  if (!j.contains("training") || !j["training"].is_object() || !j["training"].contains("context"))
    return 0;
  const json& c = j["training"]["context"];
  if (!c.is_number_unsigned() || c.get<std::size_t>() == 0)
    throw CheckpointError(path_in(dir, "config.json") + ": training.context must be a positive integer");
  return c.get<std::size_t>();
}

}  // namespace glass
