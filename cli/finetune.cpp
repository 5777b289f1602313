// `glass finetune`: a base checkpoint fine-tuned on conversations (a JSONL file of "messages",
// data/chat_data.hpp) with the loss on the assistant's tokens only: the chat template
// (data/chat_template.hpp) renders each conversation, its prompt tokens feed attention as context
// and only the answers and their <|im_end|> are predicted. The run is the Trainer's
// (train/trainer.hpp, TrainOptions::chat): its saves, resume, --serve and records are a text
// run's; the flags of the schedule, the evaluations and the run are those of glass train
// (cli/train_flags.hpp).
//
//   glass finetune --from BASE --chat TRAIN.jsonl [--val VAL.jsonl] --out DIR [--iters N]
//                  [--lr X] [--batch-size B] [--context T] [--threads N] [--resume | --overwrite]
//                  [--loss-on answers|all]

#include <filesystem>
#include <memory>
#include <string>

#include "cli/commands.hpp"
#include "cli/train_flags.hpp"

namespace glass::cli {

namespace {

namespace fs = std::filesystem;

/// The options of this command line: a chat fine-tune of --from on --chat, and which flags of
/// the recipe were given (--resume keeps the recorded values of the others and the base).
void fill_finetune_options(TrainFlags& flags, CLI::App* cmd) {
  glass::TrainOptions& o = flags.options;
  o.chat.enabled = true;
  o.chat.loss_on_given = cmd->count("--loss-on") > 0;
  if (o.chat.loss_on_given)
    o.chat.loss_on_all = cmd->get_option("--loss-on")->as<std::string>() == "all";
  if (o.chat.base_dir.empty() && !o.resume)
    throw CommandError(
        "--from BASE is needed: the checkpoint (a glass train run directory) to "
        "fine-tune");
  if (!o.chat.base_dir.empty() && !fs::is_directory(o.chat.base_dir))
    throw CommandError("--from " + o.chat.base_dir +
                       ": no such directory (give the run directory of a glass train run)");
  if (o.out_dir.empty())
    o.out_dir = (fs::path("runs") / (fs::path(o.data_path).stem().string() + "-chat")).string();
  mark_recipe_given(o, cmd);
}

}  // namespace

void add_finetune_command(CLI::App& app) {
  auto flags = std::make_shared<TrainFlags>();
  glass::TrainOptions& o = flags->options;
  // A fine-tune's defaults (shown by --help): fewer, shorter steps than a pretraining, evaluated
  // more often; a sample is one answer.
  o.iters = 600;
  o.warmup = 30;
  o.eval_every = 100;
  o.sample_tokens = 40;
  CLI::App* cmd = app.add_subcommand(
      "finetune",
      "Fine-tune a trained model on conversations (JSONL, one {\"messages\": [{\"role\", "
      "\"content\"}, ...]} per line), with the loss on the assistant's answers only.\n"
      "The model learns the chat template (ChatML: <|im_start|>, <|im_end|>); a base without these "
      "tokens (or without a character of the conversations) grows its vocabulary for them.");
  cmd->add_option("--from", o.chat.base_dir, "the base checkpoint (a glass train run directory)");
  cmd->add_option("--chat", o.data_path, "training conversations (JSONL)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--val", o.chat.val_path,
                  "validation conversations (JSONL; default: the last tenth of --chat)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--out", o.out_dir, "run directory (default: runs/<chat file name>-chat)");
  cmd->add_option("--loss-on",
                  "which tokens the training loss counts: answers (the assistant's tokens and "
                  "their <|im_end|>, the loss mask) or all (every token, as pretraining does; "
                  "the validation loss stays on the answers)")
      ->type_name("TEXT")
      ->check(CLI::IsMember({"answers", "all"}))
      ->default_str("answers");
  add_schedule_flags(cmd, o);
  add_evaluation_flags(cmd, o);
  add_run_flags(cmd, *flags);
  cmd->footer(
      "Each conversation is one row of a batch, padded to the batch's longest (a batch draws its "
      "rows from one length bucket;\nthe window, --context, defaults to the longest conversation), "
      "and the loss counts only the answers' tokens and their <|im_end|> (--loss-on all: every "
      "token).\n"
      "Example:\n"
      "  glass train --out runs/base --iters 2000\n"
      "  glass finetune --from runs/base --chat data/chat/train.jsonl --val data/chat/val.jsonl "
      "--out runs/chat");
  cmd->callback([flags, cmd] { run_train_on_all_ranks(*flags, cmd, fill_finetune_options); });
}

}  // namespace glass::cli
