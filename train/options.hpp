#pragma once
// What a training run is asked to do (TrainOptions), and the checks of it: each bad value is an
// OptionError naming the field (train/errors.hpp); the command line maps fields to its flags.

#include <atomic>
#include <csignal>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "data/text_tokenizer.hpp"
#include "nn/config.hpp"
#include "train/distributed.hpp"

namespace glass {

class Trainer;

/// Which fields of the recipe the user set (the others keep their defaults). On resume a field
/// left out takes the recorded value; one set must agree with it (train/resume.hpp).
struct RecipeGiven {
  bool lr = false, min_lr = false, warmup = false, decay_iters = false, batch_size = false,
       grad_clip = false, context = false;
  bool optimizer = false, muon_lr = false;
};

/// Which sizes of the model the user set. A resumed run keeps its checkpoint's model whatever is
/// set; the Trainer reports those set to another value (Trainer::ignored_model_fields).
struct ModelGiven {
  bool d_model = false, n_layers = false, n_heads = false, n_kv_heads = false, ffn_hidden = false,
       vocab_cap = false;
  bool qk_norm = false, mlp = false, logit_softcap = false;  ///< the recipe options
};

/// The optimizer of a run: AdamW on every parameter, or Muon on the decoder blocks' matrices and
/// AdamW on the rest (train/muon.hpp).
enum class OptimizerKind { adamw, muon };

/// "adamw" or "muon".
const char* optimizer_name(OptimizerKind kind);
/// The kind named "adamw" or "muon"; std::nullopt for any other name.
std::optional<OptimizerKind> optimizer_from_name(const std::string& name);

/// Upper bounds of the counts of TrainOptions (a typo such as eval_iters 2000000000 would
/// otherwise run for days without a word). 10000 batches per split is 500x the default.
inline constexpr long kMaxEvalIters = 10'000;
/// Characters sampled at each evaluation, at most.
inline constexpr std::size_t kMaxSampleTokens = 100'000;

/// A chat fine-tune (`glass finetune`): the run starts from a base checkpoint and trains on
/// conversations (data/chat_data.hpp) with the loss on the assistant's tokens only
/// (train/chat_batches.hpp). data_path is then the training conversations' file.
struct FinetuneOptions {
  std::string base_dir;  ///< the base checkpoint (a run directory or a save); "" on resume
  std::string val_path;  ///< validation conversations; "" = the last tenth of the training file's
  std::string base_sha256;  ///< SHA-256 of the base's weights file (set by the Trainer)
  bool enabled = false;     ///< this run is a chat fine-tune
  /// The training loss on every token of the conversations (`--loss-on all`: the template, the
  /// questions and the answers, as pretraining takes it) instead of the answers and their
  /// <|im_end|> alone (the loss mask, the default). The validation loss stays on the answers,
  /// so that runs of either kind compare. A resume keeps the recorded choice.
  bool loss_on_all = false;
  bool loss_on_given = false;  ///< --loss-on was given (a resume refuses another value)
};

/// Everything `glass train` can set. Defaults: nanoGPT's shakespeare_char recipe (README, "glass train").
struct TrainOptions {
  std::string data_path;  ///< UTF-8 text file to learn from
  std::string out_dir;    ///< checkpoint directory (created if needed)
  long iters = 2000;      ///< training stops after this many optimizer steps
  /// A time budget in seconds (`--time`, train/time_budget.hpp): when > 0, a new run chooses
  /// iters (and a decay_iters left at -1) to fit in it, from a trial of a few steps and one
  /// evaluation that is then undone. 0: iters as given.
  double time_budget_s = 0;
  /// On resume, iters takes the step count the save records (the command line sets it when
  /// --iters is left out); false keeps iters as given.
  bool iters_from_save = false;
  long decay_iters = -1;        ///< cosine horizon (nanoGPT lr_decay_iters); -1 = iters
  std::size_t batch_size = 12;  ///< B windows per step
  std::size_t context = 64;     ///< T characters per window (<= model context_length)
  double lr = 1e-3;             ///< peak learning rate
  double min_lr = -1;           ///< floor of the cosine; -1 = lr / 10
  long warmup = 100;            ///< linear warmup steps
  double weight_decay = 0.1;    ///< AdamW decoupled decay on 2-D weights
  double beta1 = 0.9, beta2 = 0.99;
  double grad_clip = 1.0;  ///< global-norm clip; 0 = off
  /// adamw: AdamW on every parameter. muon: Muon (train/muon.hpp) on the decoder blocks' matrices
  /// at muon_lr, AdamW (lr, weight_decay, betas) on the embeddings, the output head and the gains.
  OptimizerKind optimizer = OptimizerKind::adamw;
  /// Muon's peak learning rate; the schedule's multiplier lr(it) / lr (warmup, cosine) applies.
  /// 0.01 ended lower than Muon's usual 0.02 on tinyshakespeare (1.778 against 1.782 at step 600,
  /// 1.571 against 1.605 at 2000) and reached val 1.88 sooner at 2000 steps (bench/README.md,
  /// *Speedrun* and *Recipe search*).
  double muon_lr = 0.01;
  /// --time filled in the speedrun recipe (use_speedrun_recipe): the banner and the command's
  /// "repeat this run" line say so.
  bool speedrun_recipe = false;
  long eval_every = 250;  ///< evaluate (and checkpoint) every this many steps
  /// eval_every was chosen: a time budget keeps it. Otherwise a time budget spaces the
  /// evaluations so that they take about a tenth of it (train/time_budget.hpp).
  bool eval_every_given = false;
  long eval_iters = 20;       ///< batches per split per evaluation
  std::uint64_t seed = 1337;  ///< model init = seed, train batches = seed+1, eval = seed+2
  bool resume = false;        ///< continue from out_dir's checkpoint (train/resume.hpp)
  /// On resume: which fields of the recipe the user set. One left out takes the recorded
  /// value; one set must agree with it (train/resume.hpp).
  RecipeGiven recipe_given;
  /// On resume: which model sizes the user set (ignored: the checkpoint's model is kept).
  ModelGiven model_given;
  /// data_path is the bundled corpus because no text was given (said when a resume refuses it).
  bool data_defaulted = false;
  /// model.ops_path was chosen: a resumed run takes it; otherwise it keeps its checkpoint's.
  bool ops_given = false;
  /// tokenizer was chosen: a resumed run says so when the checkpoint's is of another kind.
  bool tokenizer_given = false;
  bool overwrite =
      false;  ///< start over in an out_dir that holds a run (replaced at the first save)
  std::size_t sample_tokens = 120;  ///< characters sampled at each evaluation (0 = none)
  bool overfit_batch = false;       ///< train on the first batch only, again and again (a check
                                    ///< that the loop can learn: the loss should go to ~0); the
                                    ///< evaluations' train loss is then that batch's
  ModelConfig model;                ///< vocab_size is set from the tokenizer
  /// A new model starts with every block's output projections (attention.wo and
  /// feed_forward.w2) at zero, as modded-nanogpt and nanochat do: each block then starts as the
  /// identity of the residual stream (train/init.hpp). Recorded in config.json's "training".
  bool zero_init_out = false;
  /// Record the head scores and per-head ablation Δloss of a fixed validation probe in every
  /// save (interp.json and interp_history.json, interp/record.hpp; false turns it off). Reads the model only: the weights, the optimizer and every random generator of the
  /// run are the same with it and without it.
  bool interp_record = true;
  /// The tokenizer: characters (the default) or a BPE vocabulary trained on the training split
  /// (data/bpe_tokenizer.hpp). A resumed run keeps the tokenizer of its checkpoint.
  TokenizerKind tokenizer = TokenizerKind::kChar;
  /// The BPE vocabulary's size (tokens), for tokenizer kBpe.
  std::size_t bpe_vocab_size = 512;
  /// Set (e.g. by a SIGINT or SIGTERM handler, to the signal's number) to stop: the loop saves
  /// a checkpoint and returns. During an evaluation it is honoured when the evaluation ends.
  const volatile std::sig_atomic_t* stop_flag = nullptr;
  /// When set, receives the step of the last complete save in out_dir: -1 before the first save
  /// of a new run, the checkpoint's step on resume, then each save's step. Lock-free, so a signal
  /// handler may read it to say what a stop at once keeps. The saving thread holds SIGINT and
  /// SIGTERM back from the switch of `current` to this store, so a handler running on it sees
  /// the two agree.
  std::atomic<long>* saved_step = nullptr;
  /// The processes training together (mpirun -np N, train/distributed.hpp): each takes
  /// batch_size / N windows of every batch; rank 0 alone prints, samples and writes out_dir.
  Communicator comm;
  /// A chat fine-tune instead of a text run (chat.enabled).
  FinetuneOptions chat;
  /// Called by rank 0 when run() ends (done, or stopped by the stop flag after its save; not
  /// after an error), with the Trainer: whoever runs it writes its own files next to the saves
  /// there (`glass train` writes DIR/loss.html, cli/loss_page.hpp). Empty: nothing is called.
  std::function<void(const Trainer&)> on_run_end;
};

/// The speedrun recipe, which `glass train --time` trains with where the command leaves the
/// optimizer open: Muon (at muon_lr) on the blocks' matrices, with their output projections
/// started at zero (zero_init_out, unless `zero_init_given`), and speedrun_recipe set. On
/// tinyshakespeare it reached a lower validation loss than AdamW at every budget of the speedrun
/// table, 15 s to 3 min (bench/README.md, *Speedrun*; docs/treino.md, "Qualidade por minuto");
/// on a text as small as Dom Casmurro both overfit after a minute, Muon sooner. A command that
/// names the optimizer (`o.recipe_given.optimizer`) keeps its own optimizer and initialisation:
/// `o` is left as is. Returns whether it changed the recipe.
bool use_speedrun_recipe(TrainOptions& o, bool zero_init_given);

/// Checks every field of `o` and fills the derived defaults (decay_iters -1 -> iters, min_lr -1 ->
/// lr / 10). Throws OptionError naming the first bad field. Conflicts of resume with other
/// fields are Resume::check_resumable's (train/resume.hpp).
void validate_options(TrainOptions& o);

}  // namespace glass
