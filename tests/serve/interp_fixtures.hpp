#pragma once
// Run directories for the tests of the lab of `glass serve`: saves as glass train writes them,
// holding interp.json records of the shared format ("glass-interp-1", serve/interp_lab.hpp)
// written here, for a small untrained model (fixtures.hpp: 2 layers of 4 heads).

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint.hpp"
#include "checkpoint/manifest.hpp"
#include "checkpoint/run_dir.hpp"
#include "fixtures.hpp"
#include "serve/interp_lab.hpp"
#include "test_util.hpp"

namespace interp_test {

/// The context of the saved models.
inline constexpr std::size_t kContext = 32;
/// The run id of every save written here.
inline constexpr const char* kRun = "00ff00ff00ff00ff";

/// The validation loss the saves below record at `step`: 2 + 1.5 * 100 / (100 + step), falling
/// from 3.5 like a training's; the training loss is 0.5 below it.
inline double val_loss_at(long step) { return 2.0 + 1.5 * 100.0 / (100.0 + step); }

/// A save of run `run` as glass train writes it: weights (drawn from 7 + step with standard
/// deviation 0.3, so that heads matter), config.json, log.csv with a row at `step`
/// (and at every multiple of 50 before it, as the evaluations of a run: val_loss_at),
/// `interp` as interp.json and `history` as interp_history.json when not empty (before the
/// manifest, as the trainer does), the
/// manifest, then the switch of `current`. Returns the step directory.
inline std::string save_with_record(const std::filesystem::path& run, long step,
                                    const std::string& interp, const std::string& history = "") {
  const glass::Tokenizer tokenizer = glass::Tokenizer::from_text(glass_test::kSmallText);
  glass::ModelConfig config = glass_test::small_config(tokenizer.vocab_size(), kContext);
  config.init_std = 0.3;
  const std::string step_dir = glass::begin_save(run.string(), step);
  glass::save_model(step_dir, glass::Decoder(config, 7 + static_cast<std::uint64_t>(step)),
                    tokenizer, "model.safetensors",
                    fmt::format(R"({{"training": {{"run_id": "{}", "step": {}}}}})", kRun, step),
                    step, kRun);
  std::string log = "step,lr,train_loss,val_loss,tokens_per_s,elapsed_s\n";
  auto row = [](long at) {
    return fmt::format("{},0.001,{},{},100,1\n", at, val_loss_at(at) - 0.5, val_loss_at(at));
  };
  for (long at = 0; at < step; at += 50) log += row(at);
  log += row(step);
  glass_test::write_file(std::filesystem::path(step_dir) / "log.csv", log);
  if (!interp.empty())
    glass_test::write_file(std::filesystem::path(step_dir) / glass::serve_api::kInterpRecordFile,
                           interp);
  if (!history.empty())
    glass_test::write_file(std::filesystem::path(step_dir) / glass::serve_api::kInterpHistoryFile,
                           history);
  glass::write_manifest(step_dir, kRun, step);
  glass::commit_save(run.string(), step_dir);
  return step_dir;
}

/// An interp.json of the shared format for 2 layers of 4 heads whose score `kind` of head
/// (l, h) is value(kind, l, h).
inline nlohmann::json record_with(
    long step, const std::function<double(const std::string&, int, int)>& value) {
  nlohmann::json j = {
      {"format", "glass-interp-1"},
      {"step", step},
      {"probe", {{"source", "validation"}, {"tokens", 32}, {"period", 8}, {"seed", 1234}}},
      {"probe_loss", 3.0},
      {"n_layers", 2},
      {"n_heads", 4},
      {"seconds", 0.01}};
  for (const char* kind : glass::serve_api::kInterpKinds) {
    nlohmann::json rows = nlohmann::json::array();
    for (int l = 0; l < 2; ++l) {
      nlohmann::json row = nlohmann::json::array();
      for (int h = 0; h < 4; ++h) row.push_back(value(kind, l, h));
      rows.push_back(row);
    }
    j[kind] = rows;
  }
  return j;
}

/// record_with every score of head (l, h) = base + l/10 + h/100.
inline nlohmann::json record(long step, double base) {
  return record_with(
      step, [base](const std::string&, int l, int h) { return base + l / 10.0 + h / 100.0; });
}

}  // namespace interp_test
