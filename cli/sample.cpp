// `glass sample`: generate text from a checkpoint (sample/sampler.hpp). The flags follow
// nanoGPT's sample.py, llama.cpp's llama-cli and llama2.c's run where they have one:
//
//   glass sample -m DIR [-p TEXT | -p - | -f/--prompt-file FILE] [-n N] [--temp X] [--top-k K]
//                [--top-p P] [--min-p P] [--repeat-penalty X] [--repeat-last-n N] [-c N] [-s S]
//                [-t N] [--num-samples K] [--stop STRING] [--json] [--window-mode rolling|exact]
//                [--no-kv-cache] [--allow-unknown] [--best] [--ops fast|reference]
//
// Also under their llama.cpp names (--model, --file, --n-predict, --ctx-size) and nanoGPT's
// (--start, --max_new_tokens, --num_samples, --top_k); llama.cpp's -ngl is refused in main.cpp.

#include <chrono>
#include <optional>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "autograd/tape.hpp"
#include "data/text.hpp"
#include "checkpoint/checkpoint.hpp"
#include "cli/commands.hpp"
#include "autograd/threads.hpp"
#include "cli/threads.hpp"
#include "sample/thread_choice.hpp"
#include "cli/validators.hpp"
#include "sample/sampler.hpp"

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
  std::string start;         // nanoGPT's --start: TEXT, or FILE:path
  std::size_t ctx_size = 0;  // -c: the window; 0 = the training context
  long long num_samples = 1;
  std::string stop;
  bool json = false;
  int threads = 0;
};

/// Thrown by the token callback to end a sample early (--stop): not an error.
struct StopSample {};

/// The most a prompt may hold, in bytes, from -p -, --prompt-file or --start FILE:path. The
/// model sees only its context (the last few hundred characters at most); the limit stops a
/// mistaken /dev/zero or `yes` from filling the memory.
constexpr std::size_t kMaxPromptBytes = 1 << 20;  // 1 MiB

/// Reads `in` up to kMaxPromptBytes; past them an error naming `source` (e.g. "--prompt-file
/// 'x'"), without reading further. One trailing newline is dropped, as the shell's $(...) does
/// ("echo Bentinho | glass sample -p -" continues "Bentinho", not "Bentinho\n").
std::string read_bounded(std::istream& in, const std::string& source) {
  std::string text(kMaxPromptBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) throw CommandError("cannot read the prompt from " + source);
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxPromptBytes)
    throw CommandError(fmt::format(
        "the prompt from {} is longer than {} bytes (1 MiB), the most glass reads; the model sees "
        "only the last tokens of its context anyway: pass the end of the text (e.g. tail -c 4096)",
        source, kMaxPromptBytes));
  if (!text.empty() && text.back() == '\n') {
    text.pop_back();
    if (!text.empty() && text.back() == '\r') text.pop_back();  // a CRLF line end
  }
  return text;
}

/// The prompt text: --prompt-file FILE, or --prompt - (standard input), or --prompt TEXT, or
/// nanoGPT's --start TEXT / --start FILE:path.
std::string read_prompt(SampleFlags& f, bool prompt_given) {
  const int given =
      (prompt_given ? 1 : 0) + (f.prompt_file.empty() ? 0 : 1) + (f.start.empty() ? 0 : 1);
  if (given > 1)
    throw CommandError("give the prompt once: --prompt, --prompt-file or --start, not two of them");
  if (f.start.rfind("FILE:", 0) == 0) {
    f.prompt_file = f.start.substr(5);
  } else if (!f.start.empty()) {
    return f.start;
  }
  if (!f.prompt_file.empty()) {
    std::ifstream in(f.prompt_file, std::ios::binary);
    if (!in)
      throw CommandError("cannot read --prompt-file '" + f.prompt_file +
                         "': " + std::strerror(errno));
    return read_bounded(in, "--prompt-file '" + f.prompt_file + "'");
  }
  if (f.prompt == "-") return read_bounded(std::cin, "standard input");
  return f.prompt;
}

