// `glass serve` watching a run directory: it loads each new save that RUN/current points to and
// evaluates it once — the probe prompt's attention and a sample — for /api/evals, while the
// previous model goes on answering. See server.hpp.

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint.hpp"
#include "checkpoint/run_dir.hpp"
#include "data/text.hpp"
#include "inspect/inspect.hpp"
#include "inspect/loss_plot.hpp"
#include "inspect/probe_history.hpp"
#include "sample/sampler.hpp"
#include "serve/payloads.hpp"
#include "serve/requests.hpp"
#include "serve/server.hpp"

namespace glass {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

/// Bytes of the training text the default probe is looked for in (default_probe within them).
constexpr std::size_t kProbeHeadBytes = 64 * 1024;

/// The characters of `head` (UTF-8; a character cut at its end is left out).
std::u32string text_of_head(const std::string& head) {
  for (std::size_t cut = head.size(); cut + 4 > head.size() && cut > 0; --cut) {  // a cut character
    try {
      return utf8_to_u32(head.substr(0, cut));
    } catch (const Utf8Error&) {}
  }
  return U"";
}

/// The probe prompt: --probe (when it holds a character of valid UTF-8), else the first
/// non-blank characters of the training text (the given file, or the one named in config.json
/// when it is found from the current directory: a text that starts with blank lines would draw
/// a grid of spaces), else the vocabulary's first characters.
std::string choose_probe(const ServeOptions& o, const Checkpoint& m, const std::string& files_dir) {
  const std::size_t context = m.config().context_length;
  if (!o.probe.empty()) {
    const std::string probe = u32_to_utf8(text_of_head(o.probe).substr(0, context));  // whole
    if (!probe.empty()) return probe;
  }
  std::string data = o.data_path;
  if (data.empty()) {
    try {
      data = training_data(files_dir);
    } catch (const std::exception&) {}
  }
  std::error_code ec;
  if (!data.empty() && fs::is_regular_file(data, ec)) {
    std::ifstream in(data, std::ios::binary);
    std::string head(kProbeHeadBytes, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<std::size_t>(in.gcount()));
    const std::string probe = u32_to_utf8(default_probe(text_of_head(head), context));
    if (!probe.empty()) return probe;
  }
  std::u32string letters;
  const std::vector<char32_t>& chars = m.tokenizer().characters();
  for (char32_t c : chars)
    if (letters.size() < std::min(kProbeChars, context)) letters += c;
  return u32_to_utf8(letters);
}

/// The evaluation of the save in `files_dir` (the model `loaded`, sampling with its window):
/// its step and save, its losses in log.csv, and the look at `probe` glass train records
/// (look_at_probe: the probe's attention and a sample of `sample_tokens` tokens). Its forward
/// passes run under `compute`, one at a time with the requests'.
json evaluate_save(const Checkpoint& loaded, const std::string& files_dir, const std::string& probe,
                   std::size_t sample_tokens, std::mutex& compute) {
  const std::size_t window = loaded.window();
  const ProbeTokens tokens = probe_tokens(loaded.tokenizer(), utf8_to_u32(probe), window);
  long step = -1;
  if (!loaded.weights_step().empty())
    step = std::strtol(loaded.weights_step().c_str(), nullptr, 10);
  ProbeRecord record = look_at_probe(loaded.model(), loaded.tokenizer(), tokens, window, step,
                                     sample_tokens, &compute);
  std::string log_error;
  try {
    for (const LossPoint& p : read_save_loss_log(files_dir)) {
      if (static_cast<long>(p.step) != step) continue;
      record.train_loss = p.train_loss;
      record.val_loss = p.val_loss;
    }
  } catch (const std::exception& err) {  // a damaged log.csv: no losses, and why
    log_error = err.what();
  }
  json e = probe_record_json(tokens, record);
  e["save"] = fs::path(files_dir).filename().string();
  if (!log_error.empty()) e["log_error"] = log_error;
  return e;
}

}  // namespace

