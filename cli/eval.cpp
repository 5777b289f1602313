// `glass eval`: the mean next-token loss of a checkpoint over a whole text file (a token is a
// character, or a BPE token for a model trained with --tokenizer bpe), also in bits per byte;
// or, with --chat, the exam of a chat model: exact-match accuracy on held-out conversations
// (sample/chat_exam.hpp).
//
//   glass eval -m DIR --data FILE [--best] [--allow-unknown] [--quantize q8_0|q4_0|f16] [-t N]
//   glass eval -m DIR --chat EXAM.jsonl [-n N] [--json] [--best] [-t N]
//   glass eval -m BASE --chat EXAM.jsonl --base   (the baseline: a base model, grown for the
//                                                  chat tokens as glass finetune grows it)

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint.hpp"
#include "cli/commands.hpp"
#include "cli/quantize_option.hpp"
#include "cli/threads.hpp"
#include "cli/validators.hpp"
#include "data/chat_data.hpp"
#include "data/chat_template.hpp"
#include "data/text.hpp"
#include "data/yardstick.hpp"
#include "export/quantize_model.hpp"
#include "sample/chat.hpp"
#include "sample/chat_exam.hpp"
#include "train/chat_base.hpp"
#include "train/text_eval.hpp"
#include "train/trainer.hpp"

