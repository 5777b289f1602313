// The interpretability lab of the `glass serve` API (interp/ on the reference path):
//   POST /api/lens    the logit lens of a prompt (interp/logit_lens.hpp)
//   POST /api/ablate  the next-token distribution with and without some heads (interp/ablation.hpp)
//   POST /api/dla     direct logit attribution (interp/logit_attribution.hpp)
//   POST /api/attribution  attribution patching next to exact patching
//                     (interp/attribution_patching.hpp)
//   GET  /api/interp  the head scores recorded at each save (SAVE/interp.json, serve/interp_lab.hpp)
// Requests are read and checked like the others (requests.hpp), then run by the lab runner
// `glass inspect` calls too (run_lab, inspect/lab.hpp), under the compute lock, one at a time;
// the answer is the lab report's JSON (interp_json), the shape `glass inspect --json` writes.
// See server.hpp.

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <httplib.h>

#include "checkpoint/checkpoint.hpp"
#include "data/text.hpp"
#include "inspect/interp_report.hpp"
#include "inspect/lab.hpp"
#include "interp/interp.hpp"
#include "serve/interp_lab.hpp"
#include "serve/payloads.hpp"
#include "serve/requests.hpp"
#include "serve/server.hpp"

namespace glass {

namespace fs = std::filesystem;
using namespace serve_api;

namespace {

/// Next tokens listed per cell of the lens and per distribution of an ablation, at most.
constexpr std::uint64_t kMaxServedTopK = 20;

/// The lab request of a body's "prompt" and "allow_unknown": present, not empty, at most the
/// model's window (checked here, in the API's words, before the lab tokenizes it; the lab
/// refuses characters outside the vocabulary unless allow_unknown).
LabRequest lab_request(const json& body, const Checkpoint& m) {
  if (!body.contains("prompt")) throw BadRequest("give the prompt: {\"prompt\": \"TEXT\"}");
  const std::u32string chars = decode_prompt(string_field(body, "prompt", ""));
  if (chars.empty()) throw BadRequest("'prompt' is empty: give at least one character");
  refuse_past_context(chars, m);
  LabRequest q;
  q.allow_unknown = unknown_policy(body) == UnknownPolicy::kMapToUnknownId;
  q.prompt = u32_to_utf8(chars);
  return q;
}

/// The body field of the API that sets each part of a lab request (LabField). The API has no
/// field for the other parts (a layer, a head, the corrupted prompt, the recorded head scores):
/// they follow from the prompt, and an error about them names it.
constexpr std::pair<LabField, const char*> kApiFields[] = {
    {LabField::prompt, "prompt"}, {LabField::top_k, "top_k"},
    {LabField::heads, "heads"},   {LabField::corrupted, "corrupted"},
    {LabField::target, "target"}, {LabField::position, "position"}};

/// The field of the API a LabRequestError is about (kApiFields).
const char* api_field(LabField field) {
  for (const auto& [part, name] : kApiFields)
    if (part == field) return name;
  return "prompt";
}

/// The "heads" field: [[layer, head], ...], each head of the model at most once.
std::vector<HeadRef> heads_field(const json& body, const ModelConfig& config) {
  if (!body.contains("heads")) return {};
  const json& heads = body["heads"];
  const std::size_t most = config.n_layers * config.n_heads;
  if (!heads.is_array())
    throw BadRequest("'heads' must be an array of [layer, head] pairs, e.g. [[0, 1], [1, 3]]");
  if (heads.size() > most)
    throw BadRequest(fmt::format("'heads' lists {} heads; the model has {} ({} layers of {} heads)",
                                 heads.size(), most, config.n_layers, config.n_heads));
  std::vector<HeadRef> out;
  std::set<std::pair<std::size_t, std::size_t>> seen;
  for (std::size_t i = 0; i < heads.size(); ++i) {
    const json& h = heads[i];
    if (!h.is_array() || h.size() != 2 || !h[0].is_number_unsigned() || !h[1].is_number_unsigned())
      throw BadRequest(
          fmt::format("'heads[{}]' must be a pair [layer, head] of integers >= 0 "
                      "(got {})",
                      i, h.dump()));
    const auto layer = h[0].get<std::uint64_t>(), head = h[1].get<std::uint64_t>();
    if (layer >= config.n_layers)
      throw BadRequest(fmt::format("'heads[{}]' names layer {}; the layers are 0 to {}", i, layer,
                                   config.n_layers - 1));
    if (head >= config.n_heads)
      throw BadRequest(fmt::format("'heads[{}]' names head {}; the heads of a layer are 0 to {}", i,
                                   head, config.n_heads - 1));
    if (!seen.insert({layer, head}).second)
      throw BadRequest(fmt::format("'heads[{}]' repeats [{}, {}]", i, layer, head));
    out.push_back({static_cast<std::size_t>(layer), static_cast<std::size_t>(head)});
  }
  return out;
}

/// The lab report of `q` as the answer's JSON (interp_json): run_lab under the compute lock,
/// a request it refuses answered 400 naming the field.
json lab_answer(std::mutex& compute, const Checkpoint& m, const LabRequest& q,
                const std::string& checkpoint) {
  InterpReport report;
  try {
    std::lock_guard lock(compute);
    report = run_lab(m, q);
  } catch (const LabRequestError& e) {
    const bool unknown = e.problem == LabProblem::unknown_characters;
    throw BadRequest(fmt::format("'{}' {}{}", api_field(e.field), e.what(),
                                 unknown ? " (send \"allow_unknown\": true to map them to the "
                                           "unknown id 0)"
                                         : ""));
  }
  report.checkpoint = checkpoint;
  return json::parse(interp_json(report).dump());
}

}  // namespace

void Server::answer_lens(const httplib::Request& req, httplib::Response& res) {
  const json body = parse_body(req, {"prompt", "top_k", "allow_unknown"});
  const auto m = model();
  const std::size_t V = m->config().vocab_size;
  const auto k = static_cast<std::size_t>(
      integer_field(body, "top_k", 5, 1, std::min<std::uint64_t>(kMaxServedTopK, V)));
  LabRequest q = lab_request(body, *m);
  q.top_k = k;
  q.lens = true;
  send_json(res, lab_answer(compute_mutex_, *m, q, options_.checkpoint));
}

void Server::answer_ablate(const httplib::Request& req, httplib::Response& res) {
  const json body = parse_body(req, {"prompt", "heads", "mode", "top_k", "allow_unknown"});
  const auto m = model();
  const std::size_t V = m->config().vocab_size;
  const auto k = static_cast<std::size_t>(
      integer_field(body, "top_k", 10, 1, std::min<std::uint64_t>(kMaxServedTopK, V)));
  const std::string mode_name = string_field(body, "mode", "zero");
  if (mode_name != "zero" && mode_name != "mean")
    throw BadRequest(fmt::format("'mode' must be \"zero\" or \"mean\" (got \"{}\")", mode_name));
  const std::vector<HeadRef> heads = heads_field(body, m->config());
  LabRequest q = lab_request(body, *m);
  q.top_k = k;
  q.ablate = heads;
  q.ablation = mode_name == "zero" ? AblationMode::zero : AblationMode::mean;
  if (q.ablation == AblationMode::mean && !heads.empty())  // the means of a training text
    if ((q.mean_over = mean_reference(options_.data_path, *m, q.mean_over_source)).empty())
      q.mean_over_source = "the prompt (no training text found; give it with --data)";
  send_json(res, lab_answer(compute_mutex_, *m, q, options_.checkpoint));
}

void Server::answer_dla(const httplib::Request& req, httplib::Response& res) {
  const json body = parse_body(req, {"prompt", "target", "position", "allow_unknown"});
  const auto m = model();
  LabRequest q = lab_request(body, *m);
  q.dla = true;
  if (body.contains("target")) q.target = string_field(body, "target", "");
  if (body.contains("position"))
    q.position = static_cast<std::size_t>(
        integer_field(body, "position", 0, 0, m->config().context_length - 1));
  send_json(res, lab_answer(compute_mutex_, *m, q, options_.checkpoint));
}

void Server::answer_attribution(const httplib::Request& req, httplib::Response& res) {
  const json body = parse_body(req, {"prompt", "corrupted", "metric", "allow_unknown"});
  const auto m = model();
  if (!body.contains("corrupted"))
    throw BadRequest(
        "give the corrupted prompt: {\"corrupted\": \"TEXT\"} (as many tokens as "
        "the prompt)");
  const std::u32string corrupted = decode_prompt(string_field(body, "corrupted", ""));
  refuse_past_context(corrupted, *m);
  const std::string metric = string_field(body, "metric", "logit_diff");
  if (metric != "logit_diff" && metric != "log_prob")
    throw BadRequest(
        fmt::format("'metric' must be \"logit_diff\" or \"log_prob\" (got \"{}\")", metric));
  LabRequest q = lab_request(body, *m);
  q.attribution = u32_to_utf8(corrupted);
  q.metric = metric == "log_prob" ? PatchMetric::Kind::log_prob : PatchMetric::Kind::logit_diff;
  send_json(res, lab_answer(compute_mutex_, *m, q, options_.checkpoint));
}

void Server::answer_interp(const httplib::Request&, httplib::Response& res) {
  interp_history_.look(options_.checkpoint);  // the saves that arrived since the last look
  json j = interp_history_.to_json();
  std::lock_guard lock(state_mutex_);
  if (model_) {
    j["n_layers"] = model_->config().n_layers;
    j["n_heads"] = model_->config().n_heads;
  }
  send_json(res, j);
}

}  // namespace glass
