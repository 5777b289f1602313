// `glass eval`: the mean next-token loss of a checkpoint over a whole text file (a token is a
// character, or a BPE token for a model trained with --tokenizer bpe), also in bits per byte.
//
//   glass eval -m DIR --data FILE [--best] [--allow-unknown] [-t N]

#include <cmath>
#include <filesystem>
#include <iostream>
#include <string>

#include <fmt/format.h>

#include "checkpoint/checkpoint.hpp"
#include "cli/commands.hpp"
#include "cli/threads.hpp"
#include "data/text.hpp"
#include "data/yardstick.hpp"
#include "train/text_eval.hpp"
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

/// The yardsticks of the evaluated text (data/yardstick.hpp) beside the model's bits per byte:
/// given the text the checkpoint trained on when config.json names it and it is found from the
/// current directory (the add-one bigram counted on it, xz reading it first), else xz on the
/// text alone (a bigram needs a text to count on). Nothing when the text cannot be measured.
void print_yardstick(const EvalFlags& f, const glass::Checkpoint& loaded, double model_bpb) {
  const std::string trained_on = glass::training_data(loaded.files_dir());
  std::error_code ec;
  const bool given = !trained_on.empty() && std::filesystem::is_regular_file(trained_on, ec);
  // The training text itself (warned above): xz given it would read it twice, a yardstick of 0.
  if (given && std::filesystem::equivalent(trained_on, f.data, ec)) return;
  try {
    const std::u32string text = glass::load_text(f.data);
    if (!given) {
      const std::string bytes = glass::u32_to_utf8(text.substr(0, glass::kYardstickValChars));
      std::cout << fmt::format(
          "yardstick: xz -9 on this text alone {:.4f} bits per byte; this model {:.4f} (with "
          "the training text {} found, the bigram model and xz given it are shown too)\n",
          glass::xz_bits_per_byte("", bytes), model_bpb,
          trained_on.empty() ? "not recorded in config.json" : "'" + trained_on + "' not");
      return;
    }
    const std::u32string train = glass::load_text(trained_on);
    const glass::Yardstick y = glass::measure_yardstick(train, text);
    std::cout << fmt::format(
        "yardstick given the training text {}: a character bigram model (add-one smoothing) "
        "{:.4f} bits per byte, xz -9 {:.4f}; this model {:.4f}\n",
        trained_on, y.bigram_bits_per_byte, y.xz_bits_per_byte, model_bpb);
  } catch (const std::exception& e) {
    std::cerr << "note: no yardstick for this text: " << e.what() << "\n";
  }
}

void run_eval(const EvalFlags& f) {
  glass::Checkpoint loaded = glass::load_checkpoint(f.checkpoint, f.best);
  glass::cli::apply_threads(f.threads);
  if (!loaded.warning().empty()) std::cerr << "warning: " << loaded.warning() << "\n";
  warn_if_training_text(f, loaded);
  glass::TextEvaluation r;
  try {
    r = glass::evaluate_text(loaded, f.data, f.allow_unknown);
  } catch (const glass::UnknownCharacterError& e) {
    throw CommandError(
        fmt::format("{}: {} (pass --allow-unknown to map such characters to the "
                    "unknown token)",
                    f.data, e.what()));
  }
  if (r.unknown > 0)
    std::cerr << "warning: " << r.unknown
              << " characters outside the vocabulary were mapped to id 0\n";
  const char* unit = loaded.tokenizer().unit(false);
  std::cout << fmt::format(
      "loss {:.4f} nats per {} over {} predictions of {} "
      "(perplexity {:.3f}, {:.3f} bits per {}; context {})\n",
      r.loss, unit, r.predictions, f.data, std::exp(r.loss), r.loss / std::log(2.0), unit,
      r.window);
  // Bits per byte do not depend on the tokenizer, so character and BPE models compare on them;
  // nats per token do not (a BPE token holds several characters).
  std::cout << fmt::format("{:.4f} bits per byte ({} {}s over {} bytes of text)\n", r.bits_per_byte,
                           r.predictions, unit, r.text_bytes);
  print_yardstick(f, loaded, r.bits_per_byte);
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
