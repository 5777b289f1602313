// The training loop of `glass train`. See train/trainer.hpp.

#include "train/trainer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "autograd/ops.hpp"
#include "autograd/tape.hpp"
#include "autograd/threads.hpp"
#include "data/text.hpp"
#include "checkpoint/atomic_file.hpp"
#include "checkpoint/checkpoint.hpp"
#include "checkpoint/manifest.hpp"
#include "checkpoint/run_dir.hpp"
#include "train/clip.hpp"
#include "train/distributed.hpp"
#include "inspect/loss_plot.hpp"
#include "train/loss_notes.hpp"
#include "checkpoint/model_size.hpp"
#include "checkpoint/safetensors.hpp"
#include "sample/sampler.hpp"

namespace glass {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// "1h02m", "3m12s", "45s".
std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const long s = static_cast<long>(seconds + 0.5);
  if (s >= 3600) return fmt::format("{}h{:02d}m", s / 3600, (s % 3600) / 60);
  if (s >= 60) return fmt::format("{}m{:02d}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

/// "NaN", "inf" or "-inf" (printf's "-nan" confuses).
std::string non_finite_name(double x) {
  if (std::isnan(x)) return "NaN";
  return x > 0 ? "inf" : "-inf";
}

/// How a stop request is called in messages: the signal that set the stop flag.
std::string stop_signal_name(std::sig_atomic_t flag) {
  return flag == SIGTERM ? "SIGTERM" : "Ctrl-C (SIGINT)";
}

/// The shortest text whose validation part (the last 10%) still holds context + 1 characters.
std::size_t min_text_length(std::size_t context) {
  std::size_t n = context + 1;
  while (n - static_cast<std::size_t>(static_cast<double>(n) * 0.9) < context + 1) ++n;
  return n;
}

void check_options(TrainOptions& o) {
  auto positive = [](long v, const char* flag) {
    if (v <= 0) throw std::invalid_argument(fmt::format("{} must be a positive integer, got {}", flag, v));
  };
  positive(o.iters, "--iters");
  positive(static_cast<long>(o.batch_size), "--batch-size");
  positive(static_cast<long>(o.context), "--context");
  positive(o.eval_every, "--eval-every");
  positive(o.eval_iters, "--eval-iters");
  if (o.eval_iters > kMaxEvalIters)
    throw std::invalid_argument(fmt::format("--eval-iters must be at most {} (got {}): each "
                                            "evaluation runs that many batches per split",
                                            kMaxEvalIters, o.eval_iters));
  if (o.sample_tokens > kMaxSampleTokens)
    throw std::invalid_argument(fmt::format("--sample-tokens must be at most {} (got {})",
                                            kMaxSampleTokens, o.sample_tokens));
  if (o.resume && o.overfit_batch)
    throw std::invalid_argument("--overfit-batch is a check of the training loop, not a run to "
                                "continue: leave out --resume");
  if (o.resume && o.overwrite)
    throw std::invalid_argument("--resume and --overwrite contradict each other: --resume continues "
                                "the run in --out, --overwrite starts a new one over it");
  if (o.decay_iters < 0) o.decay_iters = o.iters;
  positive(o.decay_iters, "--decay-iters");
  if (o.warmup < 0) throw std::invalid_argument("--warmup must be >= 0");
  if (!(o.lr > 0) || !std::isfinite(o.lr)) throw std::invalid_argument("--lr must be a positive number");
  if (o.min_lr < 0) o.min_lr = o.lr / 10;
  if (o.min_lr > o.lr) throw std::invalid_argument(fmt::format("--min-lr ({}) must not exceed --lr ({})", o.min_lr, o.lr));
  if (o.weight_decay < 0) throw std::invalid_argument("--weight-decay must be >= 0");
  if (o.grad_clip < 0) throw std::invalid_argument("--grad-clip must be >= 0 (0 = off)");
  if (o.batch_size % static_cast<std::size_t>(o.comm.size()) != 0)
    throw std::invalid_argument(fmt::format(
        "--batch-size {} is the batch of all {} processes together and must divide evenly among "
        "them (each takes batch-size / {} windows): use a multiple of {}",
        o.batch_size, o.comm.size(), o.comm.size(), o.comm.size()));
}

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

/// Refuses a text file whose loading cannot fit in the memory available now. Reading holds the
/// file's bytes plus 4 bytes per character (the decoded code points); encoding holds those 4
/// plus 1 or 2 per id: about 5 bytes per byte of the file at the peak (measured: 5.2 for a 40 MB
/// text), after which only the ids stay. Checked before reading, so the message comes at once.
void check_text_fits_in_memory(const std::string& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) return;  // not a regular file (a pipe): load_text reports what is wrong
  const double need = 5.0 * static_cast<double>(size);
  const double have = available_memory_bytes();
  if (have > 0 && need > have)
    throw std::runtime_error(fmt::format(
        "{} is {}; reading and encoding it needs about {} of memory but only {} is available now. "
        "Use a smaller part of the text or free some memory.",
        path, format_bytes(static_cast<double>(size)), format_bytes(need), format_bytes(have)));
}

/// The threads of a data-parallel step: --threads, but no more than this process's rows of the
/// batch (with mpirun each rank takes batch / ranks of them), so that no replica goes unused.
std::size_t step_threads(const TrainOptions& o) {
  const std::size_t rows = o.batch_size / static_cast<std::size_t>(std::max(o.comm.size(), 1));
  return std::max<std::size_t>(1, std::min(num_threads(), rows));
}

/// Refuses a model or batch that cannot fit in this machine's memory (a typo such as
/// --d-model 1000000000 or --batch-size 100000000), before allocating anything big.
void check_fits_in_memory(const TrainOptions& o) {
  const double need = training_memory_lower_bound(o.model, o.batch_size, o.context,
                                                  step_threads(o) - 1);
  const double have = available_memory_bytes();
  if (have > 0 && need > have)
    throw std::invalid_argument(fmt::format(
        "this run needs at least {} of memory ({:.4g} parameters, batch {} x context {}) but only "
        "{} is available now. Use a smaller model (--d-model, --n-layers, --ffn-hidden) or a smaller "
        "--batch-size or --context.",
        format_bytes(need), parameter_count(o.model), o.batch_size, o.context, format_bytes(have)));
}

/// A hint after the note on unknown characters when they are more than 1% of the text: the
/// model can neither learn nor write them. "" otherwise.
std::string vocab_cap_hint(std::size_t unknown, std::size_t text_chars, std::size_t vocab_cap,
                           bool resuming) {
  if (static_cast<double>(unknown) <= 0.01 * static_cast<double>(text_chars)) return "";
  if (resuming)
    return "hint: more than 1% of the text is unknown to this checkpoint's vocabulary, which a "
           "resumed run cannot grow; a new run with a larger --vocab-cap keeps more characters\n";
  return fmt::format("hint: more than 1% of the text becomes the unknown token, which the model "
                     "can neither learn nor write. Raise --vocab-cap (now {}) to keep more "
                     "characters; each costs one row of the embedding and of the output layer\n",
                     vocab_cap);
}

}  // namespace

