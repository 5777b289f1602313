#pragma once
// The training loop: forward, cross-entropy, backward, clip, AdamW step; periodic evaluation,
// progress line, samples, log.csv, checkpoints (with exact resume). The Trainer knows nothing of
// pages: whoever runs it adds its own end-of-run files (TrainOptions::on_run_end).
// The code: trainer_setup.cpp (construction), trainer.cpp (the loop), trainer_save.cpp (the
// saves and the per-step log), trainer_report.cpp (what it prints); recipe.hpp (what --resume
// takes back).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <optional>

#include "data/batches.hpp"
#include "data/bpe_tokenizer.hpp"
#include "data/text_tokenizer.hpp"
#include "data/tokenizer.hpp"
#include "nn/config.hpp"
#include "nn/decoder.hpp"
#include "train/adamw.hpp"
#include "train/distributed.hpp"
#include "train/data_parallel.hpp"
#include "checkpoint/run_dir.hpp"
#include "train/schedule.hpp"
#include "train/train_state.hpp"

namespace glass {

class Trainer;

/// Upper bounds of the counts of TrainOptions (a typo such as --eval-iters 2000000000 would
/// otherwise run for days without a word). 10000 batches per split is 500x the default.
inline constexpr long kMaxEvalIters = 10'000;
/// Characters sampled at each evaluation, at most.
inline constexpr std::size_t kMaxSampleTokens = 100'000;

/// Everything `glass train` can set. Defaults: nanoGPT's shakespeare_char recipe (README, "glass train").
struct TrainOptions {
  std::string data_path;        ///< UTF-8 text file to learn from
  std::string out_dir;          ///< checkpoint directory (created if needed)
  long iters = 2000;            ///< training stops after this many optimizer steps
  long decay_iters = -1;        ///< cosine horizon (nanoGPT lr_decay_iters); -1 = iters
  std::size_t batch_size = 12;  ///< B windows per step
  std::size_t context = 64;     ///< T characters per window (<= model context_length)
  double lr = 1e-3;             ///< peak learning rate
  double min_lr = -1;           ///< floor of the cosine; -1 = lr / 10
  long warmup = 100;            ///< linear warmup steps
  double weight_decay = 0.1;    ///< AdamW decoupled decay on 2-D weights
  double beta1 = 0.9, beta2 = 0.99;
  double grad_clip = 1.0;        ///< global-norm clip; 0 = off
  long eval_every = 250;         ///< evaluate (and checkpoint) every this many steps
  long eval_iters = 20;          ///< batches per split per evaluation
  std::uint64_t seed = 1337;     ///< model init = seed, train batches = seed+1, eval = seed+2
  bool resume = false;           ///< continue from out_dir's checkpoint
  bool attention_given = false;  ///< model.ops_path was chosen (--attention): a resumed run
                                 ///< takes it; otherwise it keeps its checkpoint's
  bool overwrite =
      false;  ///< start over in an out_dir that holds a run (replaced at the first save)
  std::size_t sample_tokens = 120;  ///< characters sampled at each evaluation (0 = none)
  bool overfit_batch = false;       ///< train on the first batch only, again and again (a check
                                    ///< that the loop can learn: the loss should go to ~0); the
                                    ///< evaluations' train loss is then that batch's
  ModelConfig model;                ///< vocab_size is set from the tokenizer
  /// Record the head scores and per-head ablation Δloss of a fixed validation probe in every
  /// save (interp.json and interp_history.json, interp/record.hpp; --no-interp-record turns it
  /// off). Reads the model only: the weights, the optimizer and every random generator of the
  /// run are the same with it and without it.
  bool interp_record = true;
  /// --tokenizer: characters (the default) or a BPE vocabulary trained on the training split
  /// (data/bpe_tokenizer.hpp). A resumed run keeps the tokenizer of its checkpoint.
  TokenizerKind tokenizer = TokenizerKind::kChar;
  /// --vocab-size: the BPE vocabulary's size (tokens), for tokenizer kBpe.
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
  /// Called by rank 0 when run() ends (done, or stopped by the stop flag after its save; not
  /// after an error), with the Trainer: whoever runs it writes its own files next to the saves
  /// there (`glass train` writes DIR/loss.html, cli/loss_page.hpp). Empty: nothing is called.
  std::function<void(const Trainer&)> on_run_end;
};

/// Train and validation loss estimated at one step.
struct EvalResult {
  double train_loss = 0, val_loss = 0;
};

/// Bits per byte of text from a mean loss in nats per token: loss * tokens / (bytes * ln 2),
/// where `tokens` and `bytes` count the same text (its ids and its UTF-8 bytes). Unlike nats per
/// token it does not depend on the tokenizer, so a character and a BPE model compare on it.
/// Throws std::invalid_argument for bytes == 0.
double bits_per_byte(double loss_nats_per_token, std::size_t tokens, std::size_t bytes);

/// What a run ended with.
struct TrainResult {
  long step = 0;             ///< optimizer steps done in total (including before a resume)
  EvalResult last_eval;      ///< the last evaluation
  double best_val = 0;       ///< best validation loss seen (its weights are best.safetensors)
  bool interrupted = false;  ///< stopped by the stop flag (Ctrl-C); a checkpoint was saved
  int stop_signal = 0;       ///< then the flag's value (the largest over the ranks), e.g. SIGTERM
};

/// Raised when the loss or the gradient norm is not finite: training stops, and the last good
/// checkpoint in out_dir is left as it was.
class NonFiniteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The loop of `glass train`. Construction locks out_dir (one trainer per run directory, see
/// checkpoint/run_dir.hpp), refuses an out_dir that already holds a run unless resume or overwrite
/// is set, loads the text, builds (or, with resume, loads) the model, optimizer and batch
/// samplers and checks that out_dir can be written; run() trains. Errors the user can fix (bad
/// file, context too long, unwritable or locked directory, incompatible checkpoint) throw
/// std::runtime_error / std::invalid_argument / CheckpointError / FileError before anything is
/// written. Each save is all-or-nothing (a new step directory, then one switch of
/// out_dir/current); a save that fails (e.g. a full disk) throws CheckpointError and leaves the
/// previous save current.
class Trainer {
 public:
  /// `out` receives the progress line, evaluations and samples.
  Trainer(TrainOptions options, std::ostream& out);
  ~Trainer();

  /// Trains from the current step up to options.iters. Throws NonFiniteError.
  TrainResult run();

  /// One optimizer step at step index `it` (0-based): forward, cross-entropy, backward,
  /// clip, AdamW. Returns the batch loss; last_grad_norm() is then the global gradient norm
  /// before clipping. Throws NonFiniteError. Runs on num_threads() threads
  /// (autograd/threads.hpp), as set when the Trainer was made.
  double train_step(long it);
  double last_grad_norm() const { return last_grad_norm_; }
  /// Mean loss over eval_iters batches of each split, drawn from a generator re-seeded with
  /// seed+2 at every call (so every evaluation sees the same windows). With overfit_batch the
  /// train loss is the loss of the one batch trained on. No tape is recorded.
  EvalResult evaluate();

  const Decoder& model() const { return *model_; }
  /// The character tokenizer (empty for a BPE run, see bpe_tokenizer()).
  const Tokenizer& tokenizer() const { return tokenizer_; }
  /// The BPE tokenizer of a --tokenizer bpe run, or nullptr.
  const BpeTokenizer* bpe_tokenizer() const { return bpe_ ? &*bpe_ : nullptr; }
  /// Ids in the vocabulary of either tokenizer.
  std::size_t vocab_size() const { return bpe_ ? bpe_->vocab_size() : tokenizer_.vocab_size(); }
  /// The validation split's tokens and UTF-8 bytes (the counts bits_per_byte converts with).
  std::size_t val_tokens() const { return corpus_->size() - n_train_; }
  std::size_t val_bytes() const { return val_bytes_; }
  /// The first min(n, val_tokens()) ids of the validation split (the interpretability probe's
  /// text is its first 257).
  std::vector<std::int32_t> validation_ids(std::size_t n) const {
    return corpus_->to_vector(n_train_, n_train_ + std::min(n, val_tokens()));
  }
  long step() const { return step_; }
  const std::vector<LogRow>& log() const { return log_; }
  /// One row per optimizer step taken (including before a resume, when the save had them).
  const std::vector<StepRow>& steps() const { return steps_; }
  const TrainOptions& options() const { return options_; }

 private:
  // Construction, in this order (trainer_setup.cpp).
  struct ResumePoint {
    std::string dir;             // the save to resume from: out_dir, or its newest complete save
    std::string relink;          // that save's name when out_dir/current was lost ("" otherwise)
    std::string weights_step;    // the step model.safetensors records, checked against the state's
    std::string weights_run_id;  // the run model.safetensors belongs to, checked likewise
  };
  std::u32string read_text();  // checks its size and length against --context
  ResumePoint find_resume_point();
  void load_or_create_model(const std::u32string& text, ResumePoint& from);
  void encode_corpus(std::u32string text);  // corpus_, n_train_; frees the text
  void make_optimizer_and_batches();
  void restore_training_state(const ResumePoint& from);
  void prepare_out_dir(const ResumePoint& from);  // rank 0: writable, locked, cleaned
  void print_banner(std::size_t text_chars);

  void save(bool also_best);
  // The interp.json text of this step (trainer_interp.cpp), measured by every rank together
  // (each its share of the heads); nullopt, with a warning, when it cannot be measured.
  std::optional<std::string> measure_interp_record();
  // Writes `record_text` as interp.json and the run's interp_history.json into the save being
  // written; `previous` is the directory of the last complete save (or out_dir when none).
  void write_interp_record(const std::string& step_dir, const std::string& previous,
                           const std::string& record_text);
  void keep_best(const std::string& previous_best, const std::string& best) const;
  void lock_out_dir();
  void print_progress(long it, double loss, double lr, double tokens_per_s, double eta_s);
  void print_sample();
  void draw_overfit_batch();  // --overfit-batch: the one batch, drawn once
  // The per-step log: out_dir/steps.csv, the live copy a reader can follow while training runs.
  void open_live_steps();
  void append_step(const StepRow& row);
  void print_evaluation_notes(long it);
  bool stop_requested();  // the stop flag is set (in any process); sets stop_signal_

  TrainOptions options_;
  std::ostream& out_;
  Tokenizer tokenizer_;
  std::optional<BpeTokenizer> bpe_;         // set for a BPE run; tokenizer_ is then empty
  std::size_t val_bytes_ = 0;               // UTF-8 bytes of the validation split's text
  std::shared_ptr<const TokenIds> corpus_;  // the whole text's ids (1 or 2 bytes each)
  std::size_t n_train_ = 0;                 // corpus_[0, n_train_) trains, the rest validates
  std::unique_ptr<Decoder> model_;
  std::unique_ptr<AdamW> optimizer_;
  std::unique_ptr<DataParallel> parallel_;            // forward + backward on num_threads() threads
  std::unique_ptr<BatchSampler> train_batches_;       // seed+1, saved for resume
  std::unique_ptr<BatchSampler> eval_train_batches_;  // seed+2, reset at every evaluation
  std::unique_ptr<BatchSampler> eval_val_batches_;    // continues the eval generator's stream
  std::string eval_start_state_;
  LrSchedule schedule_;
  std::mt19937_64 sample_rng_;
  long step_ = 0;
  double best_val_ = 0;
  bool has_best_ = false;
  std::vector<LogRow> log_;
  std::chrono::steady_clock::time_point run_start_ = std::chrono::steady_clock::now();
  double elapsed_before_ = 0;  // seconds trained before a resume (for elapsed_s)
  bool is_tty_ = false;
  std::unique_ptr<RunLock> lock_;  // held for the Trainer's lifetime
  std::string run_id_;             // recorded in every file of every save
  long last_saved_step_ = -1;      // the step of the last complete save (-1: none yet)
  std::vector<StepRow> steps_;     // one row per step; each save writes them all to steps.csv
  double last_grad_norm_ = 0;      // of the last train_step, before clipping
  int stop_signal_ = 0;            // the stop flag's value, the largest over the ranks (0: none)
  int live_steps_fd_ = -1;         // out_dir/steps.csv, opened for appending by run()
  Ids overfit_x_, overfit_y_;      // the one batch of --overfit-batch
};

}  // namespace glass
