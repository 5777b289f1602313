// Building a Trainer (train/trainer.hpp): the checks of the options and of the memory, what a
// resume continues, the text, the model and tokenizer (fresh, or from the save resumed), the
// batches and the training state, the records and the run directory made ready, before any step
// is taken; and, when run() starts, the step count that fits a time budget.

#include "train/trainer.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <tuple>

#include <fmt/format.h>

#include "autograd/threads.hpp"
#include "checkpoint/checkpoint.hpp"
#include "checkpoint/checkpoint_files.hpp"
#include "checkpoint/model_size.hpp"
#include "checkpoint/run_dir.hpp"
#include "interp/record.hpp"
#include "train/chat_batches.hpp"
#include "train/init.hpp"
#include "inspect/probe_history.hpp"
#include "train/interp_recorder.hpp"
#include "train/probe_recorder.hpp"
#include "train/model_files.hpp"
#include "train/resume.hpp"
#include "train/run_directory.hpp"
#include "train/time_budget.hpp"

namespace glass {

namespace fs = std::filesystem;

namespace {

/// True when an MPI launcher (mpirun, mpiexec) started this process. OpenMPI gives each process
/// a pseudo-terminal even when mpirun's own output goes to a file, so isatty() cannot tell
/// whether a person watches the progress line there.
bool launched_by_mpi() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(name) != nullptr) return true;
  return false;
}