void Trainer::lock_out_dir() {
  const TrainOptions& o = options_;
  lock_ = std::make_unique<RunLock>(o.out_dir);  // FileError naming the other trainer's pid
  if (!lock_->warning().empty()) out_ << "warning: " << lock_->warning() << "\n";
  if (!o.resume && !o.overwrite && holds_checkpoint(o.out_dir))
    throw std::runtime_error(fmt::format(
        "{} already holds a training run; a new run there would replace it. To continue that run, "
        "add --resume; to start over and replace it, add --overwrite; or give a fresh directory "
        "with --out.",
        o.out_dir));
}

Trainer::Trainer(TrainOptions options, std::ostream& out)
    : options_(std::move(options)), out_(options_.comm.is_root() ? out : silent()) {
  TrainOptions& o = options_;
  const bool root = o.comm.is_root();  // with mpirun, only rank 0 touches out_dir
  check_options(o);
  // The progress line is rewritten in place (CR, ESC[K) only on a terminal; a file, a pipe or
  // mpirun's output gets plain lines.
  is_tty_ = (&out_ == &std::cout) && ::isatty(fileno(stdout)) && o.comm.size() == 1 && !launched_by_mpi();
  // One trainer per run directory, and no silent replacement of a run: lock out_dir before
  // reading or judging what it holds (a new directory is locked when it is created, below).
  if (root && fs::is_directory(o.out_dir)) lock_out_dir();

  // ---- text ---------------------------------------------------------------------------------
  TextInfo info;
  check_text_fits_in_memory(o.data_path);
  std::u32string text = load_text(o.data_path, &info);
  const std::size_t text_chars = text.size();
  if (info.had_bom) out_ << "note: dropped the UTF-8 byte-order mark at the start of " << o.data_path << "\n";
  if (info.crlf_converted > 0)
    out_ << "note: converted " << info.crlf_converted << " CRLF line endings to LF\n";
  // A fresh model's context length is known now: say that first, not "the text is too short".
  if (!o.resume && o.context > o.model.context_length)
    throw std::invalid_argument(fmt::format(
        "--context {} is longer than the model's context length {}", o.context, o.model.context_length));
  const std::size_t need = min_text_length(o.context);
  if (text_chars < need)
    throw std::runtime_error(fmt::format(
        "{} holds {} characters; with --context {} it must hold at least {} (the last 10% is "
        "the validation split and needs context + 1 = {} characters). Use a longer text or a "
        "smaller --context.",
        o.data_path, text_chars, o.context, need, o.context + 1));

  // ---- model and tokenizer: fresh, or from the checkpoint -----------------------------------
  TrainState state;
  std::string weights_step;  // the step model.safetensors records, checked against the state's
  std::string weights_run_id;  // the run model.safetensors belongs to, checked likewise
  const bool resuming = o.resume;
  // The save to resume from: the one DIR/current points to, or the newest complete one when
  // the link was lost (restored below, before any cleanup).
  std::string resume_dir = o.out_dir;
  std::string relink;
  std::error_code no_link;
  if (resuming && fs::is_directory(o.out_dir) && !has_train_state(o.out_dir) &&
      !fs::exists(fs::symlink_status(fs::path(o.out_dir) / kCurrentLink, no_link))) {
    relink = newest_complete_save(o.out_dir);
    if (!relink.empty()) {
      resume_dir = (fs::path(o.out_dir) / relink).string();
      out_ << "note: " << o.out_dir << "/" << kCurrentLink << " (the link to the last complete "
           << "save) is missing; resuming from the newest complete save, " << relink
           << ", and restoring the link\n";
    }
  }
  if (resuming) {
    if (!has_train_state(resume_dir))
      throw std::runtime_error(fmt::format(
          "--resume: {} holds no checkpoint with a training state (config.json, model.safetensors, "
          "train_state.json, train_state.safetensors); run without --resume first",
          o.out_dir));
    LoadedModel loaded = load_checkpoint(resume_dir);
    if (!loaded.warning.empty()) out_ << "warning: " << loaded.warning << "\n";
    weights_step = loaded.weights_step;
    weights_run_id = loaded.run_id;
    tokenizer_ = std::move(loaded.tokenizer);
    model_ = std::move(loaded.model);
    // A resumed run keeps its checkpoint's attention path (the exact resume), unless
    // --attention asks for another.
    if (o.attention_given) model_->set_ops_path(o.model.ops_path);
    o.model = model_->config();
  } else {
    tokenizer_ = Tokenizer::from_text(text, o.model.vocab_cap);
    o.model.vocab_size = tokenizer_.vocab_size();
    o.model.validate();  // std::invalid_argument naming the bad size, before any allocation
  }
  if (o.context > o.model.context_length)
    throw std::invalid_argument(fmt::format(
        "--context {} is longer than the model's context length {}", o.context, o.model.context_length));
  check_fits_in_memory(o);
  if (!resuming) model_ = std::make_unique<Decoder>(o.model, o.seed);

  // A text with more distinct characters than the vocabulary cap keeps the most frequent ones;
  // the rarest become the unknown token (id 0). That also holds when resuming a checkpoint whose
  // vocabulary is full. Otherwise a character the checkpoint never saw is an error.
  const bool vocab_full = tokenizer_.vocab_size() >= o.model.vocab_cap;
  auto ids = std::make_shared<TokenIds>();
  try {
    std::size_t unknown = 0;
    *ids = tokenizer_.encode_compact(text, /*map_unknown=*/!resuming || vocab_full, &unknown);
    if (unknown > 0)
      out_ << fmt::format(
          "note: {} has more distinct characters than the vocabulary holds ({} with the unknown "
          "id 0); {} occurrences of the rarest ones ({:.2f}% of the text) become the unknown token\n",
          o.data_path, o.model.vocab_cap, unknown,
          100.0 * static_cast<double>(unknown) / static_cast<double>(text_chars));
    if (unknown > 0) out_ << vocab_cap_hint(unknown, text_chars, o.model.vocab_cap, resuming);
  } catch (const UnknownCharacterError& e) {
    throw std::runtime_error(fmt::format("{} does not match the checkpoint's vocabulary: {}",
                                         o.data_path, e.what()));
  }
  // The text is no longer needed: only the ids (1 or 2 bytes per character) are kept, once,
  // shared by the samplers of both splits.
  text = std::u32string();
  ids->shrink_to_fit();
  corpus_ = ids;
  n_train_ = static_cast<std::size_t>(std::floor(static_cast<double>(corpus_->size()) * 0.9));  // as split_train_val

  // ---- optimizer, schedule, batches -----------------------------------------------------------
  optimizer_ = std::make_unique<AdamW>(model_->named_parameters(),
                                       AdamWConfig{o.beta1, o.beta2, 1e-8, o.weight_decay});
  parallel_ = std::make_unique<DataParallel>(*model_, step_threads(o));  // --threads (autograd/threads.hpp)
  schedule_ = LrSchedule{o.lr, o.min_lr, o.warmup, o.decay_iters};
  const std::size_t n_all = corpus_->size();
  train_batches_ = std::make_unique<BatchSampler>(corpus_, 0, n_train_, o.batch_size, o.context,
                                                  o.seed + 1, "training split");
  eval_train_batches_ = std::make_unique<BatchSampler>(corpus_, 0, n_train_, o.batch_size, o.context,
                                                       o.seed + 2, "training split");
  eval_val_batches_ = std::make_unique<BatchSampler>(corpus_, n_train_, n_all, o.batch_size,
                                                     o.context, o.seed + 2, "validation split");
  eval_start_state_ = eval_train_batches_->state();
  sample_rng_.seed(o.seed + 3);

  if (resuming) {
    state = load_train_state(resume_dir, *optimizer_, weights_step, weights_run_id);
    if (state.step >= o.iters)
      throw std::invalid_argument(fmt::format(
          "--resume: the checkpoint in {} is already at step {}; pass --iters larger than that",
          o.out_dir, state.step));
    train_batches_->set_state(state.batch_rng);
    std::istringstream rng_text(state.sample_rng);
    rng_text >> sample_rng_;
    if (rng_text.fail()) throw CheckpointError(o.out_dir + "/train_state.json: bad sample_rng state");
    step_ = state.step;
    best_val_ = state.best_val;
    has_best_ = state.has_best;
    log_ = state.log;
    elapsed_before_ = state.elapsed_s;
    run_id_ = state.run_id;  // the same run goes on
    last_saved_step_ = state.step;
    // The per-step rows of the resumed save (none in a checkpoint written before steps.csv).
    // Rows numbered from 0 (older saves numbered a step by its index, not by the steps done
    // once it is) are renumbered.
    std::vector<StepRow> saved_rows =
        read_steps_csv((fs::path(checkpoint_files_dir(resume_dir)) / "steps.csv").string());
    const bool from_zero = std::any_of(saved_rows.begin(), saved_rows.end(),
                                       [](const StepRow& r) { return r.step == 0; });
    for (StepRow& r : saved_rows) {
      if (from_zero) ++r.step;
      if (r.step <= step_) steps_.push_back(r);
    }
    if (state.context != 0 && state.context != o.context)
      out_ << "warning: resuming with --context " << o.context << " but the checkpoint was trained with "
           << state.context << "\n";
  }

  if (run_id_.empty()) run_id_ = new_run_id();
  if (o.saved_step != nullptr) o.saved_step->store(last_saved_step_);

  // ---- the output directory must be writable before any training -----------------------------
  if (root) {
    ensure_writable_directory(o.out_dir);  // FileError naming the directory and the reason
    if (!lock_) lock_out_dir();
    if (!relink.empty()) {
      commit_save(o.out_dir, resume_dir);
      const std::string warning = finish_save(o.out_dir);
      if (!warning.empty()) out_ << "warning: " << warning << "\n";
    }
    // A run killed during a save leaves a step directory that never became current (and, in a
    // checkpoint of the flat layout, temporary files); the current save itself is whole.
    check_run_layout(o.out_dir);
    std::size_t stale = remove_stale_saves(o.out_dir);
    const std::vector<std::string> checkpoint_files = {
        "model.safetensors", "best.safetensors", "train_state.safetensors", "train_state.json",
        "config.json", "log.csv", "loss.html", "steps.csv"};
    stale += remove_stale_temp_files(o.out_dir, checkpoint_files);
    if (stale > 0)
      out_ << "note: removed " << stale << " incomplete save(s) or temporary file(s) left in "
           << o.out_dir << " by an interrupted run\n";
    // Complete saves of this run that are not current: a kill between a save's switch of
    // `current` and the removal of the save before it, or a save a kill kept from its switch.
    if (const std::size_t unused = remove_unused_saves(o.out_dir, run_id_); unused > 0)
      out_ << "note: removed " << unused << " complete save(s) of this run that were no longer "
           << "current, left in " << o.out_dir << " by an interrupted run\n";
    if (o.overwrite && holds_checkpoint(o.out_dir))
      out_ << "note: --overwrite: the run in " << o.out_dir << " will be replaced by this one at its "
           << "first save\n";
  }

  out_ << fmt::format(
      "data: {}, {} characters, {}; train {} / val {} characters\n"
      "model: d_model {}, {} layers, {} heads ({} kv), ffn {}, {} parameters\n"
      "recipe: {} steps, batch {} x context {}, lr {:g} -> {:g} (warmup {}, cosine to step {}), "
      "weight decay {:g}, clip {:g}, seed {}\n",
      o.data_path, text_chars, vocabulary_words(tokenizer_.vocab_size()), n_train_, corpus_->size() - n_train_,
      o.model.d_model, o.model.n_layers, o.model.n_heads, o.model.n_kv_heads, o.model.ffn_hidden,
      model_->num_parameters(), o.iters, o.batch_size, o.context, o.lr, o.min_lr, o.warmup,
      o.decay_iters, o.weight_decay, o.grad_clip, o.seed);
  if (o.comm.size() > 1)
    out_ << fmt::format("data parallel: {} processes, {} windows of each batch per process\n",
                        o.comm.size(), o.batch_size / static_cast<std::size_t>(o.comm.size()));
  if (resuming) out_ << "resuming from step " << step_ << " of " << o.out_dir << "\n";
  if (o.overfit_batch)
    out_ << "--overfit-batch: every step trains on the same batch of " << o.batch_size << " x "
         << o.context << " characters; the training loss should fall towards 0 (the model "
            "memorises it) while the validation loss does not. If it does not, the loop has a bug. "
            "The evaluations show the loss of that batch and the usual validation loss\n";
  out_.flush();
}