bool Server::load_if_new(const std::string& files_dir, std::string* error) {
  {
    std::lock_guard lock(state_mutex_);
    if (model_ && files_dir == served_dir_) return true;
  }
  std::shared_ptr<const Checkpoint> loaded;
  std::string probe;
  json e;
  std::vector<json> recorded;  // the saves before this one that the server did not see
  try {
    loaded = std::make_shared<const Checkpoint>(load_checkpoint(files_dir));
    const std::optional<ProbeHistory> history = recorded_history(*loaded, files_dir);
    {
      std::lock_guard lock(state_mutex_);
      probe = !probe_.empty()                     ? probe_
              : history && options_.probe.empty() ? history->probe.probe
                                                  : choose_probe(options_, *loaded, files_dir);
      // The records of a history of this probe, of the steps between the last save seen and
      // this one (the trainer's saves the server missed, or all of them after training).
      if (history && history->probe.probe == probe)
        for (const ProbeRecord& r : history->records)
          if (r.step > last_evaluated_step_ && std::to_string(r.step) != loaded->weights_step()) {
            json j = probe_record_json(history->probe, r);
            j["save"] = nullptr;  // pruned: known from a later save's probe_history.json
            j["from"] = fs::path(files_dir).filename().string();
            recorded.push_back(std::move(j));
          }
    }
    // The evaluation of this save: the probe's attention and a sample, as the trainer records.
    // Its forward passes wait for the requests' (one at a time, under compute_mutex_ alone).
    ++evaluations_started_;
    e = evaluate_save(*loaded, files_dir, probe, options_.eval_sample_tokens, compute_mutex_);
  } catch (const std::exception& ex) {
    if (error != nullptr) *error = ex.what();
    note_load_failure(files_dir, ex.what());
    return false;
  }
  std::lock_guard lock(state_mutex_);
  probe_ = probe;
  recorded.push_back(std::move(e));
  for (json& j : recorded) {
    if (j["step"].is_number_integer())
      last_evaluated_step_ = std::max(last_evaluated_step_, j["step"].get<long>());
    const std::size_t index = evaluations_seen_++;
    j["index"] = index;
    evaluations_.push_back(std::make_shared<const Evaluation>(
        Evaluation{index, j.dump(-1, ' ', false, json::error_handler_t::replace)}));
    // Keep the first save's evaluation and the newest max_evaluations.
    if (evaluations_.size() > options_.max_evaluations + 1)
      evaluations_.erase(evaluations_.begin() + 1);
  }
  model_ = std::move(loaded);
  served_dir_ = files_dir;
  status_.clear();
  failed_dir_.clear();
  failure_reported_ = false;
  return true;
}

std::optional<ProbeHistory> Server::recorded_history(const Checkpoint& loaded,
                                                     const std::string& files_dir) {
  try {
    return read_probe_history(files_dir, loaded.config());
  } catch (const std::exception& ex) {  // another run's, damaged: never shown, and said
    const std::string warning =
        "the probe's attention history is not shown: " + std::string(ex.what());
    {
      std::lock_guard lock(state_mutex_);
      history_error_ = warning;
    }
    if (options_.warn)
      options_.warn(warning);
    else
      std::cerr << "warning: " + warning + "\n" << std::flush;
    return std::nullopt;
  }
}

void Server::note_load_failure(const std::string& files_dir, const std::string& why) {
  const bool saved = holds_checkpoint(options_.checkpoint);
  std::string warning;
  {
    std::lock_guard lock(state_mutex_);
    if (!model_) {
      status_ = saved ? "cannot load the checkpoint: " + why
                      : "no save yet in '" + options_.checkpoint +
                            "': waiting for the trainer's first save";
    } else if (files_dir == failed_dir_ && !failure_reported_) {
      // The same save failed at two looks in a row: not a save replaced while it was read,
      // but a broken one. Said once, on the status and to the warning stream.
      status_ = fmt::format(
          "the newest save, {}, cannot be loaded ({}); still serving the previous one, {}",
          files_dir, why, fs::path(served_dir_).filename().string());
      warning = status_;
      failure_reported_ = true;
    }
    if (files_dir != failed_dir_) failure_reported_ = false;
    failed_dir_ = files_dir;
  }
  if (!warning.empty()) {
    if (options_.warn)
      options_.warn(warning);
    else
      std::cerr << "warning: " + warning + "\n" << std::flush;
  }
}

void Server::watch_loop() {
  const auto poll = std::chrono::milliseconds(static_cast<long>(options_.poll_seconds * 1000));
  while (!stopping_) {
    try {
      load_if_new(checkpoint_files_dir(options_.checkpoint));
      interp_history_.look(options_.checkpoint);  // before the trainer removes a save
    } catch (const std::exception&) {  // a save switched while we looked: try again next time
    }
    ++looks_;
    std::unique_lock lock(stop_mutex_);
    stop_cv_.wait_for(lock, poll, [this] { return stopping_.load(); });
  }
}

}  // namespace glass