/// Removes a directory (and all it holds) when the scope ends, by a return or an exception.
struct RemovedOnExit {
  fs::path dir;
  explicit RemovedOnExit(fs::path d) : dir(std::move(d)) {}
  RemovedOnExit(const RemovedOnExit&) = delete;
  RemovedOnExit& operator=(const RemovedOnExit&) = delete;
  ~RemovedOnExit() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

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

/// The warmup is not shorter than the schedule: the learning rate never reaches its peak. Said
/// when a run starts, not when it is resumed: a resume keeps the recorded warmup and schedule
/// (train/resume.hpp), so the advice could not be taken, and the run's start said it already.
void warn_of_long_warmup(const TrainOptions& o, std::ostream& out) {
  if (o.resume || o.warmup < o.decay_iters) return;
  out << fmt::format(
      "warning: the warmup ({} steps) is not shorter than the schedule's {} steps (--iters, or "
      "--decay-iters): the learning rate never reaches its peak and the cosine decay never "
      "starts. Use a --warmup below {} (e.g. --warmup {})\n",
      o.warmup, o.decay_iters, o.decay_iters, o.decay_iters / 10);
}

/// The sizes and recipe options set in `given` (per `set`) to another value than `saved`'s, as
/// "model.<field>".
std::vector<std::string> differing_sizes(const ModelConfig& given, const ModelGiven& set,
                                         const ModelConfig& saved) {
  using M = ModelConfig;
  std::vector<std::string> fields;
  for (const auto& [name, is_set, size] : {std::tuple{"model.d_model", set.d_model, &M::d_model},
                                           {"model.n_layers", set.n_layers, &M::n_layers},
                                           {"model.n_heads", set.n_heads, &M::n_heads},
                                           {"model.n_kv_heads", set.n_kv_heads, &M::n_kv_heads},
                                           {"model.ffn_hidden", set.ffn_hidden, &M::ffn_hidden},
                                           {"model.vocab_cap", set.vocab_cap, &M::vocab_cap}})
    if (is_set && given.*size != saved.*size) fields.push_back(name);
  if (set.qk_norm && given.qk_norm != saved.qk_norm) fields.push_back("model.qk_norm");
  if (set.mlp && given.mlp != saved.mlp) fields.push_back("model.mlp");
  if (set.logit_softcap && given.logit_softcap != saved.logit_softcap)
    fields.push_back("model.logit_softcap");
  return fields;
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
  if (resume) resume->take_recorded(o);      // the recipe and context, before they are checked
  decay_follows_iters_ = o.decay_iters < 0;  // (a time budget then sets both)
  validate_options(o);
  std::u32string text;
  if (o.chat.enabled)
    read_conversations();  // a chat fine-tune (trainer_chat.cpp)
  else
    text = read_training_text(o, out_);
  const std::size_t text_chars = text.size();
  WeightsStamp stamp;  // what the resumed weights record, checked against the training state
  if (resume)
    stamp = take_back_resumed_run(*resume);
  else if (o.chat.enabled)
    start_from_base();
  else
    make_new_model(text);
  if (o.chat.enabled) {
    render_conversations();  // chooses the context of a new fine-tune
    check_model_fits(o);
  } else {
    measure_yardstick_of(text);
    probe_text_ = default_probe(text, o.context);  // glass serve's default probe too
    corpus_ = encode_corpus(*tokenizer_, std::move(text), o, o.resume, out_);
  }
  make_optimizer_and_batches();
  if (resume) restore_training_state(*resume, stamp);
  if (run_id_.empty()) run_id_ = new_run_id();
  if (o.saved_step != nullptr && !resume) o.saved_step->store(-1);
  make_records();
  if (run_dir_) run_dir_->prepare(run_id_, resume ? resume->relink() : std::string());
  if (o.overwrite && o.comm.is_root() && holds_checkpoint(o.out_dir))
    out_ << "note: --overwrite: the run in " << o.out_dir
         << " will be replaced by this one at its first save\n";
  if (!(o.time_budget_s > 0 && !o.resume)) warn_of_long_warmup(o, out_);  // else once fitted
  print_banner(text_chars);
  out_.flush();
}

Trainer::~Trainer() = default;

// ---- model and tokenizer: from the save resumed --------------------------------------------------
Trainer::WeightsStamp Trainer::take_back_resumed_run(const Resume& resume) {
  TrainOptions& o = options_;
  if (!resume.note().empty()) out_ << "note: " << resume.note() << "\n";
  resume.require_save();
  Checkpoint saved = load_checkpoint(resume.save_dir());
  if (!saved.warning().empty()) out_ << "warning: " << saved.warning() << "\n";
  tokenizer_.emplace(saved.tokenizer());  // a BPE run continues with its saved vocabulary
  if (o.tokenizer_given && o.tokenizer != tokenizer_->kind())
    out_ << "note: the run continues with the checkpoint's tokenizer ("
         << tokenizer_kind_name(tokenizer_->kind()) << "), not " << tokenizer_kind_name(o.tokenizer)
         << "\n";
  o.tokenizer = tokenizer_->kind();
  model_ = saved.release_model();
  // A resumed run keeps its checkpoint's ops path (the exact resume), unless another was chosen.
  if (o.ops_given) model_->set_ops_path(o.model.ops_path);
  ignored_model_fields_ = differing_sizes(o.model, o.model_given, model_->config());
  o.model = model_->config();
  check_model_fits(o);
  return {saved.weights_step(), saved.run_id()};
}

// ---- model and tokenizer: new --------------------------------------------------------------------
void Trainer::make_new_model(const std::u32string& text) {
  TrainOptions& o = options_;
  tokenizer_.emplace(new_tokenizer(text, o));
  check_model_fits(o);
  model_ = std::make_unique<Decoder>(o.model, o.seed);
  if (o.zero_init_out) zero_output_projections(*model_);
}

// ---- the yardsticks beside the validation loss -------------------------------------------------
void Trainer::measure_yardstick_of(const std::u32string& text) {
  if (!options_.comm.is_root() || options_.overfit_batch) return;
  const std::size_t cut = split_point(text, tokenizer_->kind());  // as encode_corpus splits
  train_chars_ = cut;
  val_chars_ = text.size() - cut;
  const std::size_t from = cut - std::min(cut, kYardstickTrainChars);
  try {
    yardstick_ = measure_yardstick(text.substr(from, cut - from),
                                   text.substr(cut, kYardstickValChars));  // no copy of more
  } catch (const std::exception&) {  // an empty split, no memory for xz: the run goes on
  }
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
  if (chat_) {  // conversations, each row one padded with its loss mask
    const std::int32_t pad = *tokenizer_->special_id(SpecialToken::kImEnd);
    auto rows = [&](const std::vector<ChatTokens>& set, std::uint64_t seed) {
      return std::make_unique<ChatBatches>(set, o.batch_size, o.context, pad, seed);
    };
    train_batches_ = rows(chat_->train_tokens, o.seed + 1);
    eval_train_batches_ = rows(chat_->train_tokens, o.seed + 2);
    eval_val_batches_ = rows(chat_->val_tokens, o.seed + 2);
    chat_->val_rows = rows(chat_->val_tokens, o.seed + 2);
    eval_start_state_ = eval_train_batches_->state();
    sample_rng_.seed(o.seed + 3);
    return;
  }
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
void Trainer::refuse_finished_run(const Resume& resume, long saved_step) const {
  const TrainOptions& o = options_;
  const std::optional<TrainRecipe> recorded = load_train_recipe(resume.save_dir());
  // iters left out: the step count is the save's, so the run has nothing left to train.
  const bool from_save = o.iters_from_save && recorded && recorded->iters == o.iters;
  throw FinishedRunError(o.out_dir, saved_step, o.iters, !from_save,
                         from_save ? recorded->time_budget_s : 0.0);
}

void Trainer::restore_training_state(const Resume& resume, const WeightsStamp& stamp) {
  const TrainOptions& o = options_;
  const TrainState state =
      load_train_state(resume.save_dir(), *optimizer_, stamp.step, stamp.run_id, muon_.get());
  if (state.step >= o.iters) refuse_finished_run(resume, state.step);
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
std::vector<std::int32_t> Trainer::interp_probe_ids() const {
  // The validation split from its first token that is not whitespace alone (the rule of the
  // attention probe, default_probe), looked for in its first 4096 tokens; a split that is blank
  // there is taken as it is.
  const std::size_t n = ProbeSpec{}.tokens + 1;
  const std::vector<std::int32_t> head = validation_ids(n + 4096);
  std::size_t skip = blank_prefix_tokens(*tokenizer_, head);
  if (head.size() - skip < std::min<std::size_t>(n, 3)) skip = 0;
  return {head.begin() + static_cast<std::ptrdiff_t>(skip),
          head.begin() + static_cast<std::ptrdiff_t>(std::min(head.size(), skip + n))};
}

void Trainer::make_records() {
  observers_.insert(observers_.begin(), {&log_record_, &steps_record_});
  if (!options_.interp_record) return;
  interp_record_ = std::make_unique<InterpRecorder>(*model_, interp_probe_ids(), options_.context,
                                                    options_.comm, run_id_, out_);
  observers_.insert(observers_.begin() + 2, interp_record_.get());
  if (probe_text_.empty() || !options_.comm.is_root()) return;  // a chat run, a blank text
  probe_record_ = std::make_unique<ProbeRecorder>(*model_, *tokenizer_, probe_text_,
                                                  options_.context, run_id_, out_);
  observers_.insert(observers_.begin() + 3, probe_record_.get());
}

// ---- a time budget: the step count that fits, from a trial that is undone ----------------------
Trainer::TrialTimes Trainer::time_trial() {
  const TrainOptions& o = options_;
  using Clock = std::chrono::steady_clock;
  auto seconds_since = [](Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  // The trial's timed steps (after one untimed step, which pays for the first allocations): at
  // least 5, and for 2% of the budget (at most 2 s, 1000 steps) so that a machine shared with
  // other programs shows its share, not one quiet instant; never past 5% of the budget. Each
  // is timed with the row the loop records of it (steps.csv).
  constexpr long kMinTrialSteps = 5, kMaxTrialSteps = 1000;
  const double trial_target_s = std::min(0.02 * o.time_budget_s, 2.0);
  const auto trial_start = Clock::now();
  train_step(0);
  double step_s = 0;
  long timed = 0;
  std::string rows;
  for (bool more = true; more;) {
    const auto t0 = Clock::now();
    const double loss = train_step(1 + timed);
    rows += step_csv_line({2 + timed, loss, schedule_.at(1 + timed), last_grad_norm_, 0, 0});
    step_s += seconds_since(t0);
    ++timed;
    const double spent = seconds_since(trial_start);
    const bool done = spent > 0.05 * o.time_budget_s || timed >= kMaxTrialSteps ||
                      (timed >= kMinTrialSteps && spent >= trial_target_s);
    more = o.comm.max(done ? 1 : 0) == 0;  // the processes step together: all stop when one does
  }
  // An evaluation with its sample and save: the save's model and training state (with Muon's
  // momentum buffers in a Muon run, as every save of the run writes them) and its
  // interpretability record are written to a directory of the system's temporary folder,
  // removed at once.
  const auto t0 = Clock::now();
  evaluate();
  if (interp_record_) interp_record_->before_save(step_);  // measured only: nothing is kept
  if (o.comm.is_root()) {
    if (o.sample_tokens > 0) sample();
    const fs::path trial_save =
        fs::temp_directory_path() / fmt::format("glass-time-trial-{}", ::getpid());
    const RemovedOnExit removed(trial_save);  // also when the save throws (a full disk)
    fs::create_directories(trial_save);
    save_model_files(trial_save.string(), *model_, *tokenizer_, "{}", step_, run_id_);
    save_train_state(trial_save.string(), *optimizer_, training_state(), muon_.get());
  }
  // Every process chooses the same N: from the mean of their times.
  std::vector<double> times{step_s / static_cast<double>(timed), seconds_since(t0),
                            seconds_since(created_)};
  o.comm.all_reduce_sum(times);
  for (double& t : times) t /= o.comm.size();
  return {times[0], times[1], times[2], timed + 1};
}

void Trainer::fit_to_time_budget() {
  TrainOptions& o = options_;
  // The trial trains from the run's first state, which is then restored: the weights are put
  // back and the optimizers (AdamW's moments, Muon's momentum buffers), the batches and the
  // generators made afresh, so what follows is the run `iters` N makes, bit for bit. Its
  // steps are not kept, only their time.
  std::vector<Array> first_weights;
  for (Tensor& p : model_->parameters()) first_weights.push_back(p.value());
  const TrialTimes t = time_trial();
  // The budget counts from the Trainer's construction: the text read, the trial, the loop.
  const double left_s = std::max(0.0, o.time_budget_s - t.spent_s);
  const TimeBudgetFit fit =
      fit_time_budget(left_s, t.step_s, t.eval_s, o.eval_every, !o.eval_every_given);
  auto params = model_->parameters();
  for (std::size_t i = 0; i < params.size(); ++i)
    std::copy(first_weights[i].begin(), first_weights[i].end(), params[i].value().begin());
  o.iters = fit.steps;
  o.eval_every = fit.eval_every;
  if (decay_follows_iters_) o.decay_iters = fit.steps;
  overfit_x_ = Ids();
  overfit_y_ = Ids();
  make_optimizer_and_batches();  // the schedule to N; optimizer, batches and generators afresh
  out_ << fmt::format(
      "time budget {}: {} steps at ~{:.3g} s/step and {} evaluations (every {} steps) at ~{:.3g} "
      "s (timed on {} trial steps, then undone; {:.3g} s spent before the first step)\n",
      duration_text(o.time_budget_s), fit.steps, t.step_s,
      evaluations_in(fit.steps, fit.eval_every), fit.eval_every, t.eval_s, t.trial_steps,
      t.spent_s);
  if (fit.capped) out_ << budget_cap_note(left_s, fit, t.step_s, t.eval_s) << "\n";
  if (fit.steps == 1 &&
      t.step_s + static_cast<double>(evaluations_in(1, fit.eval_every)) * t.eval_s > left_s)
    out_ << fmt::format(
        "warning: not even one step and its evaluations fit in {}: training 1 step\n",
        duration_text(o.time_budget_s));
  warn_of_long_warmup(o, out_);
}

}  // namespace glass
