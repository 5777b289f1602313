// The model's part of the `glass serve` API: GET /api/info (what is served), POST /api/inspect
// (one traced forward pass), POST /api/sample (streamed generation) and POST /api/next (the
// sampler's probabilities for the next character). See server.hpp.

#include <cstdint>
#include <filesystem>
#include <random>
#include <vector>

#include <httplib.h>

#include "checkpoint/checkpoint.hpp"
#include "data/text.hpp"
#include "inspect/inspect.hpp"
#include "sample/sampler.hpp"
#include "serve/payloads.hpp"
#include "serve/requests.hpp"
#include "serve/server.hpp"

namespace glass {

namespace fs = std::filesystem;
using namespace serve_api;

namespace {

/// Next tokens listed per position by /api/inspect, at most.
constexpr long long kMaxTopK = 50;

}  // namespace

void Server::answer_info(const httplib::Request&, httplib::Response& res) {
  json j;
  j["checkpoint"] = options_.checkpoint;
  std::lock_guard lock(state_mutex_);
  j["loaded"] = model_ != nullptr;
  j["status"] = status_;
  j["probe"] = probe_;
  j["evaluations"] = evaluations_seen_;  // as /api/log: the index the next evaluation will have
  j["max_body_bytes"] = options_.max_body_bytes;
  j["max_sample_tokens"] = options_.max_sample_tokens;
  if (model_) {
    j["step"] = step_json(model_->weights_step);  // an integer (null: not recorded)
    j["run_id"] = model_->run_id;
    j["save"] = fs::path(served_dir_).filename().string();
    j["config"] = model_sizes_json(model_->config);
    j["window"] = window_;
    j["max_prompt_chars"] = window_;  // inspection; a sample keeps a longer prompt's last window_
    j["context_note"] = context_sentence(window_);
    json vocab = json::array({""});  // id 0: the unknown token
    for (char32_t c : model_->tokenizer.chars()) vocab.push_back(char_to_utf8(c));
    j["vocab"] = std::move(vocab);
  }
  send_json(res, j);
}

void Server::answer_inspect(const httplib::Request& req, httplib::Response& res) {
  const json body = parse_body(req, {"prompt", "top_k", "allow_unknown"});
  if (!body.contains("prompt")) throw BadRequest("give the prompt: {\"prompt\": \"TEXT\"}");
  const std::u32string prompt = decode_prompt(string_field(body, "prompt", ""));
  const auto k = static_cast<std::size_t>(integer_field(body, "top_k", 5, 1, kMaxTopK));
  const bool allow_unknown = bool_field(body, "allow_unknown", false);
  std::size_t window = 0;
  const auto m = model(&window);
  refuse_past_context(prompt, window);
  if (!allow_unknown) refuse_unknown(prompt, m->tokenizer);
  std::size_t unknown = 0;
  Inspection ins;
  try {
    std::lock_guard lock(compute_mutex_);
    ins = inspect(*m, prompt, allow_unknown, &unknown);
  } catch (const InspectError& e) {  // its advice names the command line's flag; this is JSON
    throw BadRequest(replace_all(e.what(), "--allow-unknown", "\"allow_unknown\": true"));
  }
  send_json(res, inspect_json(ins, k, unknown));
}

void Server::answer_sample(const httplib::Request& req, httplib::Response& res) {
  const json body =
      parse_body(req, {"prompt", "temperature", "top_k", "top_p", "min_p", "repeat_penalty",
                       "repeat_last_n", "seed", "n", "allow_unknown"});
  const std::u32string prompt = decode_prompt(string_field(body, "prompt", ""));
  std::size_t window = 0;
  const auto m = model(&window);
  const SamplingOptions sampling = sampling_fields(body, m->config.vocab_size);
  const std::uint64_t seed = integer_field(body, "seed", 1337, 0, UINT64_MAX);
  const auto n =
      static_cast<std::size_t>(integer_field(body, "n", 200, 1, options_.max_sample_tokens));
  // A prompt longer than the context is cropped to its last `window` characters, as glass
  // sample does (the body limit bounds it).
  if (!bool_field(body, "allow_unknown", false)) refuse_unknown(prompt, m->tokenizer);
  const std::vector<std::int32_t> ids = prompt_ids(prompt, m->tokenizer, window);
  // The characters go out as they are chosen (chunked transfer encoding).
  res.set_chunked_content_provider(
      "text/plain; charset=utf-8",
      [this, m, ids, n, window, sampling, seed](std::size_t, httplib::DataSink& sink) {
        std::lock_guard lock(compute_mutex_);
        std::mt19937_64 rng(seed);
        try {
          generate(*m->model, ids, n, window, sampling, rng, [&](std::int32_t id) {
            const std::string piece = m->tokenizer.decode_utf8({id});
            if (stopping_ || !sink.write(piece.data(), piece.size())) throw ClientGone{};
          });
        } catch (const ClientGone&) {
          return false;
        } catch (const std::exception& e) {  // after the first character the status is sent
          const std::string note = std::string("\n[error: ") + e.what() + "]";
          sink.write(note.data(), note.size());
        }
        sink.done();
        return true;
      });
}

void Server::answer_next(const httplib::Request& req, httplib::Response& res) {
  const json body = parse_body(req, {"prompt", "temperature", "top_k", "top_p", "min_p",
                                     "repeat_penalty", "repeat_last_n", "allow_unknown"});
  const std::u32string prompt = decode_prompt(string_field(body, "prompt", ""));
  std::size_t window = 0;
  const auto m = model(&window);
  const SamplingOptions sampling = sampling_fields(body, m->config.vocab_size);
  if (!bool_field(body, "allow_unknown", false)) refuse_unknown(prompt, m->tokenizer);
  // The ids the first character of /api/sample would follow (the prompt's last `window`), and
  // the probabilities it would be drawn from: the same logits, the same sampler.
  const std::vector<std::int32_t> ids = prompt_ids(prompt, m->tokenizer, window);
  std::vector<double> probs;
  {
    std::lock_guard lock(compute_mutex_);
    NextTokenLogits next_logits(*m->model, window, sampling);
    probs = generation_probs(next_logits(ids), sampling, ids);
  }
  send_json(res, json{{"tokens", ids}, {"probs", probs}});
}

}  // namespace glass
