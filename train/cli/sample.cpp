// `glass sample`: generate text from a checkpoint (train/sample/sampler.hpp).
//
//   glass sample --checkpoint DIR [--prompt TEXT] [--tokens N] [--temperature X] [--top-k K]
//                [--top-p P] [--seed S] [--window-mode rolling|exact] [--no-kv-cache]
//                [--allow-unknown] [--best] [--attention fast|reference]

#include <cerrno>
#include <cstring>
#include <iostream>
#include <set>
#include <string>

#include <fmt/format.h>

#include "data/text.hpp"
#include "train/io/checkpoint.hpp"
#include "train/cli/commands.hpp"
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
};

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

void run_sample(SampleFlags& f) {
  glass::validate(f.sampling);  // std::invalid_argument -> "error: ..."
  glass::LoadedModel loaded = glass::load_checkpoint(f.checkpoint, f.best);
  loaded.model->set_attention(f.attention);
  const glass::Tokenizer& tokenizer = loaded.tokenizer;
  std::size_t window = glass::training_context(f.checkpoint);  // 0: not recorded
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

  std::cout << shown_prompt << std::flush;
  std::mt19937_64 rng(f.seed);
  glass::generate(*loaded.model, prompt, f.tokens, window, f.sampling, rng, [&](std::int32_t id) {
    errno = 0;
    std::cout << tokenizer.decode_utf8({id}) << std::flush;
    if (!std::cout) {  // a full disk or a closed pipe: stop instead of generating into nothing
      const int err = errno;
      throw CommandError(std::string("cannot write to standard output") +
                         (err != 0 ? std::string(": ") + std::strerror(err) : std::string()));
    }
  });
  std::cout << "\n";
}

/// Characters one `glass sample` generates, at most (a million take minutes; more is a typo).
constexpr long long kMaxTokens = 1'000'000;

void add_sample_command(CLI::App& app) {
  auto f = std::make_shared<SampleFlags>();
  CLI::App* cmd = app.add_subcommand("sample", "Generate text from a trained checkpoint.");
  cmd->add_option("--checkpoint", f->checkpoint, "checkpoint directory written by glass train")->required();
  cmd->add_option("--prompt", f->prompt, "text to continue (default: start of a paragraph)");
  cmd->add_option("--tokens", f->tokens, "characters to generate")
      ->check(glass::cli::integer_in(1, kMaxTokens, fmt::format("an integer from 1 to {}", kMaxTokens)))
      ->capture_default_str();
  cmd->add_option("--temperature", f->sampling.temperature,
                  "divide the logits by this; 0 = greedy (always the most likely character)")
      ->check(glass::cli::number_in(0.0, HUGE_VAL, false, "a number >= 0 (0 = greedy)"))->capture_default_str();
  cmd->add_option("--top-k", f->sampling.top_k, "keep only the K most likely characters (0 = off)")
      ->check(glass::cli::kNonNegativeInteger)->capture_default_str();
  cmd->add_option("--top-p", f->sampling.top_p,
                  "keep the most likely characters whose probabilities add up to P (1 = off)")
      ->check(glass::cli::number_in(0.0, 1.0, true, "a number in (0, 1]"))->capture_default_str();
  cmd->add_option("--seed", f->seed, "seed of the random draws (same seed, same text)")
      ->check(glass::cli::kNonNegativeInteger)->capture_default_str();
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
  cmd->callback([f] { run_sample(*f); });
}

glass::cli::CommandRegistration registration(20, &add_sample_command);

}  // namespace