namespace {

using glass::cli::CommandError;

struct EvalFlags {
  std::string checkpoint;
  std::string data;
  std::string chat;  // the exam's JSONL file
  std::size_t max_tokens = 64;
  bool json = false;
  bool base = false;  // --chat on a base model: grown for the chat tokens first
  bool best = false;
  bool allow_unknown = false;
  std::string
      quantize;  // "": the float weights; else q8_0, q4_0 or f16 (export/quantize_model.hpp)
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
      const std::string why =
          trained_on.empty()
              ? "config.json does not name the training text"
              : fmt::format("the training text '{}' is not found from this directory", trained_on);
      std::cout << fmt::format(
          "yardstick: xz -9 on this text alone {:.4f} bits per byte; this model {:.4f} (no "
          "bigram model or xz given the training text: {})\n",
          glass::xz_bits_per_byte("", bytes), model_bpb, why);
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

/// evaluate_text with the command's words for a character outside the vocabulary.
glass::TextEvaluation evaluate(glass::Checkpoint& loaded, const EvalFlags& f) {
  try {
    return glass::evaluate_text(loaded, f.data, f.allow_unknown);
  } catch (const glass::UnknownCharacterError& e) {
    throw CommandError(
        fmt::format("{}: {} (pass --allow-unknown to map such characters to the "
                    "unknown token)",
                    f.data, e.what()));
  }
}

/// --quantize: the float model's loss, then the weights quantized and read back in memory
/// (quantize_weights, the exporter's rules) and their loss beside it, with the difference.
/// Returns the quantized model's evaluation.
glass::TextEvaluation evaluate_quantized(glass::Checkpoint& loaded, const EvalFlags& f) {
  const glass::TextEvaluation before = evaluate(loaded, f);
  const glass::WeightType type = *glass::parse_weight_type(f.quantize);  // checked by the flag
  const glass::WeightCount count = glass::quantize_weights(loaded.model(), type);
  const glass::TextEvaluation after = evaluate(loaded, f);
  const char* unit = loaded.tokenizer().unit(false);
  std::cout << fmt::format("float32 weights: loss {:.4f} nats per {}, {:.4f} bits per byte\n",
                           before.loss, unit, before.bits_per_byte);
  std::cout << fmt::format(
      "{} weights ({:.2f} bits per weight: {}): loss {:.4f} nats per {}, {:.4f} bits per byte\n",
      f.quantize, count.bits_per_weight(), count.shares(), after.loss, unit, after.bits_per_byte);
  std::cout << fmt::format(
      "cost of {}: {:+.5f} nats per {} ({:+.3f}%), {:+.5f} bits per byte (activations kept in "
      "float32; the results below are the {} model's)\n",
      f.quantize, after.loss - before.loss, unit, 100 * (after.loss - before.loss) / before.loss,
      after.bits_per_byte - before.bits_per_byte, f.quantize);
  return after;
}

void run_eval(const EvalFlags& f) {
  glass::Checkpoint loaded = glass::load_checkpoint(f.checkpoint, f.best);
  glass::cli::apply_threads(f.threads);
  if (!loaded.warning().empty()) std::cerr << "warning: " << loaded.warning() << "\n";
  warn_if_training_text(f, loaded);
  const glass::TextEvaluation r =
      f.quantize.empty() ? evaluate(loaded, f) : evaluate_quantized(loaded, f);
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

/// How many wrong answers the text report shows (--json lists them all).
constexpr std::size_t kMissesShown = 5;

/// A score as the report prints it: "  add        12/20 correct (60.0 %), 19/20 ended".
std::string score_line(const std::string& name, const glass::ChatExamScore& s) {
  return fmt::format("  {:<10} {}/{} correct ({:.1f} %), {}/{} ended with <|im_end|> ({:.1f} %)\n",
                     name, s.correct, s.answers, 100 * s.accuracy(), s.ended, s.answers,
                     100 * s.ended_share());
}

/// The exam's result as text: each family, the overall score, a few wrong answers.
void print_exam(const glass::ChatExamResult& r, const EvalFlags& f) {
  std::cout << fmt::format("exam {} on {} ({} conversations, greedy, at most {} tokens each)\n",
                           f.chat, f.checkpoint, r.overall.answers, f.max_tokens);
  for (const glass::ChatExamScore& s : r.families)
    std::cout << score_line(s.family.empty() ? "(no family)" : s.family, s);
  std::cout << score_line("overall", r.overall);
  const std::size_t shown = std::min(kMissesShown, r.misses.size());
  if (shown > 0) std::cout << fmt::format("{} of the {} wrong answers:\n", shown, r.misses.size());
  for (std::size_t i = 0; i < shown; ++i) {
    const glass::ChatExamMiss& m = r.misses[i];
    std::cout << fmt::format("  line {} ({}): {}\n    expected: {}\n    got:      {}{}\n", m.line,
                             m.family, nlohmann::json(m.prompt).dump(),
                             nlohmann::json(m.expected).dump(), nlohmann::json(m.got).dump(),
                             m.ended ? "" : " (no <|im_end|>)");
  }
}

/// Characters as the fine-tune's banner names them: "'+' (U+002B) '7' (U+0037)".
std::string described(const std::vector<char32_t>& chars) {
  std::string text;
  for (char32_t c : chars) text += (text.empty() ? "" : " ") + glass::describe_char(c);
  return text;
}

/// A base model as glass finetune starts from it (train/chat_base.hpp): its vocabulary grown for
/// the chat tokens and the exam's characters it lacks, the new embedding and output rows drawn
/// with the fine-tune's default seed and never trained, every other row the base's. Its window
/// is the model's context length (the base's training windows may be shorter than a prompt).
glass::Checkpoint grown_for_chat(const glass::Checkpoint& base, const std::string& name,
                                 const std::vector<glass::Conversation>& exam) {
  const glass::TextTokenizer& from = base.tokenizer();
  std::vector<char32_t> added;
  glass::TextTokenizer to = glass::chat_tokenizer(from, exam, &added);
  const std::uint64_t seed = glass::TrainOptions{}.seed;
  auto model = glass::grow_vocabulary(base.model(), from, to, seed);
  std::cerr << fmt::format(
      "baseline: {} has no chat tokens; its vocabulary is grown from {} to {} ids for "
      "<|im_start|>, <|im_end|>{} as glass finetune grows it (new rows untrained, seed {}): the "
      "base model's score, prompted with the template\n",
      name, from.vocab_size(), to.vocab_size(),
      added.empty() ? "" : " and the characters " + described(added), seed);
  const glass::ModelConfig config = model->config();
  return glass::Checkpoint(config, std::move(to), std::move(model));
}

/// glass eval --chat: the exam on the save, printed as text or JSON.
void run_chat_exam(const EvalFlags& f) {
  const std::vector<glass::Conversation> exam = glass::read_chat_jsonl(f.chat);
  glass::Checkpoint loaded = glass::load_checkpoint(f.checkpoint, f.best);
  glass::cli::apply_threads(f.threads);
  if (!loaded.warning().empty()) std::cerr << "warning: " << loaded.warning() << "\n";
  if (f.base && !loaded.tokenizer().has_chat_tokens())
    loaded = grown_for_chat(loaded, f.checkpoint, exam);
  if (!f.quantize.empty())
    glass::quantize_weights(loaded.model(), *glass::parse_weight_type(f.quantize));
  glass::ChatExamResult r;
  try {
    r = glass::run_chat_exam(loaded, exam, {f.max_tokens});
  } catch (const glass::NoChatTokensError& e) {
    throw CommandError(fmt::format(
        "{} {}; fine-tune it on conversations first (glass finetune), or pass --base for the "
        "base model's baseline (its vocabulary grown for the chat tokens, as glass finetune "
        "starts)",
        f.checkpoint, e.what()));
  } catch (const glass::ChatTooLongError& e) {
    throw CommandError(fmt::format("{}: {}", f.chat, e.what()));
  } catch (const glass::UnknownCharacterError& e) {
    throw CommandError(fmt::format("{}: {}", f.chat, e.what()));
  }
  if (!f.json) return print_exam(r, f);
  nlohmann::json j = glass::chat_exam_json(r);
  j["checkpoint"] = f.checkpoint;
  j["exam"] = f.chat;
  j["max_tokens"] = f.max_tokens;
  std::cout << j.dump(2) << "\n";
}

}  // namespace

namespace glass::cli {

void add_eval_command(CLI::App& app) {
  auto f = std::make_shared<EvalFlags>();
  CLI::App* cmd = app.add_subcommand(
      "eval", "Mean next-token loss of a checkpoint over a text file, also in bits per byte.");
  cmd->add_option("-m,--checkpoint", f->checkpoint, "checkpoint directory written by glass train")
      ->required();
  CLI::Option* data = cmd->add_option("--data", f->data,
                                      "UTF-8 text file to evaluate on (text the model never saw)")
                          ->required()
                          ->check(CLI::ExistingFile);
  CLI::Option* chat =
      cmd->add_option("--chat", f->chat,
                      "a chat exam instead: a JSONL file of conversations, each graded by exact "
                      "match of the model's greedy answer to its last (assistant) message")
          ->check(CLI::ExistingFile)
          ->each([data](const std::string&) { data->required(false); })  // the exam needs none
          ->excludes(data);
  cmd->add_option("-n,--max-tokens", f->max_tokens,
                  "--chat: the most tokens of one answer (it ends earlier at <|im_end|>)")
      ->check(glass::cli::integer_in(1, 100'000, "an integer from 1 to 100000"))
      ->capture_default_str();
  cmd->add_flag("--json", f->json, "--chat: print the result as JSON, every wrong answer listed");
  cmd->add_flag("--base", f->base,
                "--chat on a base model without the chat tokens: its vocabulary grown for them "
                "as glass finetune grows it (new rows untrained), the baseline of a fine-tune");
  cmd->add_flag("--best", f->best, "use best.safetensors instead of the latest weights");
  cmd->add_flag("--allow-unknown", f->allow_unknown,
                "map characters outside the vocabulary to id 0");
  glass::cli::add_quantize_option(cmd, f->quantize);
  glass::cli::add_threads_option(cmd, f->threads);
  cmd->footer(
      "Examples:\n"
      "  glass eval -m runs/tinyshakespeare --data heldout.txt\n"
      "  glass eval -m runs/tinyshakespeare --data heldout.txt --quantize q4_0\n"
      "  glass eval -m runs/tinyshakespeare --data heldout.txt --best -t 2\n"
      "  glass eval -m runs/chat --chat data/chat/exam.jsonl --json\n"
      "  glass eval -m runs/domcasmurro --chat data/chat/exam.jsonl --base   (the baseline)\n"
      "Evaluate on text the model did not train on; its own training text gives a loss that is\n"
      "too good (glass eval warns).");
  cmd->callback([f, chat] { chat->count() > 0 ? run_chat_exam(*f) : run_eval(*f); });
}

}  // namespace glass::cli
