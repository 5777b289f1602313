// `glass sample`: generate text from a checkpoint (train/sample/sampler.hpp). The flags follow
// nanoGPT's sample.py, llama.cpp's llama-cli and llama2.c's run where they have one:
//
//   glass sample -m DIR [-p TEXT | -p - | --prompt-file FILE] [-n N] [--temp X] [--top-k K]
//                [--top-p P] [-s S] [-t N] [--num-samples K] [--stop STRING] [--json]
//                [--window-mode rolling|exact] [--no-kv-cache] [--allow-unknown] [--best]
//                [--attention fast|reference]

#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <set>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "autograd/tape.hpp"
#include "data/text.hpp"
#include "train/io/checkpoint.hpp"
#include "train/cli/commands.hpp"
#include "train/cli/threads.hpp"
#include "train/cli/validators.hpp"
#include "train/sample/sampler.hpp"

namespace {

using glass::cli::CommandError;

struct SampleFlags {
  std::string checkpoint;
  std::string prompt;
  std::size_t tokens = 300;
  glass::SamplingOptions sampling;
  std::uint64_t seed = 1337;
  bool no_kv_cache = false;
  std::string window_mode = "rolling";
  bool allow_unknown = false;
  bool best = false;
  std::string attention = "fast";
  std::string prompt_file;
  long long num_samples = 1;
  std::string stop;
  bool json = false;
  int threads = 0;
};

/// Thrown by the token callback to end a sample early (--stop): not an error.
struct StopSample {};

/// The prompt text: --prompt-file FILE, or --prompt - (standard input), or --prompt TEXT.
std::string read_prompt(const SampleFlags& f, bool prompt_given) {
  if (!f.prompt_file.empty() && prompt_given)
    throw CommandError("give the prompt once: --prompt or --prompt-file, not both");
  auto read_all = [](std::istream& in) {
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  if (!f.prompt_file.empty()) {
    std::ifstream in(f.prompt_file, std::ios::binary);
    if (!in) throw CommandError("cannot read --prompt-file '" + f.prompt_file + "': " + std::strerror(errno));
    return read_all(in);
  }
  if (f.prompt == "-") {
    std::string text = read_all(std::cin);
    if (std::cin.bad()) throw CommandError("cannot read the prompt from standard input");
    return text;
  }
  return f.prompt;
}

/// For --json: each generated token's probability, re-computed from the logits generation drew
/// it from (the same NextTokenLogits, so the same KV cache, window and window mode: replayed
/// exactly): `prob` under the sampling settings (temperature, top-k, top-p: what the draw used),
/// `model_prob` at temperature 1 with nothing cut. The unknown id 0 is excluded, as generation
/// excludes it.
nlohmann::json token_probabilities(const glass::Decoder& model, const glass::Tokenizer& tokenizer,
                                   const std::vector<std::int32_t>& prompt,
                                   const std::vector<std::int32_t>& generated, std::size_t window,
                                   const glass::SamplingOptions& sampling) {
  glass::NextTokenLogits next_logits(model, window, sampling);
  std::vector<std::int32_t> text = prompt;
  glass::SamplingOptions plain;
  plain.temperature = 1.0;
  nlohmann::json tokens = nlohmann::json::array();
  for (const std::int32_t id : generated) {
    std::vector<double> row = next_logits(text);  // (vocab_size) logits after text.back()
    if (row.size() > 1) row[0] = -std::numeric_limits<double>::infinity();
    tokens.push_back({{"id", id},
                      {"text", tokenizer.decode_utf8({id})},
                      {"prob", glass::next_token_probs(row, sampling)[id]},
                      {"model_prob", glass::next_token_probs(row, plain)[id]}});
    text.push_back(id);
  }
  return tokens;
}

/// The prompt as token ids. Characters outside the vocabulary are an error naming them, or
/// (allow_unknown) become id 0 with a warning.
std::vector<std::int32_t> encode_prompt(const SampleFlags& f, const glass::Tokenizer& tokenizer) {
  std::u32string text;
  try {
    text = glass::utf8_to_u32(f.prompt);
  } catch (const glass::Utf8Error& e) {
    throw CommandError(std::string("the prompt is not valid UTF-8: ") + e.what());
  }
  std::set<char32_t> unknown;
  for (char32_t c : text)
    if (!tokenizer.contains(c)) unknown.insert(c);
  if (!unknown.empty()) {
    std::string names;
    for (char32_t c : unknown) names += (names.empty() ? "" : ", ") + glass::describe_char(c);
    if (!f.allow_unknown)
      throw CommandError(fmt::format(
          "the prompt has {} character(s) the model never saw in training: {}. Remove them, or "
          "pass --allow-unknown to map them to the unknown token (id 0).",
          unknown.size(), names));
    std::cerr << "warning: mapping characters outside the vocabulary to the unknown token: " << names << "\n";
  }
  return tokenizer.encode(text, /*map_unknown=*/true);
}

void run_sample(SampleFlags& f, bool prompt_given) {
  glass::validate(f.sampling);  // std::invalid_argument -> "error: ..."
  f.prompt = read_prompt(f, prompt_given);
  glass::cli::apply_threads(f.threads);
  glass::LoadedModel loaded = glass::load_checkpoint(f.checkpoint, f.best);
  if (!loaded.warning.empty()) std::cerr << "warning: " << loaded.warning << "\n";
  loaded.model->set_attention(f.attention);
  const glass::Tokenizer& tokenizer = loaded.tokenizer;
  std::size_t window = glass::training_context(loaded.files_dir);  // 0: not recorded
  if (window == 0) window = loaded.config.context_length;
  if (window > loaded.config.context_length) {
    throw CommandError(fmt::format("{}/config.json: training.context {} exceeds the model's "
                                   "context_length {}", f.checkpoint, window, loaded.config.context_length));
  }

  std::vector<std::int32_t> prompt = encode_prompt(f, tokenizer);
  std::string shown_prompt = f.prompt;
  if (prompt.empty()) {  // start from a newline, as if at the start of a paragraph
    prompt = {tokenizer.contains(U'\n') ? tokenizer.id_of(U'\n') : 1};
  } else if (prompt.size() > window) {
    std::cerr << fmt::format("note: the prompt has {} characters; the model sees only the last {} "
                             "(its training context)\n", prompt.size(), window);
    prompt.erase(prompt.begin(), prompt.end() - static_cast<long>(window));
    shown_prompt = tokenizer.decode_utf8(prompt);
  }
  f.sampling.use_kv_cache = !f.no_kv_cache;
  f.sampling.window_mode = glass::parse_window_mode(f.window_mode);
  if (f.sampling.top_k > tokenizer.vocab_size()) f.sampling.top_k = tokenizer.vocab_size();

  auto write = [](const std::string& text) {
    errno = 0;
    std::cout << text << std::flush;
    if (!std::cout) {  // a full disk or a closed pipe: stop instead of generating into nothing
      const int err = errno;
      throw CommandError(std::string("cannot write to standard output") +
                         (err != 0 ? std::string(": ") + std::strerror(err) : std::string()));
    }
  };
  std::mt19937_64 rng(f.seed);  // one stream for all samples: sample k is reproducible
  nlohmann::json samples = nlohmann::json::array();
  std::size_t characters = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (long long k = 0; k < f.num_samples; ++k) {
    if (!f.json) write((k > 0 ? "---------------\n" : "") + shown_prompt);
    std::vector<std::int32_t> ids;
    std::string text;  // the generated text so far (for --stop)
    bool stopped = false;
    try {
      glass::generate(*loaded.model, prompt, f.tokens, window, f.sampling, rng, [&](std::int32_t id) {
        ids.push_back(id);
        const std::string piece = tokenizer.decode_utf8({id});
        text += piece;
        if (!f.json) write(piece);
        if (!f.stop.empty() && text.size() >= f.stop.size() &&
            text.compare(text.size() - f.stop.size(), f.stop.size(), f.stop) == 0) {
          stopped = true;
          throw StopSample{};
        }
      });
    } catch (const StopSample&) {
    }
    characters += ids.size();
    if (!f.json) {
      write("\n");
      continue;
    }
    samples.push_back({{"text", text},
                       {"stopped", stopped},
                       {"tokens", token_probabilities(*loaded.model, tokenizer, prompt, ids, window,
                                                      f.sampling)}});
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (f.json) {
    const nlohmann::json out = {{"checkpoint", f.checkpoint},
                                {"prompt", shown_prompt},
                                {"seed", f.seed},
                                {"temperature", f.sampling.temperature},
                                {"top_k", f.sampling.top_k},
                                {"top_p", f.sampling.top_p},
                                {"samples", samples}};
    write(out.dump(2) + "\n");
  }
  std::cerr << fmt::format("{} characters in {:.2f} s ({:.1f} characters/s{})\n", characters,
                           seconds, seconds > 0 ? static_cast<double>(characters) / seconds : 0.0,
                           f.json ? ", with the probabilities of --json" : "");
}

/// Characters one `glass sample` generates, at most (a million take minutes; more is a typo).
constexpr long long kMaxTokens = 1'000'000;

void add_sample_command(CLI::App& app) {
  auto f = std::make_shared<SampleFlags>();
  CLI::App* cmd = app.add_subcommand("sample", "Generate text from a trained checkpoint.");
  cmd->add_option("-m,--checkpoint", f->checkpoint, "checkpoint directory written by glass train")->required();
  CLI::Option* prompt = cmd->add_option(
      "-p,--prompt", f->prompt, "text to continue (default: start of a paragraph); - reads it from standard input");
  cmd->add_option("--prompt-file", f->prompt_file, "read the text to continue from this file")
      ->check(CLI::ExistingFile);
  cmd->add_option("-n,--tokens", f->tokens, "characters to generate (per sample)")
      ->check(glass::cli::integer_in(1, kMaxTokens, fmt::format("an integer from 1 to {}", kMaxTokens)))
      ->capture_default_str();
  cmd->add_option("--temperature,--temp", f->sampling.temperature,
                  "divide the logits by this; 0 = greedy (always the most likely character)")
      ->check(glass::cli::number_in(0.0, HUGE_VAL, false, "a number >= 0 (0 = greedy)"))->capture_default_str();
  cmd->add_option("--top-k", f->sampling.top_k, "keep only the K most likely characters (0 = off)")
      ->check(glass::cli::kNonNegativeInteger)->capture_default_str();
  cmd->add_option("--top-p", f->sampling.top_p,
                  "keep the most likely characters whose probabilities add up to P (1 = off)")
      ->check(glass::cli::number_in(0.0, 1.0, true, "a number in (0, 1]"))->capture_default_str();
  cmd->add_option("-s,--seed", f->seed, "seed of the random draws (same seed, same text)")
      ->check(glass::cli::kNonNegativeInteger)->capture_default_str();
  cmd->add_option("--num-samples", f->num_samples, "how many samples to draw, one after the other")
      ->check(glass::cli::integer_in(1, 10'000, "an integer from 1 to 10000"))->capture_default_str();
  cmd->add_option("--stop", f->stop, "end a sample as soon as its text ends with this string");
  cmd->add_flag("--json", f->json,
                "print JSON instead of text: each sample's text and its tokens with their "
                "probabilities (prob: as drawn; model_prob: at temperature 1)");
  glass::cli::add_threads_option(cmd, f->threads);
  CLI::Option* window_mode =
      cmd->add_option("--window-mode", f->window_mode,
                      "past the window (the training context): rolling = keep the KV cache and drop "
                      "its oldest position for each new character (fast; sliding-window attention), "
                      "exact = recompute the last window of characters for each new one (slow; what "
                      "the model saw in training)")
          ->check(CLI::IsMember({"rolling", "exact"}))
          ->capture_default_str();
  cmd->add_flag("--no-kv-cache", f->no_kv_cache,
                "recompute the whole window for every new character (the exact mode without a cache)")
      ->excludes(window_mode);
  cmd->add_flag("--allow-unknown", f->allow_unknown,
                "map prompt characters outside the vocabulary to the unknown token instead of failing");
  cmd->add_option("--attention", f->attention, "attention code: fast (fused kernels) or reference (the nine steps on the primitive ops)")
      ->check(CLI::IsMember({"fast", "reference"}))->capture_default_str();
  cmd->add_flag("--best", f->best, "use best.safetensors (best validation loss) instead of the latest weights");
  cmd->footer(
      "Examples:\n"
      "  glass sample -m runs/domcasmurro -p 'Capitu ' -n 300\n"
      "  echo 'Bentinho' | glass sample -m runs/domcasmurro -p - --num-samples 3 --stop $'\\n\\n'\n"
      "  glass sample -m runs/domcasmurro -p 'Cap' -n 20 --temp 0 --json\n"
      "The last line on standard error gives the speed in characters/s.");
  cmd->callback([f, prompt] { run_sample(*f, prompt->count() > 0); });
}

glass::cli::CommandRegistration registration(20, &add_sample_command);

}  // namespace
