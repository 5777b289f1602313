// `glass sample`: generate text from a checkpoint (sample/sampler.hpp). The flags follow
// nanoGPT's sample.py, llama.cpp's llama-cli and llama2.c's run where they have one:
//
//   glass sample -m DIR [-p TEXT | -p - | -f/--prompt-file FILE] [-n N] [--temp X] [--top-k K]
//                [--top-p P] [--min-p P] [--repeat-penalty X] [--repeat-last-n N] [-c N] [-s S]
//                [-t N] [--num-samples K] [--stop STRING] [--json] [--raw]
//                [--window-mode rolling|exact]
//                [--no-kv-cache] [--allow-unknown] [--best] [--ops fast|reference]
//                [--sae FILE --steer LATENT=SCALE ...]
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
#include "cli/quantize_option.hpp"
#include "export/quantize_model.hpp"
#include "autograd/threads.hpp"
#include "cli/threads.hpp"
#include "sample/thread_choice.hpp"
#include "cli/sample_flags.hpp"
#include "cli/sample_steering.hpp"
#include "cli/validators.hpp"
#include "sample/run.hpp"
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
  bool raw = false;
  std::string quantize;  // "": the float weights; else q8_0, q4_0 or f16
  glass::cli::SteerFlags steer;
  int threads = 0;
};

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

/// The job of these flags (sample/run.hpp), the prompt read (read_prompt).
glass::SampleOptions sample_options(SampleFlags& f, bool prompt_given) {
  glass::SampleOptions o;
  o.prompt = read_prompt(f, prompt_given);
  o.checkpoint = f.checkpoint;
  o.best = f.best;
  o.ops = glass::parse_ops_path(f.attention);
  o.allow_unknown = f.allow_unknown;
  o.tokens = f.tokens;
  o.window = f.ctx_size;
  o.sampling = f.sampling;
  o.sampling.use_kv_cache = !f.no_kv_cache;
  o.sampling.window_mode = glass::parse_window_mode(f.window_mode);
  o.seed = f.seed;
  o.num_samples = f.num_samples;
  o.stop = f.stop;
  o.json = f.json;
  o.raw = f.raw;
  o.choose_threads = f.threads == 0;  // -t not given: measured while generating
  return o;
}

/// The save loaded and the prompt encoded, with the library's facts in the command's words:
/// -c/--ctx-size past the model's positions, characters outside the vocabulary (with the flag
/// that maps them); the notes on the window and the prompt.
glass::PreparedSample prepare(glass::SampleOptions& o) {
  glass::PreparedSample p = [&] {
    try {
      return glass::prepare_sample(o);
    } catch (const glass::WindowTooLongError& e) {
      throw CommandError(fmt::format(
          "--ctx-size {}: the model has positions for at most {} {} (context_length; it trained "
          "on windows of {})",
          e.asked(), e.positions(), e.unit(), e.trained()));
    } catch (const glass::UnknownCharacterError& e) {
      throw CommandError(std::string(e.what()) +
                         ". Remove them, or pass --allow-unknown to map them to the unknown token "
                         "(id 0).");
    }
  }();
  const char* unit = p.loaded.unit();
  if (!p.loaded.warning().empty()) std::cerr << "warning: " << p.loaded.warning() << "\n";
  if (p.past_trained_window)
    std::cerr << fmt::format(
        "note: --ctx-size {} is past the {} {} the model trained on: positions from {} on were "
        "never trained\n",
        o.window, p.loaded.window(), unit, p.loaded.window());
  if (p.unknown > 0)
    std::cerr << fmt::format(
        "warning: mapping {} prompt character(s) outside the vocabulary to the unknown token "
        "(id 0): {}\n",
        p.unknown, p.unknown_which);
  if (p.prompt_tokens > p.window)
    std::cerr << fmt::format("note: the prompt has {} {}; the model sees only its last {}: {}\n",
                             p.prompt_tokens, unit, p.window,
                             glass::context_sentence(p.window, unit));
  return p;
}

void run_sample(SampleFlags& f, bool prompt_given) {
  const std::vector<glass::Steer> steers = glass::cli::parse_steers(f.steer);
  glass::SampleOptions o = sample_options(f, prompt_given);
  glass::cli::apply_threads(f.threads);
  glass::PreparedSample p = prepare(o);
  const auto steering = glass::cli::make_steering(f.steer, steers, p.loaded);
  if (steering) {
    o.tracer = &steering->tracer;
    std::cerr << steering->note << "\n";
  }
  if (!f.quantize.empty()) {
    const glass::WeightCount count =
        glass::quantize_weights(p.loaded.model(), *glass::parse_weight_type(f.quantize));
    std::cerr << fmt::format(
        "note: the weights quantized to {} and read back ({:.2f} bits per weight: {})\n",
        f.quantize, count.bits_per_weight(), count.shares());
  }
  const glass::SampleRun run = glass::generate_samples(p, o, std::cout);
  const char* unit = p.loaded.unit();
  const std::string thread_words =
      !run.chose_threads
          ? fmt::format("{} thread{}", run.threads, run.threads == 1 ? "" : "s")
          : fmt::format(
                "threads chosen by measuring: {} {} on 1 thread, {} on {}; -t sets the count",
                run.tokens_on_one, unit, run.tokens_on_cores, run.cores);
  std::cerr << fmt::format("{} {} in {:.2f} s ({:.1f} {}/s, {}{})\n", run.generated, unit,
                           run.seconds,
                           run.seconds > 0 ? static_cast<double>(run.generated) / run.seconds : 0.0,
                           unit, thread_words, f.json ? ", with the probabilities of --json" : "");
}

/// Characters one `glass sample` generates, at most (a million take minutes; more is a typo).
constexpr long long kMaxTokens = 1'000'000;

