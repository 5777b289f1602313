#pragma once
// The training loop: forward, cross-entropy, backward, clip, AdamW step; periodic evaluation,
// progress line and samples. Around it, each with its own job: the run directory it saves into
// (train/run_directory.hpp: lock, saves, `current`, cleanup), the records that observe it
// (train/records.hpp: log.csv, steps.csv; train/interp_recorder.hpp: the per-save
// interpretability record), what a resume continues (train/resume.hpp) and the text
// (train/corpus.hpp). The Trainer knows nothing of pages: whoever runs it adds its own end-of-run
// files (TrainOptions::on_run_end).
// The code: trainer_setup.cpp (construction), trainer.cpp (the loop and its saves),
// trainer_report.cpp (what it prints).

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "data/batches.hpp"
#include "data/text_tokenizer.hpp"
#include "data/yardstick.hpp"
#include "nn/decoder.hpp"
#include "train/adamw.hpp"
#include "train/corpus.hpp"
#include "train/data_parallel.hpp"
#include "train/muon.hpp"
#include "train/errors.hpp"
#include "train/observer.hpp"
#include "train/options.hpp"
#include "train/records.hpp"
#include "train/schedule.hpp"
#include "train/train_state.hpp"

namespace glass {

class InterpRecorder;
class ProbeRecorder;
class Resume;
class RunDirectory;
struct ChatRun;

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
  long iters = 0;            ///< the step count the run trains to (with a time budget: its choice)
  long eval_every = 0;       ///< the evaluation cadence (with a time budget: its choice)
};

/// The loop of `glass train` and `glass finetune` (options.chat: a base checkpoint trained on
/// conversations with the loss on the answers, train/chat_batches.hpp). Construction refuses options that cannot work (OptionError, and
/// Resume::check_resumable), locks out_dir (one trainer per run directory, see
/// checkpoint/run_dir.hpp), refuses an out_dir that already holds a run unless resume or
/// overwrite is set (RunExistsError), with resume takes back what the save records
/// (train/resume.hpp), loads the text, builds (or, with resume, loads) the model, optimizer and
/// batch samplers and checks that out_dir can be written; run() trains. Errors the user can fix
/// throw before anything is written (train/errors.hpp; std::runtime_error for a bad or short
/// text, CheckpointError / FileError for a save or directory). Each save is all-or-nothing; a
/// save that fails (e.g. a full disk) throws CheckpointError and leaves the previous save
/// current.
class Trainer {
 public:
  /// `out` receives the progress line, evaluations and samples.
  Trainer(TrainOptions options, std::ostream& out);
  ~Trainer();

  /// Trains from the current step up to options.iters; with a time budget (a new run), first
  /// chooses options.iters to fit in it (train/time_budget.hpp). Throws NonFiniteError.
  TrainResult run();

  /// One optimizer step at step index `it` (0-based): forward, cross-entropy, backward,
  /// clip, AdamW (and Muon, train/muon.hpp). Returns the batch loss; last_grad_norm() is then the global gradient norm
  /// before clipping. Throws NonFiniteError. Runs on num_threads() threads
  /// (autograd/threads.hpp), as set when the Trainer was made.
  double train_step(long it);
  double last_grad_norm() const { return last_grad_norm_; }
  /// Mean loss over eval_iters batches of each split, drawn from a generator re-seeded with
  /// seed+2 at every call (so every evaluation sees the same windows); the validation loss is
  /// instead the exact mean over every token of the split (train/text_loss.hpp, as glass eval
  /// measures a text) when val_loss_exact(). With overfit_batch the train loss is the loss of
  /// the one batch trained on. No tape is recorded.
  EvalResult evaluate();
  /// True when the validation split takes no more windows of `context` tokens than the
  /// evaluation's sample (eval_iters x batch_size): evaluate() then predicts every token of it
  /// once, and its bits per byte are those glass eval gives for the split's text.
  bool val_loss_exact() const;

  /// Adds an observer of the loop (train/observer.hpp), called after the run's own records
  /// (log.csv, steps.csv, the interpretability record). Not owned: it must outlive run().
  void add_observer(TrainObserver& observer) { observers_.push_back(&observer); }

  const Decoder& model() const { return *model_; }
  /// The run's tokenizer: the checkpoint's on resume, else made from the text.
  const TextTokenizer& tokenizer() const { return *tokenizer_; }
  std::size_t vocab_size() const { return tokenizer_->vocab_size(); }
  /// The validation split's tokens and UTF-8 bytes (the counts bits_per_byte converts with).
  std::size_t val_tokens() const { return corpus_.val_tokens(); }
  std::size_t val_bytes() const { return corpus_.val_bytes; }
  /// The first min(n, val_tokens()) ids of the validation split (the interpretability probe's
  /// text is its first 257).
  std::vector<std::int32_t> validation_ids(std::size_t n) const {
    return corpus_.ids->to_vector(corpus_.n_train, corpus_.n_train + std::min(n, val_tokens()));
  }
  /// The interpretability record's probe text: ProbeSpec::tokens + 1 ids of the validation split
  /// from its first token that is not whitespace alone (blank_prefix_tokens).
  std::vector<std::int32_t> interp_probe_ids() const;
  long step() const { return step_; }
  const std::vector<LogRow>& log() const { return log_record_.rows(); }
  /// One row per optimizer step taken (including before a resume, when the save had them).
  const std::vector<StepRow>& steps() const { return steps_record_.rows(); }
  const TrainOptions& options() const { return options_; }
  /// On resume: the model sizes set (options.model_given) to another value than the checkpoint's,
  /// which the run ignores (it keeps the checkpoint's model), as fields: "model.d_model",
  /// "model.n_layers", "model.n_heads", "model.n_kv_heads", "model.ffn_hidden", "model.vocab_cap",
  /// in that order. Empty for a new run.
  const std::vector<std::string>& ignored_model_fields() const { return ignored_model_fields_; }

