// The training state of a checkpoint directory (AdamW moments, step, RNG states, log), for an
// exact --resume. See train_state.hpp.

#include "train/train_state.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint_files.hpp"
#include "checkpoint/manifest.hpp"
#include "checkpoint/run_dir.hpp"
#include "train/errors.hpp"

namespace glass {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace checkpoint_files;

bool has_train_state(const std::string& run_dir) {
  const std::string dir = checkpoint_files_dir(run_dir);
  for (const char* f :
       {"config.json", "model.safetensors", "train_state.json", "train_state.safetensors"})
    if (!fs::exists(path_in(dir, f))) return false;
  return true;
}

void save_train_state(const std::string& dir, const AdamW& optimizer, const TrainState& state,
                      const Muon* muon) {
  as_checkpoint_error([&] {
    std::vector<NamedTensor> moments;
    for (const AdamWParam& p : optimizer.params()) {
      moments.push_back(to_named("m." + p.name, p.m));
      moments.push_back(to_named("v." + p.name, p.v));
    }
    if (muon != nullptr)
      for (const MuonParam& p : muon->params())
        moments.push_back(to_named("muon." + p.name, p.momentum));
    std::map<std::string, std::string> metadata = {{"step", std::to_string(state.step)}};
    if (!state.run_id.empty()) metadata["run_id"] = state.run_id;
    save_safetensors(path_in(dir, "train_state.safetensors"), moments, metadata);
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
              {"adamw",
               {{"beta1", optimizer.config().beta1},
                {"beta2", optimizer.config().beta2},
                {"eps", optimizer.config().eps},
                {"weight_decay", optimizer.config().weight_decay}}},
              {"log", log}};
    if (!state.run_id.empty()) j["run_id"] = state.run_id;
    // Only a Muon run writes its block (and recipe fields): an AdamW save stays as it was.
    if (muon != nullptr)
      j["muon"] = {{"momentum", muon->config().momentum},
                   {"ns_steps", muon->config().ns_steps},
                   {"eps", muon->config().eps}};
    if (state.has_recipe) {
      const TrainRecipe& r = state.recipe;
      j["recipe"] = {{"lr", r.lr},
                     {"min_lr", r.min_lr},
                     {"warmup", r.warmup},
                     {"decay_iters", r.decay_iters},
                     {"batch_size", r.batch_size},
                     {"grad_clip", r.grad_clip}};
      if (r.iters > 0) j["recipe"]["iters"] = r.iters;
      if (r.time_budget_s > 0) j["recipe"]["time_budget_s"] = r.time_budget_s;
      if (r.zero_init_out) j["recipe"]["zero_init_out"] = true;
      if (r.optimizer != "adamw") {
        j["recipe"]["optimizer"] = r.optimizer;
        j["recipe"]["muon_lr"] = r.muon_lr;
      }
      if (!r.chat_base.empty()) {  // a chat fine-tune alone: a text run's file is as before
        j["recipe"]["chat"] = {{"base", r.chat_base}, {"base_sha256", r.chat_base_sha256}};
        // Written when not the default, so a masked fine-tune's file is as before.
        if (r.chat_loss_on_all) j["recipe"]["chat"]["loss_on"] = "all";
      }
    }
    if (state.overfit_batch) j["overfit_batch"] = true;
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
        "(train_state.json) at step {}, so its files come from two saves (copied or edited by "
        "hand; glass train switches all of them at once). It cannot be resumed exactly; sample "
        "from it, or start a new run in another directory",
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

namespace {

/// The "adamw" block of train_state.json: present, well-formed, in range, and equal to this
/// run's optimizer settings (otherwise the resumed run would not continue the same optimizer).
void check_adamw_block(const json& j, const std::string& json_path, const AdamWConfig& ours) {
  if (!j.contains("adamw") || !j["adamw"].is_object())
    throw CheckpointError(json_path +
                          ": missing the \"adamw\" block (beta1, beta2, eps, weight_decay)");
  const json& a = j["adamw"];
  auto number = [&](const char* key, double low, double high, bool low_open, bool high_open) {
    if (!a.contains(key) || !a[key].is_number())
      throw CheckpointError(fmt::format("{}: adamw.{} must be a number", json_path, key));
    const double v = a[key].get<double>();
    const bool ok =
        std::isfinite(v) && (low_open ? v > low : v >= low) && (high_open ? v < high : v <= high);
    if (!ok)
      throw CheckpointError(fmt::format(
          "{}: adamw.{} = {} is out of range ({}{}, {}{}): the file is "
          "corrupt",
          json_path, key, a[key].dump(), low_open ? "(" : "[", low, high, high_open ? ")" : "]"));
    return v;
  };
  const double inf = HUGE_VAL;
  const double beta1 = number("beta1", 0, 1, false, true);
  const double beta2 = number("beta2", 0, 1, false, true);
  const double eps = number("eps", 0, inf, true, true);
  const double weight_decay = number("weight_decay", 0, inf, false, true);
  auto differ = [&](const char* key, double theirs, double mine) {
    if (theirs != mine) throw OptimizerMismatchError(json_path, key, theirs, mine);
  };
  differ("weight_decay", weight_decay, ours.weight_decay);
  differ("beta1", beta1, ours.beta1);
  differ("beta2", beta2, ours.beta2);
  differ("eps", eps, ours.eps);
}

/// The "muon" block of train_state.json, written by Muon runs alone: present exactly when this
/// run trains with Muon (`ours` not null), and then with Muon's settings. The optimizer is part
/// of the recipe: the momentum buffers of one are not the moments of the other.
void check_muon_block(const json& j, const std::string& json_path, const Muon* ours) {
  const bool theirs = j.contains("muon");
  if (theirs != (ours != nullptr))
    throw CheckpointError(fmt::format(
        "{}: the checkpoint was trained with {}, this run asks for {}; an exact resume needs the "
        "same optimizer",
        json_path, theirs ? "Muon" : "AdamW", theirs ? "AdamW" : "Muon"));
  if (!theirs) return;
  const json& m = j["muon"];
  const MuonConfig& c = ours->config();
  if (!m.is_object() || !m.contains("momentum") || !m["momentum"].is_number() ||
      !m.contains("ns_steps") || !m["ns_steps"].is_number_integer() || !m.contains("eps") ||
      !m["eps"].is_number())
    throw CheckpointError(json_path + ": the \"muon\" block must hold momentum, ns_steps and eps");
  if (m["momentum"].get<double>() != c.momentum || m["ns_steps"].get<long>() != c.ns_steps ||
      m["eps"].get<double>() != c.eps)
    throw CheckpointError(fmt::format(
        "{}: the checkpoint was trained with Muon {}, this run with momentum {:g}, ns_steps {}, "
        "eps {:g}; an exact resume needs the same settings",
        json_path, m.dump(), c.momentum, c.ns_steps, c.eps));
}

/// Muon's buffers (sums of gradients) are finite after every step: a NaN or an infinity in the
/// file would turn every weight it touches into NaN. Throws CheckpointError naming the tensor.
void check_muon_buffers(const SafetensorsContents& moments, const std::string& tensors_path,
                        const Muon& muon) {
  for (const MuonParam& p : muon.params()) {
    const NamedTensor* t = moments.find("muon." + p.name);
    if (t == nullptr || t->dtype != Dtype::F32) continue;  // copy_into names these errors
    const auto bad =
        std::find_if(t->data.begin(), t->data.end(), [](float x) { return !std::isfinite(x); });
    if (bad != t->data.end())
      throw CheckpointError(fmt::format(
          "{}: tensor 'muon.{}' holds {} at index {}: Muon's momentum is finite after every "
          "step, so the file is corrupt",
          tensors_path, p.name, *bad, bad - t->data.begin()));
  }
}

/// best_val, has_best and the log rows must tell the same story: the log holds one row per
/// evaluation (steps increasing, at most the state's step, finite losses >= 0), has_best is
/// true exactly when there is a row, and best_val is the smallest val_loss of the rows (the
/// trainer keeps it that way; a hand-edited or corrupted best_val would decide which weights
/// become best.safetensors).
void check_log_and_best(const TrainState& s, const std::string& json_path) {
  long previous = -1;
  double smallest = HUGE_VAL;
  for (std::size_t i = 0; i < s.log.size(); ++i) {
    const LogRow& r = s.log[i];
    if (r.step <= previous || r.step > s.step)
      throw CheckpointError(
          fmt::format("{}: log row {} has step {} (steps must increase and not "
                      "pass the state's step {}): the file is corrupt",
                      json_path, i, r.step, s.step));
    for (double v : {r.train_loss, r.val_loss, r.lr, r.elapsed_s, r.tokens_per_s})
      if (!std::isfinite(v) || v < 0)
        throw CheckpointError(
            fmt::format("{}: log row {} (step {}) holds {}, not a finite number "
                        ">= 0: the file is corrupt",
                        json_path, i, r.step, v));
    previous = r.step;
    smallest = std::min(smallest, r.val_loss);
  }
  if (!std::isfinite(s.elapsed_s) || s.elapsed_s < 0)
    throw CheckpointError(json_path + ": elapsed_s must be a finite number >= 0");
  if (s.has_best != !s.log.empty())
    throw CheckpointError(
        fmt::format("{}: has_best is {} but the log holds {} evaluation(s): the "
                    "file is corrupt",
                    json_path, s.has_best, s.log.size()));
  if (s.has_best && s.best_val != smallest)
    throw CheckpointError(fmt::format(
        "{}: best_val is {} but the smallest val_loss in the log is {}: the file is corrupt "
        "(best_val decides which weights become best.safetensors)",
        json_path, json(s.best_val).dump(), json(smallest).dump()));
}

}  // namespace

namespace {

/// The "recipe" block of train_state.json; CheckpointError naming the file when a value is
/// missing or out of range.
TrainRecipe recipe_from_json(const json& r, const std::string& json_path) {
  auto number = [&](const char* key, bool integer) {
    if (!r.contains(key) || !(integer ? r[key].is_number_integer() : r[key].is_number()) ||
        !std::isfinite(r[key].get<double>()) || r[key].get<double>() < 0)
      throw CheckpointError(fmt::format("{}: recipe.{} must be {} >= 0", json_path, key,
                                        integer ? "an integer" : "a number"));
    return r[key];
  };
  TrainRecipe recipe;
  recipe.lr = number("lr", false).get<double>();
  recipe.min_lr = number("min_lr", false).get<double>();
  recipe.warmup = number("warmup", true).get<long>();
  recipe.decay_iters = number("decay_iters", true).get<long>();
  recipe.batch_size = number("batch_size", true).get<std::size_t>();
  recipe.grad_clip = number("grad_clip", false).get<double>();
  // Recorded since the time budget (older checkpoints have neither).
  if (r.contains("iters")) recipe.iters = number("iters", true).get<long>();
  if (r.contains("time_budget_s"))
    recipe.time_budget_s = number("time_budget_s", false).get<double>();
  recipe.zero_init_out = r.value("zero_init_out", false) == true;
  // Written by Muon runs alone; a recipe without it is AdamW's.
  if (r.contains("optimizer")) {
    if (!r["optimizer"].is_string() || (r["optimizer"] != "adamw" && r["optimizer"] != "muon"))
      throw CheckpointError(
          fmt::format("{}: recipe.optimizer must be \"adamw\" or \"muon\", got {}", json_path,
                      r["optimizer"].dump()));
    recipe.optimizer = r["optimizer"].get<std::string>();
  }
  if (recipe.optimizer == "muon") recipe.muon_lr = number("muon_lr", false).get<double>();
  if (r.contains("chat")) {  // written by chat fine-tunes alone
    const json& chat = r["chat"];
    if (!chat.is_object() || !chat.contains("base") || !chat["base"].is_string() ||
        !chat.contains("base_sha256") || !chat["base_sha256"].is_string())
      throw CheckpointError(fmt::format(
          "{}: recipe.chat must be {{\"base\": string, \"base_sha256\": string}}, got {}",
          json_path, chat.dump()));
    recipe.chat_base = chat["base"].get<std::string>();
    recipe.chat_base_sha256 = chat["base_sha256"].get<std::string>();
    if (chat.contains("loss_on")) {  // absent: the answers (the loss mask)
      if (chat["loss_on"] != "all" && chat["loss_on"] != "answers")
        throw CheckpointError(
            fmt::format("{}: recipe.chat.loss_on must be \"all\" or \"answers\", got {}", json_path,
                        chat["loss_on"].dump()));
      recipe.chat_loss_on_all = chat["loss_on"] == "all";
    }
  }
  return recipe;
}

}  // namespace

std::optional<TrainRecipe> load_train_recipe(const std::string& run_dir) {
  const std::string json_path = path_in(checkpoint_files_dir(run_dir), "train_state.json");
  if (!fs::exists(json_path)) return std::nullopt;
  const json j = read_json(json_path);
  if (!j.is_object() || !j.contains("recipe")) return std::nullopt;
  return recipe_from_json(j.at("recipe"), json_path);
}

namespace {

/// The "overfit_batch" field of train_state.json: false when absent (a normal run's save, or one
/// written before the field existed); CheckpointError naming the file when it is not a boolean.
bool overfit_batch_from_json(const json& j, const std::string& json_path) {
  if (!j.is_object() || !j.contains("overfit_batch")) return false;
  if (!j.at("overfit_batch").is_boolean())
    throw CheckpointError(fmt::format("{}: \"overfit_batch\" must be true or false, got {}",
                                      json_path, j.at("overfit_batch").dump()));
  return j.at("overfit_batch").get<bool>();
}

}  // namespace

bool records_overfit_batch(const std::string& run_dir) {
  const std::string json_path = path_in(checkpoint_files_dir(run_dir), "train_state.json");
  if (!fs::exists(json_path)) return false;
  return overfit_batch_from_json(read_json(json_path), json_path);
}

namespace {

/// The fields of train_state.json (step, RNG states, best_val, log, recipe, ...) as a
/// TrainState; CheckpointError naming the file when one is missing or of the wrong type, or
/// when step or context is out of range.
TrainState state_from_json(const json& j, const std::string& json_path) {
  TrainState s;
  try {
    // get<long> of a JSON number that is not an integer (3.5e50) would be an out-of-range
    // conversion, undefined behaviour: the integer fields must hold integers.
    auto integer = [&](const json& v, const char* field) -> const json& {
      if (!v.is_number_integer())
        throw CheckpointError(
            fmt::format("{}: \"{}\" must be an integer, got {}", json_path, field, v.dump()));
      return v;
    };
    s.step = integer(j.at("step"), "step").get<long>();
    s.batch_rng = j.at("batch_rng").get<std::string>();
    s.sample_rng = j.at("sample_rng").get<std::string>();
    s.best_val = j.at("best_val").get<double>();
    s.has_best = j.at("has_best").get<bool>();
    s.elapsed_s = j.at("elapsed_s").get<double>();
    s.context = integer(j.at("context"), "context").get<std::size_t>();
    if (j.contains("run_id")) s.run_id = j.at("run_id").get<std::string>();
    if (j.contains("recipe")) {
      s.recipe = recipe_from_json(j.at("recipe"), json_path);
      s.has_recipe = true;
    }
    s.overfit_batch = overfit_batch_from_json(j, json_path);
    for (const json& r : j.at("log"))
      s.log.push_back({integer(r.at(0), "log step").get<long>(), r.at(1).get<double>(),
                       r.at(2).get<double>(), r.at(3).get<double>(), r.at(4).get<double>(),
                       r.at(5).get<double>()});
  } catch (const json::exception& e) {
    throw CheckpointError(fmt::format("{}: {}", json_path, e.what()));
  }
  if (s.step < 0) throw CheckpointError(json_path + ": step must be >= 0");
  if (s.context == 0) throw CheckpointError(json_path + ": context must be a positive integer");
  return s;
}

/// The files of the save in `dir` come from one save of one run: the moments' step and run id
/// (train_state.safetensors' metadata), the weights' (`weights_step`, `weights_run_id`) and
/// config.json's equal the training state's `s`. CheckpointError naming the files otherwise.
void check_one_save(const std::string& dir, const TrainState& s, const SafetensorsContents& moments,
                    const std::string& tensors_path, const std::string& json_path,
                    const std::string& weights_step, const std::string& weights_run_id) {
  const auto it = moments.metadata.find("step");
  if (it == moments.metadata.end() || it->second != std::to_string(s.step))
    throw CheckpointError(fmt::format("{} and {} disagree on the step (files of two saves mixed?)",
                                      tensors_path, json_path));
  const auto run = moments.metadata.find("run_id");
  check_same_run(dir, "train_state.json", s.run_id, "train_state.safetensors",
                 run == moments.metadata.end() ? std::string() : run->second);
  check_same_run(dir, "train_state.json", s.run_id, "model.safetensors", weights_run_id);
  check_same_run(dir, "train_state.json", s.run_id, "config.json",
                 config_run_id(read_json(path_in(dir, "config.json"))));
  check_same_step(dir, s.step, weights_step);
  const json config = read_json(path_in(dir, "config.json"));
  if (config.contains("training") && config["training"].is_object() &&
      config["training"].contains("context") && config["training"]["context"] != json(s.context))
    throw CheckpointError(
        fmt::format("{}: config.json's training.context is {} but the training state's context {}: "
                    "config.json was edited or comes from another save",
                    dir, config["training"]["context"].dump(), s.context));
}

/// AdamW's second moment v is a running mean of squared gradients (Loshchilov & Hutter 2019,
/// Algorithm 2): never negative. A negative entry means a corrupt file, and resuming would
/// take sqrt(v_hat) of it: NaN updates from the first step. Neither moment can hold a NaN
/// or an infinity after a finite step (the trainer stops at a non-finite loss or gradient
/// norm before the update), and one would turn every weight it touches into NaN. Checked for
/// every parameter of `optimizer` before any moment is copied, so a refused file leaves the
/// optimizer as it was. Throws CheckpointError naming the tensor.
void check_adamw_moments(const SafetensorsContents& moments, const std::string& tensors_path,
                         const AdamW& optimizer) {
  for (const AdamWParam& p : optimizer.params()) {
    for (const char* moment : {"m", "v"}) {
      const NamedTensor* t = moments.find(std::string(moment) + "." + p.name);
      if (t == nullptr || t->dtype != Dtype::F32) continue;  // copy_into names these errors
      const auto bad =
          std::find_if(t->data.begin(), t->data.end(), [](float x) { return !std::isfinite(x); });
      if (bad != t->data.end())
        throw CheckpointError(fmt::format(
            "{}: tensor '{}.{}' holds {} at index {}: AdamW's moments are finite after every "
            "step, so the file is corrupt",
            tensors_path, moment, p.name, *bad, bad - t->data.begin()));
      if (moment[0] != 'v') continue;
      const auto negative =
          std::find_if(t->data.begin(), t->data.end(), [](float x) { return x < 0; });
      if (negative != t->data.end())
        throw CheckpointError(fmt::format(
            "{}: tensor 'v.{}' holds a negative value ({}) at index {}: AdamW's second moment (a "
            "running mean of squared gradients) is never negative, so the file is corrupt",
            tensors_path, p.name, *negative, negative - t->data.begin()));
    }
  }
}

/// Copies the checked moments into the optimizers (AdamW's m and v; Muon's momentum when
/// `muon` is not null) and sets their step counts to `step`. copy_into throws CheckpointError
/// for a missing tensor or one of the wrong dtype or shape.
void copy_moments(const SafetensorsContents& moments, const std::string& tensors_path, long step,
                  AdamW& optimizer, Muon* muon) {
  for (AdamWParam& p : optimizer.params()) {
    copy_into(moments, tensors_path, "m." + p.name, p.m);
    copy_into(moments, tensors_path, "v." + p.name, p.v);
  }
  optimizer.set_step_count(step);
  if (muon != nullptr) {
    for (MuonParam& p : muon->params())
      copy_into(moments, tensors_path, "muon." + p.name, p.momentum);
    muon->set_step_count(step);
  }
}

}  // namespace

TrainState load_train_state(const std::string& run_dir, AdamW& optimizer,
                            const std::string& weights_step, const std::string& weights_run_id,
                            Muon* muon) {
  const std::string dir = checkpoint_files_dir(run_dir);
  const std::string json_path = path_in(dir, "train_state.json");
  const std::string tensors_path = path_in(dir, "train_state.safetensors");
  // Every file of the save, best weights and logs included, against its manifest: a resumed run
  // carries them into its own saves, whose new manifest would otherwise vouch for a corrupt file.
  verify_save(dir);
  const json j = read_json(json_path);
  return as_checkpoint_error([&] {
    TrainState s = state_from_json(j, json_path);
    check_adamw_block(j, json_path, optimizer.config());
    check_muon_block(j, json_path, muon);
    check_log_and_best(s, json_path);
    const SafetensorsContents moments = load_safetensors(tensors_path);
    check_one_save(dir, s, moments, tensors_path, json_path, weights_step, weights_run_id);
    check_adamw_moments(moments, tensors_path, optimizer);
    if (muon != nullptr) check_muon_buffers(moments, tensors_path, *muon);
    copy_moments(moments, tensors_path, s.step, optimizer, muon);
    return s;
  });
}

}  // namespace glass
