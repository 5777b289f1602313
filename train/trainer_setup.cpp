// Building a Trainer (train/trainer.hpp): the checks of the options and of the memory, what a
// resume continues, the text, the model and tokenizer (fresh, or from the save resumed), the
// batches and the training state, the records and the run directory made ready, before any step
// is taken.

#include "train/trainer.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include <fmt/format.h>

#include "autograd/threads.hpp"
#include "checkpoint/checkpoint.hpp"
#include "checkpoint/checkpoint_files.hpp"
#include "checkpoint/model_size.hpp"
#include "checkpoint/run_dir.hpp"
#include "interp/record.hpp"
#include "train/interp_recorder.hpp"
#include "train/model_files.hpp"
#include "train/resume.hpp"
#include "train/run_directory.hpp"

namespace glass {

namespace {

/// True when an MPI launcher (mpirun, mpiexec) started this process. OpenMPI gives each process
/// a pseudo-terminal even when mpirun's own output goes to a file, so isatty() cannot tell
/// whether a person watches the progress line there.
bool launched_by_mpi() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(name) != nullptr) return true;
  return false;
}

/// Where the processes other than rank 0 write: nowhere.
std::ostream& silent() {
  static std::ostream nowhere(nullptr);
  return nowhere;
}

/// The threads of a data-parallel step: num_threads(), but no more than this process's rows of
/// the batch (with mpirun each rank takes batch / ranks of them), so that no replica goes unused.
std::size_t step_threads(const TrainOptions& o) {
  const std::size_t rows = o.batch_size / static_cast<std::size_t>(std::max(o.comm.size(), 1));
  return std::max<std::size_t>(1, std::min(num_threads(), rows));
}

/// Refuses a model or batch that cannot fit in this machine's memory (a typo such as a d_model
/// of 1000000000 or a batch of 100000000), before allocating anything big. Checks the context
/// against the model's context length first.
void check_model_fits(const TrainOptions& o) {
  if (o.context > o.model.context_length)
    throw OptionError(
        "context", std::to_string(o.context),
        fmt::format("is longer than the model's context length {}", o.model.context_length));
  const double need =
      training_memory_lower_bound(o.model, o.batch_size, o.context, step_threads(o) - 1);
  const double have = available_memory_bytes();
  if (have > 0 && need > have)
    throw OutOfMemoryError(fmt::format(
        "this run needs at least {} of memory ({:.4g} parameters, batch {} x context {}) but only "
        "{} is available now",
        format_bytes(need), parameter_count(o.model), o.batch_size, o.context, format_bytes(have)));
}

/// The warmup is not shorter than the schedule: the learning rate never reaches its peak.
void warn_of_long_warmup(const TrainOptions& o, std::ostream& out) {
  if (o.warmup < o.decay_iters) return;
  out << fmt::format(
      "warning: the warmup ({} steps) is not shorter than the schedule's {} steps (--iters, or "
      "--decay-iters): the learning rate never reaches its peak and the cosine decay never "
      "starts. Use a --warmup below {} (e.g. --warmup {})\n",
      o.warmup, o.decay_iters, o.decay_iters, o.decay_iters / 10);
}

}  // namespace

Trainer::Trainer(TrainOptions options, std::ostream& out)
    : options_(std::move(options)),
      out_(options_.comm.is_root() ? out : silent()),
      steps_record_(out_) {
  TrainOptions& o = options_;
  Resume::check_resumable(o);
  // The progress line is rewritten in place (CR, ESC[K) only on a terminal; a file, a pipe or
  // mpirun's output gets plain lines.
  is_tty_ =
      (&out_ == &std::cout) && ::isatty(fileno(stdout)) && o.comm.size() == 1 && !launched_by_mpi();
  // One trainer per run directory, and no silent replacement of a run: lock out_dir before
  // reading or judging what it holds (a new directory is locked when it is created).
  if (o.comm.is_root()) {
    run_dir_ =
        std::make_unique<RunDirectory>(o.out_dir, o.resume || o.overwrite, o.saved_step, out_);
    run_dir_->lock();
  }
  std::optional<Resume> resume;
  if (o.resume) resume.emplace(o.out_dir);
  if (resume) resume->take_recorded(o);  // the recipe and context, before they are checked
  validate_options(o);
  std::u32string text = read_training_text(o, out_);
  const std::size_t text_chars = text.size();
  WeightsStamp stamp;  // what the resumed weights record, checked against the training state
  if (resume)
    stamp = take_back_resumed_run(*resume);
  else
    make_new_model(text);
  corpus_ = encode_corpus(*tokenizer_, std::move(text), o, o.resume, out_);
  make_optimizer_and_batches();
  if (resume) restore_training_state(*resume, stamp);
  if (run_id_.empty()) run_id_ = new_run_id();
  if (o.saved_step != nullptr && !resume) o.saved_step->store(-1);
  make_records();
  if (run_dir_) run_dir_->prepare(run_id_, resume ? resume->relink() : std::string());
  if (o.overwrite && o.comm.is_root() && holds_checkpoint(o.out_dir))
    out_ << "note: --overwrite: the run in " << o.out_dir
         << " will be replaced by this one at its first save\n";
  warn_of_long_warmup(o, out_);
  print_banner(text_chars);
  out_.flush();
}

Trainer::~Trainer() = default;