Trainer::~Trainer() {
  if (live_steps_fd_ >= 0) ::close(live_steps_fd_);
}

// ---- one optimizer step: the heart of training ------------------------------------------------
double Trainer::train_step(long it) {
  const double lr = schedule_.at(it);
  Ids x, y;
  if (!options_.overfit_batch) {
    train_batches_->next(x, y);                      // (B, T) inputs and next-char targets
  } else {                                           // the same batch at every step
    draw_overfit_batch();
    x = overfit_x_;
    y = overfit_y_;
  }
  const Communicator& comm = options_.comm;          // N processes (mpirun -np N), or one
  x = shard_rows(x, comm);                           // (B/N, T): this process's windows
  y = shard_rows(y, comm);

  // zero_grad, forward (B/N, T, V), cross-entropy (the mean over the B/N*T predictions) and
  // backward into every parameter's grad, on step_threads() threads (train/data_parallel.hpp).
  const double shard_loss = parallel_->loss_and_grad(x, y);
  // The mean of the N shards' gradients is the gradient of the whole batch (and likewise the loss).
  const double loss_value = average_gradients(model_->parameters(), shard_loss, comm);
  if (!std::isfinite(loss_value))  // (a shard with a non-finite loss ran no backward)
    throw NonFiniteError(fmt::format("the loss became {} at step {} (lr {:.3g})", non_finite_name(loss_value), it, lr));
  const double norm = clip_grad_norm(model_->parameters(), options_.grad_clip);
  last_grad_norm_ = norm;                            // before clipping
  if (!std::isfinite(norm))
    throw NonFiniteError(fmt::format("the gradient norm became {} at step {} (lr {:.3g})", non_finite_name(norm), it, lr));
  optimizer_->step(lr);                              // AdamW update
  return loss_value;
}