/// For --json: each generated token's probability, re-computed from the logits generation drew
/// it from (the same NextTokenLogits, so the same KV cache, window and window mode: replayed
/// exactly): `prob` under the sampling settings (temperature, top-k, top-p: what the draw used),
/// `model_prob` at temperature 1 with nothing cut. The unknown id 0 is excluded, as generation
/// excludes it.
nlohmann::json token_probabilities(const glass::Checkpoint& loaded,
                                   const std::vector<std::int32_t>& prompt,
                                   const std::vector<std::int32_t>& generated, std::size_t window,
                                   const glass::SamplingOptions& sampling) {
  glass::NextTokenLogits next_logits(loaded.model(), window, sampling);
  std::vector<std::int32_t> text = prompt;
  glass::SamplingOptions plain;
  plain.temperature = 1.0;
  nlohmann::json tokens = nlohmann::json::array();
  for (const std::int32_t id : generated) {
    std::vector<double> row = next_logits(text);  // (vocab_size) logits after text.back()
    if (row.size() > 1) row[0] = -std::numeric_limits<double>::infinity();
    tokens.push_back({{"id", id},
                      {"text", loaded.tokenizer().decode_generated({id})},
                      {"prob", glass::next_token_probs(row, sampling, text)[id]},
                      {"model_prob", glass::next_token_probs(row, plain)[id]}});
    text.push_back(id);
  }
  return tokens;
}

/// The prompt as token ids (Checkpoint::encode_prompt). Characters outside a character model's
/// vocabulary are an error naming them, with the flag that maps them, or (--allow-unknown)
/// become id 0 with a warning.
std::vector<std::int32_t> encode_prompt(const SampleFlags& f, const glass::Checkpoint& loaded) {
  std::u32string text;
  try {
    text = glass::utf8_to_u32(f.prompt);
  } catch (const glass::Utf8Error& e) {
    throw CommandError(std::string("the prompt is not valid UTF-8: ") + e.what());
  }
  const auto policy =
      f.allow_unknown ? glass::UnknownPolicy::kMapToUnknownId : glass::UnknownPolicy::kRefuse;
  std::size_t unknown = 0;
  std::vector<std::int32_t> ids;
  try {
    ids = loaded.encode_prompt(text, policy, &unknown);
  } catch (const glass::UnknownCharacterError& e) {
    throw CommandError(std::string(e.what()) +
                       ". Remove them, or pass --allow-unknown to map them to the unknown token "
                       "(id 0).");
  }
  if (unknown > 0) {
    std::string which;  // the refusal's words name the characters and their positions
    try {
      loaded.encode_prompt(text, glass::UnknownPolicy::kRefuse);
    } catch (const glass::UnknownCharacterError& e) {
      which = e.what();
    }
    std::cerr << fmt::format(
        "warning: mapping {} prompt character(s) outside the vocabulary to the unknown token "
        "(id 0): {}\n",
        unknown, which);
  }
  return ids;
}

/// The window: the checkpoint's (Checkpoint::window), or -c/--ctx-size checked against the
/// model's positions, with a note when it goes past the trained window.
std::size_t sample_window(const SampleFlags& f, const glass::Checkpoint& loaded) {
  const std::size_t window = loaded.window(), positions = loaded.config().context_length;
  const char* unit = loaded.unit();
  if (f.ctx_size > positions)
    throw CommandError(
        fmt::format("--ctx-size {}: the model has positions for at most {} {} "
                    "(context_length; it trained on windows of {})",
                    f.ctx_size, positions, unit, window));
  if (f.ctx_size > window)
    std::cerr << fmt::format(
        "note: --ctx-size {} is past the {} {} the model trained on: "
        "positions from {} on were never trained\n",
        f.ctx_size, window, unit, window);
  return f.ctx_size > 0 ? f.ctx_size : window;
}

