// The training state of a checkpoint directory (AdamW moments, step, RNG states, log), for an
// exact --resume. See train_state.hpp.

#include "train/train_state.hpp"

#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "train/io/checkpoint_files.hpp"

namespace glass {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace checkpoint_files;

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
      s.step = j.at("step").get<long>();
      s.batch_rng = j.at("batch_rng").get<std::string>();
      s.sample_rng = j.at("sample_rng").get<std::string>();
      s.best_val = j.at("best_val").get<double>();
      s.has_best = j.at("has_best").get<bool>();
      s.elapsed_s = j.at("elapsed_s").get<double>();
      s.context = j.at("context").get<std::size_t>();
      for (const json& r : j.at("log"))
        s.log.push_back({r.at(0).get<long>(), r.at(1).get<double>(), r.at(2).get<double>(),
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