void Trainer::draw_overfit_batch() {
  if (overfit_x_.dimension() == 0) train_batches_->next(overfit_x_, overfit_y_);  // (B, T) each
}

EvalResult Trainer::evaluate() {
  NoGradGuard no_grad;
  const Communicator& comm = options_.comm;
  // The processes of a data-parallel run must hold the same weights (they take the same steps).
  if (comm.size() > 1 && !comm.same_on_all_ranks(weights_checksum(model_->parameters())))
    throw std::runtime_error(fmt::format(
        "the weights of the {} processes differ at step {}: their training diverged (a different "
        "glass binary or BLAS library on some machine?)", comm.size(), step_));
  auto mean_loss = [&](BatchSampler& batches) {
    double total = 0;
    Ids x, y;
    for (long i = 0; i < options_.eval_iters; ++i) {
      batches.next(x, y);  // each process evaluates its B/N windows of the batch
      total += parallel_->loss(shard_rows(x, comm), shard_rows(y, comm));  // checked after the sum
    }
    return total / static_cast<double>(options_.eval_iters);
  };
  // One generator, re-seeded at every evaluation, draws the training windows then the
  // validation windows (as the PyTorch twin): every evaluation sees the same batches.
  eval_train_batches_->set_state(eval_start_state_);
  std::vector<double> losses(2);
  if (!options_.overfit_batch) {
    losses[0] = mean_loss(*eval_train_batches_);
  } else {  // the train loss is that of the one batch being memorised
    draw_overfit_batch();
    losses[0] = parallel_->loss(shard_rows(overfit_x_, comm), shard_rows(overfit_y_, comm));
    Ids x, y;
    for (long i = 0; i < options_.eval_iters; ++i) eval_train_batches_->next(x, y);  // the usual
  }                                                                  // validation windows below
  eval_val_batches_->set_state(eval_train_batches_->state());
  losses[1] = mean_loss(*eval_val_batches_);
  comm.all_reduce_sum(losses);  // the mean of the N processes' means
  const EvalResult r{losses[0] / comm.size(), losses[1] / comm.size()};
  for (const auto& [loss, split] : {std::pair{r.train_loss, "training split"}, {r.val_loss, "validation split"}})
    if (!std::isfinite(loss))
      throw NonFiniteError(fmt::format("the evaluation loss on the {} became {} at step {}", split,
                                       non_finite_name(loss), step_));
  return r;
}

