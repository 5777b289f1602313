// What `glass sample` does once its flags are read (see run.hpp).

#include "sample/run.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "autograd/threads.hpp"
#include "data/text.hpp"
#include "data/visible_text.hpp"
#include "sample/thread_choice.hpp"

namespace glass {

namespace {

using Clock = std::chrono::steady_clock;

/// Thrown by the token callback to end a sample early (stop string): not an error.
struct StopSample {};

/// The window: the checkpoint's (Checkpoint::window), or the one asked for, within the model's
/// positions.
std::size_t choose_window(const SampleOptions& o, PreparedSample& p) {
  const std::size_t trained = p.loaded.window(), positions = p.loaded.config().context_length;
  if (o.window > positions) throw WindowTooLongError(o.window, positions, trained, p.loaded.unit());
  p.past_trained_window = o.window > trained;
  return o.window > 0 ? o.window : trained;
}

/// The prompt as token ids (Checkpoint::encode_prompt); with allow_unknown the characters
/// mapped to id 0 are counted and named as a refusal would name them.
std::vector<std::int32_t> encode(const SampleOptions& o, PreparedSample& p) {
  std::u32string text;
  try {
    text = utf8_to_u32(o.prompt);
  } catch (const Utf8Error& e) {
    throw std::invalid_argument(std::string("the prompt is not valid UTF-8: ") + e.what());
  }
  const auto policy = o.allow_unknown ? UnknownPolicy::kMapToUnknownId : UnknownPolicy::kRefuse;
  std::vector<std::int32_t> ids = p.loaded.encode_prompt(text, policy, &p.unknown);
  if (p.unknown > 0) {
    try {
      p.loaded.encode_prompt(text, UnknownPolicy::kRefuse);
    } catch (const UnknownCharacterError& e) {
      p.unknown_which = e.what();
    }
  }
  return ids;
}

/// For JSON: each generated token's probability, re-computed from the logits generation drew
/// it from (the same NextTokenLogits, so the same KV cache, window and window mode: replayed
/// exactly): `prob` under the sampling settings (temperature, top-k, top-p: what the draw used),
/// `model_prob` at temperature 1 with nothing cut. The unknown id 0 is excluded, as generation
/// excludes it.
nlohmann::json token_probabilities(const PreparedSample& p,
                                   const std::vector<std::int32_t>& generated,
                                   const SamplingOptions& sampling, Tracer* tracer) {
  NextTokenLogits next_logits(p.loaded.model(), p.window, sampling, tracer);
  std::vector<std::int32_t> text = p.prompt;
  SamplingOptions plain;
  plain.temperature = 1.0;
  nlohmann::json tokens = nlohmann::json::array();
  for (const std::int32_t id : generated) {
    std::vector<double> row = next_logits(text);  // (vocab_size) logits after text.back()
    if (row.size() > 1) row[0] = -std::numeric_limits<double>::infinity();
    tokens.push_back({{"id", id},
                      {"text", p.loaded.tokenizer().decode_generated({id})},
                      {"prob", next_token_probs(row, sampling, text)[id]},
                      {"model_prob", next_token_probs(row, plain)[id]}});
    text.push_back(id);
  }
  return tokens;
}

/// The JSON document of options.json: the prompt's ids (after any crop) with their texts, the
/// settings, and the samples.
nlohmann::json samples_json(const PreparedSample& p, const SampleOptions& o,
                            nlohmann::json samples) {
  nlohmann::json prompt_tokens = nlohmann::json::array();
  for (const std::int32_t id : p.prompt)
    prompt_tokens.push_back({{"id", id}, {"text", p.loaded.tokenizer().decode_generated({id})}});
  const SamplingOptions& s = o.sampling;
  return {{"checkpoint", o.checkpoint},
          {"prompt", p.shown_prompt},
          {"prompt_tokens", prompt_tokens},
          {"context", p.window},
          {"seed", o.seed},
          {"temperature", s.temperature},
          {"top_k", s.top_k},
          {"top_p", s.top_p},
          {"min_p", s.min_p},
          {"repeat_penalty", s.repeat_penalty},
          {"repeat_last_n", s.repeat_last_n},
          {"samples", std::move(samples)}};
}

/// The thread count of generation while it runs. Without a count set, generation measures one
/// thread against every core as it goes and keeps the faster (sample/thread_choice.hpp). It
/// changes no generated token: each prompt is read on every core, as before (a product of many
/// rows may round otherwise on another count), and each token after it goes through the KV
/// cache, whose products have one row and give the same bits on any count
/// (Generate.TheThreadCountChangesNoBitOfAGeneratedTokensLogits). Without the cache, or
/// recomputing the window past it, every token is many rows: every core.
class GenerationThreads {
 public:
  explicit GenerationThreads(const SampleOptions& o)
      : cores_(available_cores()),
        choose_(o.choose_threads && cores_ > 1 && o.sampling.use_kv_cache &&
                o.sampling.window_mode == WindowMode::rolling) {}