/// The prompt: -p/--prompt, -f/--prompt-file, nanoGPT's --start. Returns --prompt (its count
/// tells "-p ''" from no prompt).
CLI::Option* add_prompt_flags(CLI::App* cmd, SampleFlags& f) {
  CLI::Option* prompt = cmd->add_option(
      "-p,--prompt", f.prompt,
      "text to continue (default: start of a paragraph); - reads it from standard input (up to "
      "1 MiB, one trailing newline dropped)");
  cmd->add_option(
         "-f,--prompt-file,--file", f.prompt_file,
         "read the text to continue from this file (up to 1 MiB, one trailing newline dropped)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--start", f.start,
                  "nanoGPT's spelling: the prompt TEXT, or FILE:path to read it from a file");
  return prompt;
}

/// What is drawn: tokens per sample and the sampler's settings (temperature, top-k, top-p,
/// min-p, the repetition penalty).
void add_sampling_flags(CLI::App* cmd, SampleFlags& f) {
  cmd->add_option(
         "-n,--tokens,--n-predict,--max_new_tokens", f.tokens,
         "tokens to generate per sample (a character model's characters, a BPE model's subword "
         "tokens)")
      ->check(
          glass::cli::integer_in(1, kMaxTokens, fmt::format("an integer from 1 to {}", kMaxTokens)))
      ->capture_default_str();
  glass::cli::add_sampler_flags(cmd, f.sampling);
}

/// The run: the window, the seed, how many samples, --stop, --json, the threads.
void add_run_flags(CLI::App* cmd, SampleFlags& f) {
  cmd->add_option("-c,--ctx-size", f.ctx_size,
                  "the window each prediction sees, in tokens (default: the training context; "
                  "at most the model's context_length)")
      ->check(glass::cli::kPositiveInteger);
  cmd->add_option("-s,--seed", f.seed, "seed of the random draws (same seed, same text)")
      ->check(glass::cli::kNonNegativeInteger)
      ->capture_default_str();
  cmd->add_option("--num-samples,--num_samples", f.num_samples,
                  "how many samples to draw, one after the other")
      ->check(glass::cli::integer_in(1, 10'000, "an integer from 1 to 10000"))
      ->capture_default_str();
  cmd->add_option("--stop", f.stop, "end a sample as soon as its text ends with this string");
  cmd->add_flag("--json", f.json,
                "print JSON instead of text: each sample's text and its tokens with their "
                "probabilities (prob: as drawn; model_prob: at temperature 1)");
  cmd->add_flag("--raw", f.raw,
                "write the text's bytes as they are: control characters (ESC, NUL, ...) reach the "
                "terminal and act on it (default: shown as visible escapes such as ␛ and ␀)");
  glass::cli::add_threads_option(
      cmd, f.threads,
      fmt::format("one thread or every core ({} here), whichever is faster, measured while "
                  "generating",
                  glass::available_cores()));
}

/// How the model reads: the window mode and the KV cache, unknown characters, the ops, the
/// weights (--quantize, --best).
void add_model_flags(CLI::App* cmd, SampleFlags& f) {
  CLI::Option* window_mode =
      cmd->add_option(
             "--window-mode", f.window_mode,
             "past the window (the training context): rolling = keep the KV cache and drop "
             "its oldest position for each new token (fast; sliding-window attention), "
             "exact = recompute the last window of tokens for each new one (slow; what "
             "the model saw in training)")
          ->transform(CLI::IsMember({"rolling", "exact"}, CLI::ignore_case))
          ->capture_default_str();
  cmd->add_flag("--no-kv-cache", f.no_kv_cache,
                "recompute the whole window for every new token (the exact mode without a cache)")
      ->excludes(window_mode);
  cmd->add_flag("--allow-unknown", f.allow_unknown,
                "map prompt characters outside a character model's vocabulary to the unknown token "
                "instead of failing (a BPE model needs none: it spells them in byte tokens)");
  glass::cli::add_ops_option(cmd, f.attention);
  glass::cli::add_quantize_option(cmd, f.quantize);
  cmd->add_flag("--best", f.best,
                "use best.safetensors (best validation loss) instead of the latest weights");
  glass::cli::add_steer_flags(cmd, f.steer);
}

}  // namespace

namespace glass::cli {

void add_sample_command(CLI::App& app) {
  auto f = std::make_shared<SampleFlags>();
  CLI::App* cmd = app.add_subcommand("sample", "Generate text from a trained checkpoint.");
  cmd->add_option("-m,--checkpoint,--model", f->checkpoint,
                  "checkpoint directory written by glass train")
      ->required();
  CLI::Option* prompt = add_prompt_flags(cmd, *f);
  add_sampling_flags(cmd, *f);
  add_run_flags(cmd, *f);
  add_model_flags(cmd, *f);
  cmd->footer(
      "Examples:\n"
      "  glass sample -m runs/domcasmurro -p 'Capitu ' -n 300\n"
      "  echo 'Bentinho' | glass sample -m runs/domcasmurro -p - --num-samples 3 --stop $'\\n\\n'\n"
      "  glass sample -m runs/domcasmurro -p 'Cap' -n 20 --temp 0 --json\n"
      "  glass sample -m runs/domcasmurro --sae runs/domcasmurro/sae-layers.1.out.safetensors "
      "--steer 7=4\n"
      "Tokens are characters for a character model, subwords for a BPE model (glass train\n"
      "--tokenizer bpe; docs/en/bpe.md). The last line on standard error gives the speed in\n"
      "characters/s or tokens/s.");
  cmd->callback([f, prompt] { run_sample(*f, prompt->count() > 0); });
}

}  // namespace glass::cli