bool Trainer::stop_requested() {
  const int mine = options_.stop_flag != nullptr ? static_cast<int>(*options_.stop_flag) : 0;
  stop_signal_ = options_.comm.max(mine);  // every rank names the same signal
  return stop_signal_ != 0;
}

void Trainer::print_sample() {
  if (options_.sample_tokens == 0 || !options_.comm.is_root()) return;
  std::vector<std::int32_t> prompt = {tokenizer_.contains(U'\n') ? tokenizer_.id_of(U'\n') : 1};
  SamplingOptions sampling;
  sampling.temperature = 0.8;
  const auto ids = generate(*model_, prompt, options_.sample_tokens, options_.context, sampling,
                            sample_rng_);
  out_ << "---- sample (temperature 0.8) ----\n" << tokenizer_.decode_utf8(ids) << "\n----\n";
}

// The best weights of the previous save, carried into the new one: a hard link when they
// belong to this run, or rewritten with this run's id when they do not (a checkpoint written
// before run ids existed, continued with --resume: its new files carry a new id, and a
// best.safetensors without it would be refused as coming from another run).
void Trainer::keep_best(const std::string& previous_best, const std::string& best) const {
  SafetensorsContents weights = load_safetensors(previous_best);
  const auto it = weights.metadata.find("run_id");
  if (it != weights.metadata.end() && it->second == run_id_) {
    link_or_copy(previous_best, best);
    return;
  }
  weights.metadata["run_id"] = run_id_;
  save_safetensors(best, weights.tensors, weights.metadata);
}

