// The flags of `glass train`, group by group (cli/train_flags.hpp): each adds its options to the
// command and stores them in TrainOptions (train/options.hpp) or TrainFlags.

#include "cli/train_flags.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/suggest.hpp"
#include "cli/threads.hpp"
#include "cli/validators.hpp"
#include "data/text_tokenizer.hpp"
#include "train/options.hpp"
#include "train/time_budget.hpp"

namespace glass::cli {

namespace {

/// Step counts (--iters, --decay-iters, --eval-every): a billion steps is years of training on
/// a CPU; more is a typo.
constexpr long long kMaxSteps = 1'000'000'000;
const CLI::Validator kStepCount =
    glass::cli::integer_in(1, kMaxSteps, fmt::format("an integer from 1 to {}", kMaxSteps));
/// --time: a duration with its unit (glass::parse_duration says what is wrong).
const CLI::Validator kDuration(
    [](std::string& text) -> std::string {
      try {
        glass::parse_duration(text);
        return "";
      } catch (const std::invalid_argument& e) {
        return std::string(e.what()) + " (got '" + text + "')";
      }
    },
    "DURATION");

}  // namespace

/// The text and the run directory: --data, --out.
void add_data_flags(CLI::App* cmd, glass::TrainOptions& o) {
  cmd->add_option("--data", o.data_path,
                  "UTF-8 text file to learn from (default: bundled domcasmurro.txt)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--out", o.out_dir, "checkpoint directory (default: runs/<corpus name>)");
}

/// The optimizer's schedule: steps, batch and context, the learning rate and its cosine,
/// AdamW's weight decay, gradient clipping.
void add_schedule_flags(CLI::App* cmd, glass::TrainOptions& o) {
  cmd->add_option("--iters", o.iters,
                  "optimizer steps to train for (total, counting a resumed run)")
      ->check(kStepCount)
      ->capture_default_str();
  // --time: as many steps as fit in a duration, chosen once and recorded (train/time_budget.hpp).
  cmd->add_option_function<std::string>(
         "--time", [&o](const std::string& text) { o.time_budget_s = glass::parse_duration(text); },
         "train for about this long (90s, 5m, 1.5m, 1h): the steps that fit are chosen after a "
         "short timed trial and recorded, instead of --iters")
      ->check(kDuration);
  cmd->add_option("--batch-size", o.batch_size, "windows per step (B)")
      ->check(glass::cli::integer_in(1, 1'000'000, "an integer from 1 to 1000000"))
      ->capture_default_str();
  cmd->add_option("--context", o.context,
                  "tokens per training window (T): characters, or a BPE model's subwords; also "
                  "the sampling window")
      ->check(glass::cli::kPositiveInteger)
      ->capture_default_str();
  cmd->add_option("--lr", o.lr, "peak learning rate")
      ->check(glass::cli::kPositiveNumber)
      ->capture_default_str();
  cmd->add_option("--min-lr", o.min_lr, "final learning rate of the cosine (default: lr / 10)")
      ->check(glass::cli::kNonNegativeNumber);
  cmd->add_option("--warmup", o.warmup, "linear warmup steps")
      ->check(
          glass::cli::integer_in(0, kMaxSteps, fmt::format("an integer from 0 to {}", kMaxSteps)))
      ->capture_default_str();
  cmd->add_option("--decay-iters", o.decay_iters,
                  "step where the cosine reaches min-lr (default: --iters)")
      ->check(kStepCount);
  cmd->add_option("--weight-decay", o.weight_decay,
                  "AdamW decoupled weight decay (2-D weights only)")
      ->check(glass::cli::kNonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--grad-clip", o.grad_clip, "clip the global gradient norm to this (0 = off)")
      ->check(glass::cli::kNonNegativeNumber)
      ->capture_default_str();
  // The optimizer (train/muon.hpp); --resume keeps the recorded one.
  cmd->add_option_function<std::string>(
         "--optimizer",
         [&o](const std::string& name) { o.optimizer = glass::optimizer_from_name(name).value(); },
         "adamw: AdamW on every parameter; muon: Muon on the blocks' matrices "
         "(attention and FFN), AdamW on the embeddings, output head and gains")
      ->transform(glass::cli::one_of({"adamw", "muon"}, "optimizer"))
      ->default_str(glass::optimizer_name(o.optimizer));  // TrainOptions decides
  cmd->add_option("--muon-lr", o.muon_lr, "Muon's peak learning rate (same warmup and cosine)")
      ->check(glass::cli::kPositiveNumber)
      ->capture_default_str();
}

/// The evaluations: how often, on how many batches, how many tokens sampled.
void add_evaluation_flags(CLI::App* cmd, glass::TrainOptions& o) {
  cmd->add_option("--eval-every", o.eval_every, "evaluate, sample and checkpoint every N steps")
      ->check(kStepCount)
      ->capture_default_str();
  cmd->add_option("--eval-iters", o.eval_iters, "batches per split in each evaluation")
      ->check(glass::cli::integer_in(1, glass::kMaxEvalIters,
                                     fmt::format("an integer from 1 to {}", glass::kMaxEvalIters)))
      ->capture_default_str();
  cmd->add_option("--sample-tokens", o.sample_tokens,
                  "tokens sampled at each evaluation (0 = none)")
      ->check(
          glass::cli::integer_in(0, static_cast<long long>(glass::kMaxSampleTokens),
                                 fmt::format("an integer from 0 to {}", glass::kMaxSampleTokens)))
      ->capture_default_str();
}

/// The run itself: seed, threads, --resume / --overwrite, the debugging check, the head scores
/// recorded, --serve and its port.
void add_run_flags(CLI::App* cmd, TrainFlags& flags) {
  glass::TrainOptions& o = flags.options;
  cmd->add_option("--seed", o.seed, "seed of the initial weights and of the batches")
      ->check(glass::cli::kNonNegativeInteger)
      ->capture_default_str();
  glass::cli::add_threads_option(cmd, flags.threads);
  cmd->add_flag(
      "--resume", o.resume,
      "continue the checkpoint in --out exactly where it stopped (with its recorded "
      "--lr, --min-lr, --warmup, --decay-iters, --batch-size, --grad-clip, --optimizer and "
      "--muon-lr)");
  cmd->add_flag("--overfit-batch", o.overfit_batch,
                "debugging check: train on one batch only; the training loss must fall towards 0 "
                "(the evaluations' train loss is that batch's; the validation loss stays high)");
  cmd->add_flag_function(
      "--no-interp-record", [&o](std::int64_t) { o.interp_record = false; },
      "do not write interp.json (head scores and per-head ablation loss on a fixed validation "
      "probe) into each save; recording costs about 0.3 s of CPU time per save on the default model (19 forward passes over 256 tokens) and "
      "changes no weight (glass inspect --history DIR shows it)");
  cmd->add_flag("--serve", flags.serve,
                "watch it learn in the browser (glass serve on --out; stays up until Ctrl-C)");
  cmd->add_option("--port", flags.port, "port of --serve (0 = any free port)")
      ->check(glass::cli::integer_in(0, 65535, "an integer from 0 to 65535"))
      ->capture_default_str();
  cmd->add_flag("--overwrite", o.overwrite,
                "start a new run in an --out that already holds one (replaced at the first save)");
}

/// The model's sizes, tokenizer and ops (group "Model").
void add_model_flags(CLI::App* cmd, glass::TrainOptions& o) {
  cmd->add_option("--d-model", o.model.d_model, "width of the residual stream")
      ->check(glass::cli::kPositiveInteger)
      ->capture_default_str()
      ->group("Model");
  cmd->add_option("--n-layers", o.model.n_layers, "decoder blocks")
      ->check(glass::cli::kPositiveInteger)
      ->capture_default_str()
      ->group("Model");
  cmd->add_option("--n-heads", o.model.n_heads, "query heads")
      ->check(glass::cli::kPositiveInteger)
      ->capture_default_str()
      ->group("Model");
  cmd->add_option("--n-kv-heads", o.model.n_kv_heads, "key/value heads (GQA)")
      ->check(glass::cli::kPositiveInteger)
      ->capture_default_str()
      ->group("Model");
  cmd->add_option("--ffn-hidden", o.model.ffn_hidden, "hidden width of the feed-forward (--mlp)")
      ->check(glass::cli::kPositiveInteger)
      ->capture_default_str()
      ->group("Model");
  cmd->add_option("--vocab-cap", o.model.vocab_cap,
                  "most distinct characters kept in the vocabulary (the rarest others become the "
                  "unknown token); lower it for texts with thousands of characters (CJK)")
      ->check(glass::cli::integer_in(2, 65535, "an integer from 2 to 65535"))
      ->capture_default_str()
      ->group("Model");
  cmd->add_option_function<std::string>(
         "--tokenizer",
         [&o](const std::string& name) { o.tokenizer = glass::tokenizer_kind_from_name(name); },
         "char: one token per character (the default); bpe: subword tokens of the LLaMA kind, "
         "trained on the training split (docs/en/bpe.md). --resume keeps the checkpoint's")
      ->transform(CLI::IsMember({"char", "bpe"}, CLI::ignore_case))
      ->default_str("char")
      ->group("Model");
  cmd->add_option("--vocab-size", o.bpe_vocab_size,
                  "tokens of the BPE vocabulary (--tokenizer bpe): at least 259 + the text's "
                  "distinct characters, at most what its merges allow")
      ->check(glass::cli::integer_in(1, 65535, "an integer from 1 to 65535"))
      ->capture_default_str()
      ->group("Model");
  cmd->add_flag("--zero-init-out", o.zero_init_out,
                "start every block's output projections (attention W_O, the feed-forward's down "
                "projection) at zero, as modded-nanogpt and nanochat do; recorded in the save")
      ->group("Model");
  glass::cli::add_ops_option(cmd, o.model.ops_path)->group("Model");
}

void mark_recipe_given(glass::TrainOptions& o, const CLI::App* cmd) {
  // (glass finetune has no --ops: the base's is kept)
  o.ops_given = cmd->get_option_no_throw("--ops") != nullptr && cmd->count("--ops") > 0;
  if (cmd->count("--time") > 0 && cmd->count("--iters") > 0)
    throw glass::cli::CommandError(
        "--time chooses the number of steps (those that fit in the time given), --iters gives "
        "it: use one of them");
  o.iters_from_save = cmd->count("--iters") == 0;       // --resume: the recorded step count
  o.eval_every_given = cmd->count("--eval-every") > 0;  // else --time spaces the evaluations
  glass::RecipeGiven& given = o.recipe_given;
  given.lr = cmd->count("--lr") > 0;
  given.min_lr = cmd->count("--min-lr") > 0;
  given.warmup = cmd->count("--warmup") > 0;
  given.decay_iters = cmd->count("--decay-iters") > 0;
  given.batch_size = cmd->count("--batch-size") > 0;
  given.grad_clip = cmd->count("--grad-clip") > 0;
  given.context = cmd->count("--context") > 0;
  given.optimizer = cmd->count("--optimizer") > 0;
  given.muon_lr = cmd->count("--muon-lr") > 0;
}

/// The options of modded-nanogpt and nanochat that llama.cpp's `llama` architecture and
/// llama2.c's run.c do not compute (ModelConfig, nn/config.hpp).
void add_recipe_option_flags(CLI::App* cmd, glass::TrainOptions& o) {
  const std::string group = "Recipe options (off by default; glass export refuses them)";
  cmd->add_flag("--qk-norm", o.model.qk_norm,
                "RMSNorm of each head's queries and keys (no learned gain) before RoPE, as "
                "modded-nanogpt and nanochat")
      ->group(group);
  cmd->add_option_function<std::string>(
         "--mlp", [&o](const std::string& name) { o.model.mlp = glass::parse_mlp(name); },
         "the feed-forward: swiglu, w2(silu(w1 x) * w3 x) (LLaMA), or relu2, w2(relu(w3 x)^2) "
         "(no gate matrix: 2/3 of SwiGLU's weights at the same --ffn-hidden; 4 x --d-model "
         "matches SwiGLU's count at 8/3)")
      ->transform(CLI::IsMember({"swiglu", "relu2"}, CLI::ignore_case))
      ->default_str("swiglu")
      ->group(group);
  cmd->add_option("--logit-softcap", o.model.logit_softcap,
                  "soft-cap the logits to c tanh(logits / c) before the loss and sampling "
                  "(Gemma 2; modded-nanogpt uses 15 or 30); 0 = off")
      ->check(glass::cli::kNonNegativeNumber)
      ->capture_default_str()
      ->group(group);
}

}  // namespace glass::cli
