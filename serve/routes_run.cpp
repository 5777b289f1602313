// The run's part of the `glass serve` API: GET /api/log (the training log as it grows) and
// GET /api/evals (the evaluations of the saves seen). See server.hpp.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <httplib.h>

#include "checkpoint/checkpoint.hpp"
#include "checkpoint/manifest.hpp"
#include "checkpoint/run_dir.hpp"
#include "data/text.hpp"
#include "serve/payloads.hpp"
#include "serve/requests.hpp"
#include "serve/server.hpp"

namespace glass {

namespace fs = std::filesystem;
using namespace serve_api;

void Server::answer_log(const httplib::Request& req, httplib::Response& res) {
  const long long since = query_integer(req, "since", -1);
  json j;
  CsvTable evals;
  std::string evals_error;  // a damaged log.csv: no evaluations, and why
  try {
    const std::string dir = checkpoint_files_dir(options_.checkpoint);
    std::error_code ec;
    if (fs::exists(fs::path(dir) / "log.csv", ec))
      evals = parse_csv_numbers(read_verified_file(dir, "log.csv"));
  } catch (const std::exception& e) {
    evals_error = e.what();
  }
  std::lock_guard lock(state_mutex_);
  step_log_.refresh();
  const CsvTable& steps = step_log_.table();
  j["steps"] = rows_json(steps, since);
  // An integer, as `since` takes it: rows whose step is not one are left out (StepLog).
  long long last = -1;
  const int step_col = steps.column("step");
  if (step_col >= 0 && !steps.rows.empty())
    last = static_cast<long long>(steps.rows.back()[static_cast<std::size_t>(step_col)]);
  j["last_step"] = last;
  j["refused_rows"] = step_log_.refused();
  j["status"] = status_;
  j["evals"] = rows_json(evals, -1);
  if (!evals_error.empty()) j["evals_error"] = evals_error;
  j["evaluations"] = evaluations_seen_;  // the index the next evaluation will have
  j["step"] = model_ ? step_json(model_->weights_step()) : json(nullptr);  // as /api/info
  send_json(res, j);
}

void Server::answer_evals(const httplib::Request& req, httplib::Response& res) {
  const long long since = std::max(0LL, query_integer(req, "since", 0));
  std::vector<std::shared_ptr<const Evaluation>> list;
  json head;
  {
    std::lock_guard lock(state_mutex_);
    head["probe"] = probe_;
    head["chars"] = chars_json(utf8_to_u32(probe_));
    head["count"] = evaluations_.size();  // kept: the first and the newest max_evaluations
    head["seen"] = evaluations_seen_;     // evaluated so far: the next index
    head["max_evaluations"] = options_.max_evaluations;
    if (!history_error_.empty()) head["history_error"] = history_error_;
    for (const auto& e : evaluations_)
      if (e->index >= static_cast<std::size_t>(since)) list.push_back(e);
  }
  // {"probe": ..., "chars": [...], "count": N, "seen": S, "max_evaluations": K,
  // "history_error": why a recorded history is not shown (when one is not), "evaluations": [...]}: each evaluation is kept as JSON text, so a poll costs no re-encoding.
  std::string text = head.dump(-1, ' ', false, json::error_handler_t::replace);
  text.pop_back();
  text += ",\"evaluations\":[";
  for (std::size_t i = 0; i < list.size(); ++i) text += (i ? "," : "") + list[i]->json;
  text += "]}";
  res.set_content(text, kJson);
}

}  // namespace glass