void Trainer::save(bool also_best) {
  if (!options_.comm.is_root()) return;  // rank 0 writes for all
  const std::string& dir = options_.out_dir;
  const fs::path previous = checkpoint_files_dir(dir);  // the last complete save, if any
  std::string step_dir;
  try {
    // All files of the save go into a new step directory; one rename of the `current` link
    // then switches to it (checkpoint/run_dir.hpp).
    step_dir = begin_save(dir, step_);
    const fs::path files(step_dir);
    const nlohmann::json training = {{"context", options_.context},
                                     {"step", step_},
                                     {"run_id", run_id_},
                                     {"data", fs::path(options_.data_path).filename().string()},
                                     {"manifest", kManifestFile}};
    const std::string extra = nlohmann::json{{"training", training}}.dump();
    save_model(step_dir, *model_, tokenizer_, "model.safetensors", extra, step_, run_id_);
    if (also_best)
      link_or_copy((files / "model.safetensors").string(), (files / "best.safetensors").string());
    else if (has_best_ && fs::exists(previous / "best.safetensors"))
      keep_best((previous / "best.safetensors").string(), (files / "best.safetensors").string());
    TrainState state;
    state.step = step_;
    state.batch_rng = train_batches_->state();
    std::ostringstream rng_text;
    rng_text << sample_rng_;
    state.sample_rng = rng_text.str();
    state.best_val = best_val_;
    state.has_best = has_best_;
    state.elapsed_s = elapsed_before_ + seconds_since(run_start_);
    state.context = options_.context;
    state.log = log_;
    state.run_id = run_id_;
    state.has_recipe = true;
    state.recipe = {options_.lr,     options_.min_lr,      options_.grad_clip,
                    options_.warmup, options_.decay_iters, options_.batch_size};
    save_train_state(step_dir, *optimizer_, state);
    write_file_atomic((files / "log.csv").string(), log_csv(log_));
    write_file_atomic((files / "steps.csv").string(), steps_csv(steps_));
    // Last: the checksums of every file above (checkpoint/manifest.hpp); a save without them
    // never becomes current.
    write_manifest(step_dir, run_id_, step_);
    commit_save(dir, step_dir);
  } catch (const std::exception& e) {
    if (!step_dir.empty()) {
      std::error_code ec;
      fs::remove_all(step_dir, ec);
    }
    throw CheckpointError(fmt::format(
        "saving the checkpoint of step {} failed: {}. {}", step_, e.what(),
        last_saved_step_ >= 0
            ? fmt::format("The last complete checkpoint in {} (step {}) is kept; fix the problem "
                          "(e.g. free disk space) and continue it with --resume.",
                          dir, last_saved_step_)
            : std::string("No checkpoint of this run was complete yet.")));
  }
  last_saved_step_ = step_;
  if (options_.saved_step != nullptr) options_.saved_step->store(step_);
  const std::string previous_save =
      previous == fs::path(dir) ? std::string() : previous.filename().string();
  const std::string warning = finish_save(dir, previous_save);
  if (!warning.empty()) out_ << "warning: " << warning << "\n";
  // Earlier saves a reader was still using when they were replaced, now released.
  remove_unused_saves(dir, run_id_);
}