void run_sample(SampleFlags& f, bool prompt_given) {
  glass::validate(f.sampling);  // std::invalid_argument -> "error: ..."
  f.prompt = read_prompt(f, prompt_given);
  glass::Checkpoint loaded = glass::load_checkpoint(f.checkpoint, f.best);
  glass::cli::apply_threads(f.threads);
  if (!loaded.warning().empty()) std::cerr << "warning: " << loaded.warning() << "\n";
  loaded.model().set_ops_path(glass::parse_ops_path(f.attention));
  const glass::TextTokenizer& tokenizer = loaded.tokenizer();
  const char* unit = loaded.unit();
  const std::size_t window = sample_window(f, loaded);

  std::vector<std::int32_t> prompt = encode_prompt(f, loaded);
  std::string shown_prompt = f.prompt;
  if (prompt.empty()) {  // start from a newline, as if at the start of a paragraph
    prompt = {tokenizer.start_id()};
  } else if (prompt.size() > window) {
    std::cerr << fmt::format(
        "note: the prompt has {} {}; the model sees only its last {}: "
        "{}\n",
        prompt.size(), unit, window, glass::context_sentence(window, unit));
    prompt.erase(prompt.begin(), prompt.end() - static_cast<long>(window));
    shown_prompt = tokenizer.decode_generated(prompt);
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
  // Without -t, generation measures one thread against every core as it goes and keeps the
  // faster (sample/thread_choice.hpp). It changes no generated token: each prompt is read on
  // every core, as before (a product of many rows may round otherwise on another count), and
  // each token after it goes through the KV cache, whose products have one row and give the
  // same bits on any count (Generate.TheThreadCountChangesNoBitOfAGeneratedTokensLogits).
  // Without the cache, or recomputing the window past it, every token is many rows: every core.
  const std::size_t cores = glass::available_cores();
  const bool choose = f.threads == 0 && cores > 1 && f.sampling.use_kv_cache &&
                      f.sampling.window_mode == glass::WindowMode::rolling;
  std::optional<glass::ThreadChoice> choice;
  std::size_t from_prompts = 0;  // tokens computed on every core, each sample's first
  std::mt19937_64 rng(f.seed);   // one stream for all samples: sample k is reproducible
  nlohmann::json samples = nlohmann::json::array();
  std::size_t generated = 0;  // tokens
  const auto t0 = std::chrono::steady_clock::now();
  for (long long k = 0; k < f.num_samples; ++k) {
    if (!f.json) write((k > 0 ? "---------------\n" : "") + shown_prompt);
    std::vector<std::int32_t> ids;
    glass::StreamDecoder stream(tokenizer);  // BPE: bytes wait for their whole character
    std::string text;                        // the generated text so far (for --stop)
    bool stopped = false;
    if (choose) glass::set_num_threads(cores);  // the prompt: every core, at every sample
    auto last = std::chrono::steady_clock::now();
    try {
      glass::generate(
          loaded.model(), prompt, f.tokens, window, f.sampling, rng, [&](std::int32_t id) {
            const double took =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - last).count();
            if (choose && ids.empty()) {  // drawn from the prompt's logits
              ++from_prompts;
              if (!choice)
                choice.emplace(cores, [](std::size_t n) { glass::set_num_threads(n); });
              else
                glass::set_num_threads(choice->current());
            } else if (choose) {
              choice->token_took(took);
            }
            ids.push_back(id);
            const std::string piece = stream.push(id);
            text += piece;
            if (!f.json) write(piece);
            if (!f.stop.empty() && text.size() >= f.stop.size() &&
                text.compare(text.size() - f.stop.size(), f.stop.size(), f.stop) == 0) {
              stopped = true;
              throw StopSample{};
            }
            last = std::chrono::steady_clock::now();  // writing is not generation
          });
    } catch (const StopSample&) {}
    if (const std::string rest = stream.flush(); !rest.empty()) {  // an incomplete character
      if (!f.json) write(rest);
      text += rest;
    }
    generated += ids.size();
    if (!f.json) {
      write("\n");
      continue;
    }
    samples.push_back({{"text", text},
                       {"stopped", stopped},
                       {"tokens", token_probabilities(loaded, prompt, ids, window, f.sampling)}});
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (f.json) {
    // The ids the model read the prompt as (after any crop to the window), each with its text.
    nlohmann::json prompt_tokens = nlohmann::json::array();
    for (const std::int32_t id : prompt)
      prompt_tokens.push_back({{"id", id}, {"text", tokenizer.decode_generated({id})}});
    const nlohmann::json out = {{"checkpoint", f.checkpoint},
                                {"prompt", shown_prompt},
                                {"prompt_tokens", prompt_tokens},
                                {"context", window},
                                {"seed", f.seed},
                                {"temperature", f.sampling.temperature},
                                {"top_k", f.sampling.top_k},
                                {"top_p", f.sampling.top_p},
                                {"min_p", f.sampling.min_p},
                                {"repeat_penalty", f.sampling.repeat_penalty},
                                {"repeat_last_n", f.sampling.repeat_last_n},
                                {"samples", samples}};
    write(out.dump(2) + "\n");
  }
  const std::size_t threads = glass::num_threads();
  const std::string thread_words =
      !choose ? fmt::format("{} thread{}", threads, threads == 1 ? "" : "s")
              : fmt::format(
                    "threads chosen by measuring: {} {} on 1 thread, {} on {}; -t sets "
                    "the count",
                    choice ? choice->tokens_on(1) : 0, unit,
                    from_prompts + (choice ? choice->tokens_on(cores) : 0), cores);
  std::cerr << fmt::format("{} {} in {:.2f} s ({:.1f} {}/s, {}{})\n", generated, unit, seconds,
                           seconds > 0 ? static_cast<double>(generated) / seconds : 0.0, unit,
                           thread_words, f.json ? ", with the probabilities of --json" : "");
}

/// Characters one `glass sample` generates, at most (a million take minutes; more is a typo).
constexpr long long kMaxTokens = 1'000'000;

}  // namespace