 private:
  // Construction, in this order (trainer_setup.cpp).
  struct WeightsStamp {
    std::string step, run_id;  // what model.safetensors records ("" when nothing)
  };
  WeightsStamp take_back_resumed_run(const Resume& resume);  // model and tokenizer
  void make_new_model(const std::u32string& text);
  // The yardsticks of the validation split (data/yardstick.hpp), on the root process and not
  // for --overfit-batch; none when they cannot be measured.
  void measure_yardstick_of(const std::u32string& text);
  void make_optimizer_and_batches();
  void restore_training_state(const Resume& resume, const WeightsStamp& stamp);
  // Throws the OptionError of a resume whose iters the save has already reached, worded for a
  // step count given (--iters) or taken from the save (--iters left out, e.g. after --time).
  [[noreturn]] void refuse_finished_run(const Resume& resume, long saved_step) const;
  void make_records();
  void print_banner(std::size_t text_chars);

  // A chat fine-tune, in this order (trainer_chat.cpp): the conversations read, the base loaded
  // (its vocabulary grown for the chat tokens and the characters it lacks), the conversations
  // rendered (the context chosen); then its evaluation, banner and sample.
  void read_conversations();
  void start_from_base();
  void render_conversations();
  double chat_val_loss();
  void print_chat_banner();
  std::string chat_sample();

  // When run() starts with a time budget (trainer_setup.cpp): options_.iters (and decay_iters)
  // from a trial that is undone.
  void fit_to_time_budget();
  struct TrialTimes {
    double step_s = 0;     // one optimizer step (with its steps.csv row)
    double eval_s = 0;     // one evaluation with its sample and save
    double spent_s = 0;    // since construction began, the trial included
    long trial_steps = 0;  // steps the trial took (then undone)
  };
  TrialTimes time_trial();  // the timed steps and evaluation of fit_to_time_budget

  // The loop (trainer.cpp).
  bool stop_requested();  // the stop flag is set (in any process); sets stop_signal_
  void evaluate_and_report(long it, double train_seconds, double positions_since_eval,
                           TrainResult& result, bool& best);
  void save(bool also_best);
  TrainState training_state() const;
  void draw_overfit_batch();  // overfit_batch: the one batch, drawn once
  void finish_run(TrainResult& result);

  // What it prints (trainer_report.cpp).
  void print_evaluation(long it, const EvalResult& e, double elapsed_s, bool best);
  void print_progress(long it, double loss, double lr, double tokens_per_s, double eta_s);
  void print_sample();
  std::string sample();  // sample_tokens tokens of text (what print_sample prints)

  TrainOptions options_;
  std::ostream& out_;
  bool is_tty_ = false;
  // The run directory (rank 0 only) and the records observing the loop.
  std::unique_ptr<RunDirectory> run_dir_;
  std::string run_id_;                             // recorded in every file of every save
  std::vector<std::string> ignored_model_fields_;  // on resume: sizes given that differ
  LogRecord log_record_;
  StepsRecord steps_record_;
  std::unique_ptr<InterpRecorder> interp_record_;
  std::unique_ptr<ProbeRecorder> probe_record_;  // the probe's attention at every save
  std::u32string probe_text_;  // its prompt: the training text's first non-blank characters
  std::vector<TrainObserver*> observers_;  // the records above, then add_observer's
  // What is trained, on what.
  std::optional<TextTokenizer> tokenizer_;
  Corpus corpus_;
  std::optional<Yardstick> yardstick_;           // printed beside the final summary
  std::size_t train_chars_ = 0, val_chars_ = 0;  // the splits' lengths in characters
  std::unique_ptr<Decoder> model_;
  std::unique_ptr<AdamW> optimizer_;  // every parameter, or with Muon those Muon does not take
  std::unique_ptr<Muon> muon_;        // --optimizer muon: the decoder blocks' matrices
  std::unique_ptr<DataParallel> parallel_;       // forward + backward on num_threads() threads
  std::unique_ptr<ChatRun> chat_;                // a chat fine-tune: its conversations
  std::unique_ptr<Batches> train_batches_;       // seed+1, saved for resume
  std::unique_ptr<Batches> eval_train_batches_;  // seed+2, reset at every evaluation
  std::unique_ptr<Batches> eval_val_batches_;    // continues the eval generator's stream
  std::string eval_start_state_;
  LrSchedule schedule_;
  bool decay_follows_iters_ = false;  // decay_iters was left at -1: it is iters
  std::mt19937_64 sample_rng_;
  Ids overfit_x_, overfit_y_;  // the one batch of overfit_batch
  // Where the loop stands.
  long step_ = 0;
  double best_val_ = 0;
  bool has_best_ = false;
  std::chrono::steady_clock::time_point run_start_ = std::chrono::steady_clock::now();
  // When construction began: a time budget counts from there (the text read and encoded too).
  std::chrono::steady_clock::time_point created_ = run_start_;
  double elapsed_before_ = 0;            // seconds trained before a resume (for elapsed_s)
  double last_grad_norm_ = 0;            // of the last train_step, before clipping
  std::size_t last_step_positions_ = 0;  // B * T of the last train_step (a chat batch's own T)
  int stop_signal_ = 0;  // the stop flag's value, the largest over the ranks (0: none)
};

}  // namespace glass