  /// Before a sample: its prompt is read on every core.
  void sample_starts() {
    if (choose_) set_num_threads(cores_);
    last_ = Clock::now();
  }
  /// A token came (`first`: drawn from the prompt's logits); sets the count for the next one.
  void token_came(bool first) {
    const double took = std::chrono::duration<double>(Clock::now() - last_).count();
    if (!choose_) return;
    if (first) {
      ++from_prompts_;
      if (!choice_)
        choice_.emplace(cores_, [](std::size_t n) { set_num_threads(n); });
      else
        set_num_threads(choice_->current());
    } else {
      choice_->token_took(took);
    }
  }
  /// After the token was written: writing is not generation.
  void token_written() { last_ = Clock::now(); }

  void report(SampleRun& run) const {
    run.threads = num_threads();
    run.chose_threads = choose_;
    run.cores = cores_;
    run.tokens_on_one = choice_ ? choice_->tokens_on(1) : 0;
    run.tokens_on_cores = from_prompts_ + (choice_ ? choice_->tokens_on(cores_) : 0);
  }

 private:
  std::size_t cores_;
  bool choose_;
  std::optional<ThreadChoice> choice_;
  std::size_t from_prompts_ = 0;  // tokens computed on every core, each sample's first
  Clock::time_point last_;
};

/// One sample: streamed to `out` unless JSON; its text, ids and whether the stop string ended it.
struct OneSample {
  std::string text;
  std::vector<std::int32_t> ids;
  bool stopped = false;
};

OneSample generate_one(PreparedSample& p, const SampleOptions& o, std::mt19937_64& rng,
                       GenerationThreads& threads, std::ostream& out) {
  OneSample s;
  StreamDecoder stream(p.loaded.tokenizer());  // BPE: bytes wait for their whole character
  threads.sample_starts();
  try {
    generate(
        p.loaded.model(), p.prompt, o.tokens, p.window, o.sampling, rng,
        [&](std::int32_t id) {
          threads.token_came(s.ids.empty());
          s.ids.push_back(id);
          const std::string piece = stream.push(id);
          s.text += piece;
          if (!o.json) write_generated_text(out, piece, o.raw);
          if (!o.stop.empty() && s.text.size() >= o.stop.size() &&
              s.text.compare(s.text.size() - o.stop.size(), o.stop.size(), o.stop) == 0) {
            s.stopped = true;
            throw StopSample{};
          }
          threads.token_written();
        },
        o.tracer);
  } catch (const StopSample&) {}
  if (const std::string rest = stream.flush(); !rest.empty()) {  // an incomplete character
    if (!o.json) write_generated_text(out, rest, o.raw);
    s.text += rest;
  }
  return s;
}

}  // namespace

void write_generated_text(std::ostream& out, std::string_view text, bool raw) {
  errno = 0;
  if (raw)
    out << text;
  else
    out << escape_controls(text);
  out << std::flush;
  if (!out) {
    const int err = errno;
    throw std::runtime_error(std::string("cannot write to standard output") +
                             (err != 0 ? std::string(": ") + std::strerror(err) : std::string()));
  }
}

WindowTooLongError::WindowTooLongError(std::size_t asked, std::size_t positions,
                                       std::size_t trained, std::string unit)
    : std::invalid_argument(fmt::format(
          "a window of {} {}: the model has positions for at most {} {} (context_length; it "
          "trained on windows of {})",
          asked, unit, positions, unit, trained)),
      asked_(asked),
      positions_(positions),
      trained_(trained),
      unit_(std::move(unit)) {}

PreparedSample prepare_sample(SampleOptions& o) {
  validate(o.sampling);  // std::invalid_argument naming the setting
  PreparedSample p{load_checkpoint(o.checkpoint, o.best)};
  p.loaded.model().set_ops_path(o.ops);
  p.window = choose_window(o, p);
  p.prompt = encode(o, p);
  p.prompt_tokens = p.prompt.size();
  p.shown_prompt = o.prompt;
  const TextTokenizer& tokenizer = p.loaded.tokenizer();
  if (p.prompt.empty()) {  // start from a newline, as if at the start of a paragraph
    p.prompt = {tokenizer.start_id()};
  } else if (p.prompt.size() > p.window) {
    p.prompt.erase(p.prompt.begin(), p.prompt.end() - static_cast<long>(p.window));
    p.shown_prompt = tokenizer.decode_generated(p.prompt);
  }
  if (o.sampling.top_k > tokenizer.vocab_size()) o.sampling.top_k = tokenizer.vocab_size();
  return p;
}

SampleRun generate_samples(PreparedSample& p, const SampleOptions& o, std::ostream& out) {
  GenerationThreads threads(o);
  std::mt19937_64 rng(o.seed);  // one stream for all samples: sample k is reproducible
  nlohmann::json samples = nlohmann::json::array();
  SampleRun run;
  const auto t0 = Clock::now();
  for (long long k = 0; k < o.num_samples; ++k) {
    if (!o.json)
      write_generated_text(out, (k > 0 ? "---------------\n" : "") + p.shown_prompt, o.raw);
    const OneSample s = generate_one(p, o, rng, threads, out);
    run.generated += s.ids.size();
    if (!o.json) {
      write_generated_text(out, "\n", o.raw);
      continue;
    }
    samples.push_back({{"text", s.text},
                       {"stopped", s.stopped},
                       {"tokens", token_probabilities(p, s.ids, o.sampling, o.tracer)}});
  }
  run.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  if (o.json)
    write_generated_text(out, samples_json(p, o, std::move(samples)).dump(2) + "\n", true);
  threads.report(run);
  return run;
}

}  // namespace glass