namespace glass::cli {

void add_sample_command(CLI::App& app) {
  auto f = std::make_shared<SampleFlags>();
  CLI::App* cmd = app.add_subcommand("sample", "Generate text from a trained checkpoint.");
  cmd->add_option("-m,--checkpoint,--model", f->checkpoint,
                  "checkpoint directory written by glass train")
      ->required();
  CLI::Option* prompt = cmd->add_option(
      "-p,--prompt", f->prompt,
      "text to continue (default: start of a paragraph); - reads it from standard input (up to "
      "1 MiB, one trailing newline dropped)");
  cmd->add_option(
         "-f,--prompt-file,--file", f->prompt_file,
         "read the text to continue from this file (up to 1 MiB, one trailing newline dropped)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--start", f->start,
                  "nanoGPT's spelling: the prompt TEXT, or FILE:path to read it from a file");
  cmd->add_option(
         "-n,--tokens,--n-predict,--max_new_tokens", f->tokens,
         "tokens to generate per sample (a character model's characters, a BPE model's subword "
         "tokens)")
      ->check(
          glass::cli::integer_in(1, kMaxTokens, fmt::format("an integer from 1 to {}", kMaxTokens)))
      ->capture_default_str();
  cmd->add_option("--temperature,--temp", f->sampling.temperature,
                  "divide the logits by this; 0 = greedy (always the most likely token)")
      ->check(glass::cli::number_in(0.0, HUGE_VAL, false, "a number >= 0 (0 = greedy)"))
      ->capture_default_str();
  cmd->add_option("--top-k,--top_k", f->sampling.top_k,
                  "keep only the K most likely tokens (0 = off)")
      ->check(glass::cli::kNonNegativeInteger)
      ->capture_default_str();
  cmd->add_option("--top-p,--top_p", f->sampling.top_p,
                  "keep the most likely tokens whose probabilities add up to P (1 = off)")
      ->check(glass::cli::number_in(0.0, 1.0, true, "a number in (0, 1]"))
      ->capture_default_str();
  cmd->add_option("--min-p", f->sampling.min_p,
                  "keep the tokens at least P times as likely as the most likely one (0 = off)")
      ->check(glass::cli::number_in(0.0, 1.0, false, "a number in [0, 1]"))
      ->capture_default_str();
  cmd->add_option("--repeat-penalty", f->sampling.repeat_penalty,
                  "divide the positive logits (multiply the negative ones) of the tokens among "
                  "the last --repeat-last-n by this, as llama.cpp does (1 = off)")
      ->check(glass::cli::kPositiveNumber)
      ->capture_default_str();
  cmd->add_option("--repeat-last-n", f->sampling.repeat_last_n,
                  "how many of the last tokens (prompt included) the repetition penalty looks at")
      ->check(glass::cli::integer_in(0, 1'000'000, "an integer from 0 to 1000000"))
      ->capture_default_str();
  cmd->add_option("-c,--ctx-size", f->ctx_size,
                  "the window each prediction sees, in tokens (default: the training context; "
                  "at most the model's context_length)")
      ->check(glass::cli::kPositiveInteger);
  cmd->add_option("-s,--seed", f->seed, "seed of the random draws (same seed, same text)")
      ->check(glass::cli::kNonNegativeInteger)
      ->capture_default_str();
  cmd->add_option("--num-samples,--num_samples", f->num_samples,
                  "how many samples to draw, one after the other")
      ->check(glass::cli::integer_in(1, 10'000, "an integer from 1 to 10000"))
      ->capture_default_str();
  cmd->add_option("--stop", f->stop, "end a sample as soon as its text ends with this string");
  cmd->add_flag("--json", f->json,
                "print JSON instead of text: each sample's text and its tokens with their "
                "probabilities (prob: as drawn; model_prob: at temperature 1)");
  glass::cli::add_threads_option(
      cmd, f->threads,
      fmt::format("one thread or every core ({} here), whichever is faster, measured while "
                  "generating",
                  glass::available_cores()));
  CLI::Option* window_mode =
      cmd->add_option(
             "--window-mode", f->window_mode,
             "past the window (the training context): rolling = keep the KV cache and drop "
             "its oldest position for each new token (fast; sliding-window attention), "
             "exact = recompute the last window of tokens for each new one (slow; what "
             "the model saw in training)")
          ->transform(CLI::IsMember({"rolling", "exact"}, CLI::ignore_case))
          ->capture_default_str();
  cmd->add_flag("--no-kv-cache", f->no_kv_cache,
                "recompute the whole window for every new token (the exact mode without a cache)")
      ->excludes(window_mode);
  cmd->add_flag("--allow-unknown", f->allow_unknown,
                "map prompt characters outside a character model's vocabulary to the unknown token "
                "instead of failing (a BPE model needs none: it spells them in byte tokens)");
  glass::cli::add_ops_option(cmd, f->attention);
  cmd->add_flag("--best", f->best,
                "use best.safetensors (best validation loss) instead of the latest weights");
  cmd->footer(
      "Examples:\n"
      "  glass sample -m runs/domcasmurro -p 'Capitu ' -n 300\n"
      "  echo 'Bentinho' | glass sample -m runs/domcasmurro -p - --num-samples 3 --stop $'\\n\\n'\n"
      "  glass sample -m runs/domcasmurro -p 'Cap' -n 20 --temp 0 --json\n"
      "Tokens are characters for a character model, subwords for a BPE model (glass train\n"
      "--tokenizer bpe; docs/en/bpe.md). The last line on standard error gives the speed in\n"
      "characters/s or tokens/s.");
  cmd->callback([f, prompt] { run_sample(*f, prompt->count() > 0); });
}

}  // namespace glass::cli