void Trainer::print_progress(long it, double loss, double lr, double tokens_per_s, double eta_s) {
  const std::string line =
      fmt::format("step {:>{}}/{} | loss {:.4f} | lr {:.2e} | {:.0f} tok/s | ETA {}", it,
                  std::to_string(options_.iters).size(), options_.iters, loss, lr, tokens_per_s,
                  format_duration(eta_s));
  if (is_tty_)
    out_ << "\r" << line << "\033[K" << std::flush;  // rewrite the same line; clear its tail
  else
    out_ << line << "\n" << std::flush;
}

// The live steps.csv starts from the rows of the last save (all of them on --resume, none for a
// new run), so it never holds steps that were not saved; each step then appends one whole line
// with one write(2), so a reader following the file sees complete lines.
void Trainer::open_live_steps() {
  if (!options_.comm.is_root()) return;  // with mpirun, only rank 0 writes files
  const std::string path = (fs::path(options_.out_dir) / "steps.csv").string();
  write_file_atomic(path, steps_csv(steps_));
  live_steps_fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (live_steps_fd_ < 0)
    throw FileError(fmt::format("cannot open '{}' to append the per-step log: {}", path,
                                std::strerror(errno)));
}

void Trainer::append_step(const StepRow& row) {
  steps_.push_back(row);
  if (live_steps_fd_ < 0) return;
  const std::string line = step_csv_line(row);
  // A full disk may take part of the line (a short write, errno untouched): the rest is written
  // again, and that write's errno (ENOSPC) is the one reported.
  int err = file_op_fault("append", options_.out_dir + "/" + kStepsFile);
  for (std::size_t done = 0; err == 0 && done < line.size();) {
    const ssize_t n = ::write(live_steps_fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) err = n < 0 ? errno : EIO;
    else done += static_cast<std::size_t>(n);
  }
  if (err != 0) {
    // The live copy is for watching; the saves keep the complete log. Say so once and go on.
    out_ << "\nwarning: cannot append to " << options_.out_dir << "/steps.csv ("
         << std::strerror(err) << "); the per-step log is still written at every save\n";
    ::close(live_steps_fd_);
    live_steps_fd_ = -1;
  }
}

void Trainer::print_evaluation_notes(long it) {
  if (it == 0 && log_.size() == 1)
    out_ << step_zero_note(log_.front().train_loss, tokenizer_.vocab_size());
  // --overfit-batch: a validation loss rising while the batch is memorised is what the check
  // expects (the header says so), not overfitting to warn about.
  if (!options_.overfit_batch) out_ << evaluation_note(log_);
}