// ---- model and tokenizer: from the save resumed --------------------------------------------------
Trainer::WeightsStamp Trainer::take_back_resumed_run(const Resume& resume) {
  TrainOptions& o = options_;
  if (!resume.note().empty()) out_ << "note: " << resume.note() << "\n";
  resume.require_save();
  SavedModel saved = load_saved_model(resume.save_dir());
  if (!saved.warning.empty()) out_ << "warning: " << saved.warning << "\n";
  tokenizer_.emplace(std::move(saved.tokenizer));
  if (o.tokenizer_given && o.tokenizer != tokenizer_->kind())
    out_ << "note: the run continues with the checkpoint's tokenizer ("
         << tokenizer_kind_name(tokenizer_->kind()) << "), not " << tokenizer_kind_name(o.tokenizer)
         << "\n";
  o.tokenizer = tokenizer_->kind();
  model_ = std::move(saved.model);
  // A resumed run keeps its checkpoint's ops path (the exact resume), unless another was chosen.
  if (o.ops_given) model_->set_ops_path(o.model.ops_path);
  o.model = model_->config();
  check_model_fits(o);
  return {saved.weights_step, saved.weights_run_id};
}

// ---- model and tokenizer: new --------------------------------------------------------------------
void Trainer::make_new_model(const std::u32string& text) {
  TrainOptions& o = options_;
  tokenizer_.emplace(new_tokenizer(text, o));
  check_model_fits(o);
  model_ = std::make_unique<Decoder>(o.model, o.seed);
}

// ---- optimizer, schedule, batches ---------------------------------------------------------------
void Trainer::make_optimizer_and_batches() {
  const TrainOptions& o = options_;
  auto adamw_params = model_->named_parameters();
  if (o.optimizer == OptimizerKind::muon) {  // the blocks' matrices to Muon, the rest to AdamW
    MuonSplit split = split_for_muon(adamw_params);
    muon_ = std::make_unique<Muon>(split.muon);
    adamw_params = std::move(split.adamw);
  }
  optimizer_ =
      std::make_unique<AdamW>(adamw_params, AdamWConfig{o.beta1, o.beta2, 1e-8, o.weight_decay});
  parallel_ =
      std::make_unique<DataParallel>(*model_, step_threads(o));  // --threads (autograd/threads.hpp)
  schedule_ = LrSchedule{o.lr, o.min_lr, o.warmup, o.decay_iters};
  const std::size_t n_all = corpus_.ids->size(), n_train = corpus_.n_train;
  train_batches_ = std::make_unique<BatchSampler>(corpus_.ids, 0, n_train, o.batch_size, o.context,
                                                  o.seed + 1, "training split");
  eval_train_batches_ = std::make_unique<BatchSampler>(corpus_.ids, 0, n_train, o.batch_size,
                                                       o.context, o.seed + 2, "training split");
  eval_val_batches_ = std::make_unique<BatchSampler>(corpus_.ids, n_train, n_all, o.batch_size,
                                                     o.context, o.seed + 2, "validation split");
  eval_start_state_ = eval_train_batches_->state();
  sample_rng_.seed(o.seed + 3);
}

// ---- the training state of the save resumed --------------------------------------------------
void Trainer::restore_training_state(const Resume& resume, const WeightsStamp& stamp) {
  const TrainOptions& o = options_;
  const TrainState state =
      load_train_state(resume.save_dir(), *optimizer_, stamp.step, stamp.run_id, muon_.get());
  if (state.step >= o.iters)
    throw OptionError("iters", std::to_string(o.iters),
                      fmt::format("must be larger than the step of the checkpoint in {}, which is "
                                  "already at step {}",
                                  o.out_dir, state.step));
  train_batches_->set_state(state.batch_rng);
  std::istringstream rng_text(state.sample_rng);
  rng_text >> sample_rng_;
  if (rng_text.fail())
    throw CheckpointError(resume.save_dir() + "/train_state.json: bad sample_rng state");
  step_ = state.step;
  best_val_ = state.best_val;
  has_best_ = state.has_best;
  log_record_.restore(state.log);
  elapsed_before_ = state.elapsed_s;
  run_id_ = state.run_id;  // the same run goes on
  if (run_dir_) run_dir_->set_last_saved_step(state.step);
  if (o.saved_step != nullptr) o.saved_step->store(state.step);
  // The per-step rows of the resumed save (none in a checkpoint written before steps.csv).
  steps_record_.restore(checkpoint_files_dir(resume.save_dir()), step_);
  // o.context is the recorded one unless another was given (Resume::take_recorded).
  if (state.context != 0 && state.context != o.context)
    out_ << fmt::format(
        "warning: the run in {} was trained with context {} (recorded in its save); this run "
        "trains with --context {} as given, from step {} on (leave --context out to keep {})\n",
        o.out_dir, state.context, o.context, state.step, state.context);
}

// ---- the records observing the loop ---------------------------------------------------------------
void Trainer::make_records() {
  observers_.insert(observers_.begin(), {&log_record_, &steps_record_});
  if (!options_.interp_record) return;
  interp_record_ = std::make_unique<InterpRecorder>(*model_, validation_ids(ProbeSpec{}.tokens + 1),
                                                    options_.context, options_.comm, run_id_, out_);
  observers_.insert(observers_.begin() + 2, interp_record_.get());
}

}  // namespace glass
