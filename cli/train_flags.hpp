#pragma once
// The flags of `glass train` (cli/train.cpp), in the groups of its --help: the text and the run
// directory, the optimizer's schedule, the evaluations, the run itself, the model.

#include <CLI/CLI.hpp>

#include "train/options.hpp"

namespace glass::cli {

/// What `glass train` reads from its flags: the Trainer's options and the command's own
/// (threads, --serve and its port).
struct TrainFlags {
  glass::TrainOptions options;
  int threads = 0;
  bool serve = false;  // --serve: glass serve on the run directory while training
  int port = 8080;
};

/// The text and the run directory: --data (an existing file), --out.
void add_data_flags(CLI::App* cmd, glass::TrainOptions& o);

/// The optimizer's schedule: --iters or --time, --batch-size, --context, the learning rate and
/// its cosine (--lr, --min-lr, --warmup, --decay-iters), AdamW's --weight-decay, --grad-clip,
/// --optimizer and --muon-lr. Step counts are integers from 1 to a billion.
void add_schedule_flags(CLI::App* cmd, glass::TrainOptions& o);

/// The evaluations: --eval-every, --eval-iters (at most glass::kMaxEvalIters), --sample-tokens
/// (at most glass::kMaxSampleTokens).
void add_evaluation_flags(CLI::App* cmd, glass::TrainOptions& o);

/// The run itself: --seed, -t/--threads, --resume / --overwrite, --overfit-batch,
/// --no-interp-record, --serve and its --port.
void add_run_flags(CLI::App* cmd, TrainFlags& flags);

/// Records which flags of the recipe were given (TrainOptions::recipe_given, --ops, and
/// iters_from_save: --iters left out); a flag left out takes the recorded value on --resume
/// (train/resume.hpp). Throws CommandError for --time with --iters.
void mark_recipe_given(glass::TrainOptions& o, const CLI::App* cmd);

/// Fills the options of a command line (its defaults, which flags were given) before its run.
using FillOptions = void (*)(TrainFlags& flags, CLI::App* cmd);

/// Runs the Trainer of a training command (glass train, glass finetune) after `fill`, in every
/// process of `mpirun -np N` (train/distributed.hpp) or in this one: the stop signals, --serve,
/// the report. An error in one process ends them all: rank 0 reports it and aborts the job
/// (MPI_Abort); another rank gives rank 0 a second to do that first, then reports its own and
/// aborts. Defined in cli/train.cpp.
void run_train_on_all_ranks(TrainFlags& flags, CLI::App* cmd, FillOptions fill);

/// The model's sizes (--d-model, --n-layers, --n-heads, --n-kv-heads, --ffn-hidden), its
/// vocabulary and tokenizer (--vocab-cap, --tokenizer, --vocab-size) and --ops; group "Model".
void add_model_flags(CLI::App* cmd, glass::TrainOptions& o);

/// The recipe options of the model, off by default (--qk-norm, --mlp swiglu|relu2,
/// --logit-softcap C); group "Recipe options (the exporters refuse them)".
void add_recipe_option_flags(CLI::App* cmd, glass::TrainOptions& o);

}  // namespace glass::cli
