// `glass eval`: the mean next-token loss of a checkpoint over a whole text file (a token is a
// character, or a BPE token for a model trained with --tokenizer bpe), also in bits per byte.
//
//   glass eval -m DIR --data FILE [--best] [--allow-unknown] [-t N]

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <string>

#include <fmt/format.h>

#include "autograd/ops.hpp"
#include "autograd/tape.hpp"
#include "data/text.hpp"
#include "checkpoint/checkpoint.hpp"
#include "cli/commands.hpp"
#include "cli/threads.hpp"
#include "train/text_loss.hpp"
#include "train/trainer.hpp"

namespace {

using glass::cli::CommandError;

struct EvalFlags {
  std::string checkpoint;
  std::string data;
  bool best = false;
  bool allow_unknown = false;
  int threads = 0;
};

/// A warning when the evaluated file is the text the checkpoint was trained on (config.json
/// records its file name as training.data): 90% of it is the training split the model has
/// learnt, so its loss is lower than the loss on text the model never saw.
void warn_if_training_text(const EvalFlags& f, const glass::Checkpoint& loaded) {
  const std::string trained_on = glass::training_data(loaded.files_dir());  // "": not recorded
  if (trained_on.empty() || std::filesystem::path(f.data).filename().string() != trained_on) return;
  std::cerr << "warning: " << f.data << " looks like the text this checkpoint was trained on "
            << "(config.json: training.data = " << trained_on << "). 90% of it is the training "
            << "split, which the model has learnt, so this loss is lower than on new text; the "
            << "val loss glass train printed is the honest number. Evaluate on held-out text for "
            << "a true measure\n";
}

void run_eval(const EvalFlags& f) {
  glass::Checkpoint loaded = glass::load_checkpoint(f.checkpoint, f.best);
  glass::cli::apply_threads(f.threads);
  if (!loaded.warning().empty()) std::cerr << "warning: " << loaded.warning() << "\n";
  warn_if_training_text(f, loaded);
  std::u32string text = glass::load_text(f.data);
  const std::size_t text_bytes = glass::u32_to_utf8(text).size();
  const glass::TextTokenizer& tokenizer = loaded.tokenizer();
  // As in training: the text's tokens (BPE: the dummy prefix at its start, no BOS; characters
  // outside its vocabulary are byte tokens). When a character model's vocabulary is full (the
  // text had more distinct characters than vocab_cap), the rarest characters are the unknown
  // token by design, not an error.
  const bool vocab_full = tokenizer.vocab_size() >= loaded.config().vocab_cap;
  const auto policy = f.allow_unknown || vocab_full ? glass::UnknownPolicy::kMapToUnknownId
                                                    : glass::UnknownPolicy::kRefuse;
  std::size_t unknown = 0;
  glass::TokenIds ids;  // 1 or 2 bytes per token
  try {
    ids = tokenizer.encode_compact(text, policy, &unknown);
  } catch (const glass::UnknownCharacterError& e) {
    throw CommandError(
        fmt::format("{}: {} (pass --allow-unknown to map such characters to the "
                    "unknown token)",
                    f.data, e.what()));
  }
  text = std::u32string();  // only the ids are needed from here on
  if (unknown > 0)
    std::cerr << "warning: " << unknown
              << " characters outside the vocabulary were mapped to id 0\n";
  const char* unit = tokenizer.unit(false);
  if (ids.size() < 2)
    throw CommandError(
        fmt::format("{} must hold at least 2 {} to predict one", f.data, tokenizer.unit()));
  const std::size_t T = loaded.window();

  // Non-overlapping windows: inputs ids[i : i+T], targets ids[i+1 : i+T+1], i = 0, T, 2T, ...
  // so every token after the first is predicted exactly once, from at most T before it
  // (train/text_loss.hpp; glass train measures its validation split the same way).
  constexpr std::size_t kBatch = 32;
  glass::NoGradGuard no_grad;
  const glass::TextLoss measured = glass::text_loss(
      ids, 0, ids.size(), T, kBatch,
      [&](const glass::Ids& x, const glass::Ids& y, std::size_t first) {
        const double mean = glass::cross_entropy(loaded.model().forward(x), y).item();
        if (!std::isfinite(mean))  // a NaN average would print as a plausible-looking "loss -nan"
          throw CommandError(fmt::format(
              "the loss over {} {} to {} of {} is {}: the model's logits are not finite, so "
              "its weights are corrupt or diverged",
              tokenizer.unit(), first + 1, first + (x.shape(0) - 1) * T + x.shape(1), f.data,
              std::isnan(mean) ? "NaN" : "infinite"));
        return mean;
      });
  const std::size_t count = measured.count;
  const double loss = measured.mean();
  std::cout << fmt::format(
      "loss {:.4f} nats per {} over {} predictions of {} "
      "(perplexity {:.3f}, {:.3f} bits per {}; context {})\n",
      loss, unit, count, f.data, std::exp(loss), loss / std::log(2.0), unit, T);
  // Bits per byte: the total loss over the text's UTF-8 bytes (the first token, which nothing
  // predicts, is counted in the bytes too). It does not depend on the tokenizer, so character
  // and BPE models compare on it; nats per token do not (a BPE token holds several characters).
  std::cout << fmt::format("{:.4f} bits per byte ({} {}s over {} bytes of text)\n",
                           glass::bits_per_byte(loss, count, text_bytes), count, unit, text_bytes);
}

}  // namespace

namespace glass::cli {

void add_eval_command(CLI::App& app) {
  auto f = std::make_shared<EvalFlags>();
  CLI::App* cmd = app.add_subcommand(
      "eval", "Mean next-token loss of a checkpoint over a text file, also in bits per byte.");
  cmd->add_option("-m,--checkpoint", f->checkpoint, "checkpoint directory written by glass train")
      ->required();
  cmd->add_option("--data", f->data, "UTF-8 text file to evaluate on (text the model never saw)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_flag("--best", f->best, "use best.safetensors instead of the latest weights");
  cmd->add_flag("--allow-unknown", f->allow_unknown,
                "map characters outside the vocabulary to id 0");
  glass::cli::add_threads_option(cmd, f->threads);
  cmd->footer(
      "Examples:\n"
      "  glass eval -m runs/tinyshakespeare --data heldout.txt\n"
      "  glass eval -m runs/tinyshakespeare --data heldout.txt --best -t 2\n"
      "Evaluate on text the model did not train on; its own training text gives a loss that is\n"
      "too good (glass eval warns).");
  cmd->callback([f] { run_eval(*f); });
}

}  // namespace glass::cli
