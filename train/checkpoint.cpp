// Checkpoint directories: model weights (safetensors, Meta LLaMA names), config.json and the
// training state for an exact resume. See train/checkpoint.hpp and train/train_state.hpp.

#include "train/checkpoint.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "train/atomic_file.hpp"
#include "train/config_json.hpp"
#include "train/model_size.hpp"
#include "train/safetensors.hpp"
#include "train/train_state.hpp"

#include <map>

namespace glass {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::string path_in(const std::string& dir, const std::string& file) {
  return (fs::path(dir) / file).string();
}

std::string shape_text(const std::vector<std::size_t>& shape) {
  return shape_str(Shape(shape.begin(), shape.end()));
}

NamedTensor to_named(const std::string& name, const Array& value) {
  NamedTensor t;
  t.name = name;
  t.shape.assign(value.shape().begin(), value.shape().end());
  t.data.assign(value.data(), value.data() + value.size());
  return t;
}

/// Copies the F32 tensor `name` of `file` into `target`, checking presence, dtype and shape.
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

/// Runs `f`, turning the I/O and format errors of the helpers into CheckpointError.
template <class F>
auto as_checkpoint_error(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const CheckpointError&) {
    throw;
  } catch (const FileError& e) {
    throw CheckpointError(e.what());
  } catch (const SafetensorsError& e) {
    throw CheckpointError(e.what());
  } catch (const ConfigError& e) {
    throw CheckpointError(e.what());
  } catch (const json::exception& e) {
    throw CheckpointError(e.what());
  }
}

json read_json(const std::string& path) {
  const std::string text = as_checkpoint_error([&] { return read_file(path); });
  try {
    return json::parse(text);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number like 1e999
    throw CheckpointError(fmt::format("{}: not valid JSON ({})", path, e.what()));
  }
}

}  // namespace

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

// ---- training state ------------------------------------------------------------------------

std::string log_csv(const std::vector<LogRow>& rows) {
  std::string text = "step,lr,train_loss,val_loss,tokens_per_s,elapsed_s\n";
  for (const LogRow& r : rows)
    text += fmt::format("{},{:.6e},{:.6f},{:.6f},{:.1f},{:.2f}\n", r.step, r.lr, r.train_loss,
                        r.val_loss, r.tokens_per_s, r.elapsed_s);
  return text;
}

bool has_train_state(const std::string& dir) {
  for (const char* f : {"config.json", "model.safetensors", "train_state.json", "train_state.safetensors"})
    if (!fs::exists(path_in(dir, f))) return false;
  return true;
}

void save_train_state(const std::string& dir, const AdamW& optimizer, const TrainState& state) {
  as_checkpoint_error([&] {
    std::vector<NamedTensor> moments;
    for (const AdamWParam& p : optimizer.params()) {
      moments.push_back(to_named("m." + p.name, p.m));
      moments.push_back(to_named("v." + p.name, p.v));
    }
    save_safetensors(path_in(dir, "train_state.safetensors"), moments,
                     {{"step", std::to_string(state.step)}});
    json log = json::array();
    for (const LogRow& r : state.log)
      log.push_back({r.step, r.lr, r.train_loss, r.val_loss, r.tokens_per_s, r.elapsed_s});
    json j = {{"step", state.step},
              {"batch_rng", state.batch_rng},
              {"sample_rng", state.sample_rng},
              {"best_val", state.best_val},
              {"has_best", state.has_best},
              {"elapsed_s", state.elapsed_s},
              {"context", state.context},
              {"adamw", {{"beta1", optimizer.config().beta1},
                         {"beta2", optimizer.config().beta2},
                         {"eps", optimizer.config().eps},
                         {"weight_decay", optimizer.config().weight_decay}}},
              {"log", log}};
    write_file_atomic(path_in(dir, "train_state.json"), j.dump(1) + "\n");
    return 0;
  });
}

namespace {

// The files of one checkpoint are written one after the other (model.safetensors, config.json,
// then the training state), each atomically; a save cut short between them (a second Ctrl-C,
// a crash) leaves weights of one step next to a training state of another. Resuming from that
// would continue silently from the wrong point, so the steps recorded in model.safetensors'
// metadata (`weights_step`, as load_checkpoint read it) and in config.json ("training":
// {"step"}) must equal the training state's. A checkpoint written before those records existed
// has neither, and is not checked.
void check_same_step(const std::string& dir, long state_step, const std::string& weights_step) {
  auto mismatch = [&](const std::string& file, const std::string& step) {
    return CheckpointError(fmt::format(
        "{}: the checkpoint is inconsistent: {} is at step {} but the training state "
        "(train_state.json) at step {}, so a save was interrupted (e.g. by a second Ctrl-C). "
        "It cannot be resumed exactly; sample from it, or start a new run in another directory",
        dir, file, step, state_step));
  };
  const std::string config_path = path_in(dir, "config.json");
  const json config = read_json(config_path);
  if (config.contains("training") && config["training"].is_object() &&
      config["training"].contains("step")) {
    const json& step = config["training"]["step"];
    if (!step.is_number_integer() || step.get<long>() != state_step)
      throw mismatch("config.json", step.dump());
  }
  if (!weights_step.empty() && weights_step != std::to_string(state_step))
    throw mismatch("model.safetensors", weights_step);
}

}  // namespace

TrainState load_train_state(const std::string& dir, AdamW& optimizer, const std::string& weights_step) {
  const std::string json_path = path_in(dir, "train_state.json");
  const std::string tensors_path = path_in(dir, "train_state.safetensors");
  const json j = read_json(json_path);
  return as_checkpoint_error([&] {
    TrainState s;
    try {
      // get<long> of a JSON number that is not an integer (3.5e50) would be an out-of-range
      // conversion, undefined behaviour: the integer fields must hold integers.
      auto integer = [&](const json& v, const char* field) -> const json& {
        if (!v.is_number_integer())
          throw CheckpointError(fmt::format("{}: \"{}\" must be an integer, got {}", json_path, field, v.dump()));
        return v;
      };
      s.step = integer(j.at("step"), "step").get<long>();
      s.batch_rng = j.at("batch_rng").get<std::string>();
      s.sample_rng = j.at("sample_rng").get<std::string>();
      s.best_val = j.at("best_val").get<double>();
      s.has_best = j.at("has_best").get<bool>();
      s.elapsed_s = j.at("elapsed_s").get<double>();
      s.context = integer(j.at("context"), "context").get<std::size_t>();
      for (const json& r : j.at("log"))
        s.log.push_back({integer(r.at(0), "log step").get<long>(), r.at(1).get<double>(), r.at(2).get<double>(),
                         r.at(3).get<double>(), r.at(4).get<double>(), r.at(5).get<double>()});
    } catch (const json::exception& e) {
      throw CheckpointError(fmt::format("{}: {}", json_path, e.what()));
    }
    if (s.step < 0) throw CheckpointError(json_path + ": step must be >= 0");
    const SafetensorsContents moments = load_safetensors(tensors_path);
    const auto it = moments.metadata.find("step");
    if (it == moments.metadata.end() || it->second != std::to_string(s.step))
      throw CheckpointError(fmt::format(
          "{} and {} disagree on the step (an interrupted save?)", tensors_path, json_path));
    check_same_step(dir, s.step, weights_step);
    for (AdamWParam& p : optimizer.params()) {
      copy_into(moments, tensors_path, "m." + p.name, p.m);
      copy_into(moments, tensors_path, "v." + p.name, p.v);
    }
    optimizer.set_step_count(s.step);
    return s;
  });
}

}  // namespace glass