TrainResult Trainer::run() {
  const TrainOptions& o = options_;
  run_start_ = Clock::now();
  const double tokens_per_step = static_cast<double>(o.batch_size * o.context);
  double train_seconds = 0;      // time in train_step since the last eval (for tokens/s)
  long steps_since_eval = 0;
  double mean_step_s = 0;        // running mean step time (for the ETA)
  long steps_timed = 0;
  auto last_print = Clock::now() - std::chrono::seconds(10);
  const long print_every = std::max(1L, std::min(o.eval_every, 50L));  // non-TTY progress lines
  TrainResult result;
  open_live_steps();

  for (long it = step_;; ++it) {
    step_ = it;
    if (stop_requested()) {
      if (is_tty_) out_ << "\n";
      out_ << "interrupted at step " << it << " (" << stop_signal_name(stop_signal_)
           << "): saving a checkpoint in " << o.out_dir << "\n";
      save(false);
      result.interrupted = true;
      result.stop_signal = stop_signal_;
      break;
    }
    const bool eval_due = it % o.eval_every == 0 || it == o.iters;
    if (eval_due && (log_.empty() || log_.back().step != it)) {
      const EvalResult e = evaluate();
      LogRow row;
      row.step = it;
      row.lr = schedule_.at(it);  // the lr of the step about to be taken (min_lr at the end)
      row.train_loss = e.train_loss;
      row.val_loss = e.val_loss;
      row.tokens_per_s = train_seconds > 0 ? tokens_per_step * steps_since_eval / train_seconds : 0;
      row.elapsed_s = elapsed_before_ + seconds_since(run_start_);
      log_.push_back(row);
      result.last_eval = e;
      const bool best = !has_best_ || e.val_loss < best_val_;
      if (best) {
        best_val_ = e.val_loss;
        has_best_ = true;
      }
      if (is_tty_) out_ << "\r\033[K";
      out_ << fmt::format("step {}: {} {:.4f}, val loss {:.4f} (gap {:+.4f}){} | {:.1f} s\n", it,
                          o.overfit_batch ? "loss of the one batch" : "train loss", e.train_loss,
                          e.val_loss, e.val_loss - e.train_loss,
                          best ? " (best so far)" : "", row.elapsed_s);
      print_evaluation_notes(it);
      if (stop_requested()) {
        out_ << stop_signal_name(stop_signal_) << " arrived during the evaluation at step " << it
             << "; the evaluation was finished first. Saving a checkpoint in " << o.out_dir << "\n";
        save(best);
        result.interrupted = true;
        result.stop_signal = stop_signal_;
        break;
      }
      print_sample();
      save(best);
      train_seconds = 0;
      steps_since_eval = 0;
    }
    if (it >= o.iters) break;

    const auto t0 = Clock::now();
    const double loss = train_step(it);
    const double dt = seconds_since(t0);
    append_step({it + 1, loss, schedule_.at(it), last_grad_norm_, dt > 0 ? tokens_per_step / dt : 0,
                 elapsed_before_ + seconds_since(run_start_)});
    train_seconds += dt;
    ++steps_since_eval;
    mean_step_s += (dt - mean_step_s) / static_cast<double>(++steps_timed);
    const long done = it + 1;
    const bool print_now = is_tty_ ? seconds_since(last_print) > 0.1 || done == o.iters
                                   : done % print_every == 0 || done == o.iters;
    if (print_now) {
      last_print = Clock::now();
      print_progress(done, loss, schedule_.at(it), tokens_per_step / mean_step_s,
                     mean_step_s * static_cast<double>(o.iters - done));
    }
  }
  if (is_tty_) out_ << "\r\033[K";
  if (!result.interrupted && !o.overfit_batch)
    out_ << "\n" << final_summary(log_, tokenizer_.vocab_size(), o.iters);
  if (o.overfit_batch && !steps_.empty())
    out_ << "\n" << overfit_batch_note(steps_.front().loss, steps_.back().loss, steps_.size());

  // The loss curve of the whole run (including before a resume).
  LossCurve curve;
  curve.title = "GlassLLM training loss: " + fs::path(o.data_path).filename().string();
  for (const LogRow& r : log_)
    curve.evals.push_back({static_cast<double>(r.step), r.train_loss, r.val_loss});
  for (const StepRow& r : steps_) curve.steps.push_back({static_cast<double>(r.step), r.loss, r.lr});
  curve.vocab_size = tokenizer_.vocab_size();
  if (o.comm.is_root())
    write_file_atomic((fs::path(o.out_dir) / "loss.html").string(), loss_plot_html(curve));

  result.step = step_;
  result.best_val = best_val_;
  if (!log_.empty()) result.last_eval = {log_.back().train_loss, log_.back().val_loss};
  return result;
}

}  // namespace glass
