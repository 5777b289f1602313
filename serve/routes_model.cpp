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
#include "data/visible_text.hpp"
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
    j["step"] = step_json(model_->weights_step());  // an integer (null: not recorded)
    j["run_id"] = model_->run_id();
    j["save"] = fs::path(served_dir_).filename().string();
    j["config"] = model_sizes_json(model_->config());
    const std::size_t window = model_->window();
    j["window"] = window;
    // The longest prompt an inspection takes, in the model's tokens (`unit`: a character model's
    // characters, a BPE model's subwords); a sample keeps a longer prompt's last window.
    j["max_prompt_tokens"] = window;
    j["tokenizer"] = model_->tokenizer().kind_name();
    j["chat"] = model_->tokenizer().has_chat_tokens();  // POST /api/chat answers
    j["unit"] = model_->unit();  // what the context counts: "characters" or "tokens"
    j["unit_singular"] = model_->unit(false);
    j["context_note"] = context_sentence(window, model_->unit());
    // Each id's text as the vocabulary writes it: "<unk>", "<0x0A>", "▁de"; "" for a character
    // model's unknown id 0.
    j["vocab"] = model_->tokenizer().vocabulary();
  }
  send_json(res, j);
}

void Server::answer_inspect(const httplib::Request& req, httplib::Response& res) {
  const json body = parse_body(req, {"prompt", "top_k", "allow_unknown"});
  if (!body.contains("prompt")) throw BadRequest("give the prompt: {\"prompt\": \"TEXT\"}");
  const std::u32string prompt = decode_prompt(string_field(body, "prompt", ""));
  const auto k = static_cast<std::size_t>(integer_field(body, "top_k", 5, 1, kMaxTopK));
  const UnknownPolicy policy = unknown_policy(body);
  const auto m = model();
  refuse_past_context(prompt, *m);
  std::size_t unknown = 0;
  Inspection ins;
  {
    std::lock_guard lock(compute_mutex_);
    ins = inspect(*m, prompt, policy, &unknown);  // UnknownCharacterError: a 400
  }
  send_json(res, inspect_json(ins, k, unknown));
}

void Server::answer_sample(const httplib::Request& req, httplib::Response& res) {
  const json body =
      parse_body(req, {"prompt", "temperature", "top_k", "top_p", "min_p", "repeat_penalty",
                       "repeat_last_n", "seed", "n", "allow_unknown", "raw"});
  const std::u32string prompt = decode_prompt(string_field(body, "prompt", ""));
  const bool raw = bool_field(body, "raw", false);  // control characters as they are
  const auto m = model();
  const std::size_t window = m->window();
  const SamplingOptions sampling = sampling_fields(body, m->config().vocab_size);
  const std::uint64_t seed = integer_field(body, "seed", 1337, 0, UINT64_MAX);
  const auto n =
      static_cast<std::size_t>(integer_field(body, "n", 200, 1, options_.max_sample_tokens));
  // A prompt longer than the context is cropped to its last `window` tokens, as glass
  // sample does (the body limit bounds it).
  const std::vector<std::int32_t> ids = prompt_ids(prompt, *m, unknown_policy(body));
  // The text goes out as the tokens are chosen (chunked transfer encoding); a BPE model's byte
  // tokens wait until they make a whole character. Control characters are sent as visible
  // escapes (escape_controls), as glass sample writes them, unless "raw" asks for the bytes.
  res.set_chunked_content_provider(
      "text/plain; charset=utf-8",
      [this, m, ids, n, window, sampling, seed, raw](std::size_t, httplib::DataSink& sink) {
        std::lock_guard lock(compute_mutex_);
        std::mt19937_64 rng(seed);
        StreamDecoder stream(m->tokenizer());
        try {
          generate(m->model(), ids, n, window, sampling, rng, [&](std::int32_t id) {
            std::string piece = stream.push(id);  // "" while a character waits for bytes
            if (!raw) piece = escape_controls(piece);
            if (stopping_ || (!piece.empty() && !sink.write(piece.data(), piece.size())))
              throw ClientGone{};
          });
          std::string rest = stream.flush();  // an incomplete character: U+FFFD
          if (!raw) rest = escape_controls(rest);
          if (!rest.empty() && !sink.write(rest.data(), rest.size())) return false;
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
  const json body = parse_body(req, {"prompt", "tokens", "temperature", "top_k", "top_p", "min_p",
                                     "repeat_penalty", "repeat_last_n", "allow_unknown"});
  const std::u32string prompt = decode_prompt(string_field(body, "prompt", ""));
  const auto m = model();
  const std::size_t window = m->window();
  const SamplingOptions sampling = sampling_fields(body, m->config().vocab_size);
  // The ids the first token of /api/sample would follow (the prompt's last `window`), and the
  // probabilities it would be drawn from: the same logits, the same sampler. "tokens" (ids as
  // /api/inspect answers them) instead of the prompt: the tokens up to one position exactly,
  // where a BPE prompt cut after a token might encode otherwise.
  std::vector<std::int32_t> ids;
  if (body.contains("tokens")) {
    if (body.contains("prompt")) throw BadRequest("give \"prompt\" or \"tokens\", not both");
    ids = token_ids_field(body, m->config().vocab_size, window);
  } else {
    ids = prompt_ids(prompt, *m, unknown_policy(body));
  }
  std::vector<double> probs;
  {
    std::lock_guard lock(compute_mutex_);
    NextTokenLogits next_logits(m->model(), window, sampling);
    probs = generation_probs(next_logits(ids), sampling, ids);
  }
  send_json(res, json{{"tokens", ids}, {"probs", probs}});
}

}  // namespace glass
