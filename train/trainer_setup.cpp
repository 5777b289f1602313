// Building a Trainer (train/trainer.hpp): the checks of the options and of the memory, the text,
// the model and tokenizer (fresh, or from the save --resume continues), the batches and the
// training state, and the run directory made ready, before any step is taken.

#include "train/trainer.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>

#include <fmt/format.h>

#include "autograd/threads.hpp"
#include "checkpoint/checkpoint.hpp"
#include "checkpoint/checkpoint_files.hpp"
#include "checkpoint/model_size.hpp"
#include "checkpoint/run_dir.hpp"
#include "data/text.hpp"

namespace glass {

namespace fs = std::filesystem;

namespace {

/// Where a BPE run splits its text into training and validation: the first space at or after
/// 90% of the characters (so that no token crosses the cut), or 90% when no space follows.
std::size_t bpe_split_point(const std::u32string& text) {
  const std::size_t at =
      static_cast<std::size_t>(std::floor(static_cast<double>(text.size()) * 0.9));
  const std::size_t space = text.find(U' ', at);
  return space == std::u32string::npos ? at : space;
}

/// The shortest text whose validation part (the last 10%) still holds context + 1 characters.
std::size_t min_text_length(std::size_t context) {
  std::size_t n = context + 1;
  while (n - static_cast<std::size_t>(static_cast<double>(n) * 0.9) < context + 1) ++n;
  return n;
}

void check_options(TrainOptions& o) {
  auto positive = [](long v, const char* flag) {
    if (v <= 0)
      throw std::invalid_argument(fmt::format("{} must be a positive integer, got {}", flag, v));
  };
  positive(o.iters, "--iters");
  positive(static_cast<long>(o.batch_size), "--batch-size");
  positive(static_cast<long>(o.context), "--context");
  positive(o.eval_every, "--eval-every");
  positive(o.eval_iters, "--eval-iters");
  if (o.eval_iters > kMaxEvalIters)
    throw std::invalid_argument(
        fmt::format("--eval-iters must be at most {} (got {}): each "
                    "evaluation runs that many batches per split",
                    kMaxEvalIters, o.eval_iters));
  if (o.sample_tokens > kMaxSampleTokens)
    throw std::invalid_argument(fmt::format("--sample-tokens must be at most {} (got {})",
                                            kMaxSampleTokens, o.sample_tokens));
  if (o.resume && o.overfit_batch)
    throw std::invalid_argument(
        "--overfit-batch is a check of the training loop, not a run to "
        "continue: leave out --resume");
  if (o.resume && o.overwrite)
    throw std::invalid_argument(
        "--resume and --overwrite contradict each other: --resume continues "
        "the run in --out, --overwrite starts a new one over it");
  if (o.decay_iters < 0) o.decay_iters = o.iters;
  positive(o.decay_iters, "--decay-iters");
  if (o.warmup < 0) throw std::invalid_argument("--warmup must be >= 0");
  if (!(o.lr > 0) || !std::isfinite(o.lr))
    throw std::invalid_argument("--lr must be a positive number");
  if (o.min_lr < 0) o.min_lr = o.lr / 10;
  if (o.min_lr > o.lr)
    throw std::invalid_argument(
        fmt::format("--min-lr ({}) must not exceed --lr ({})", o.min_lr, o.lr));
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
  const double need =
      training_memory_lower_bound(o.model, o.batch_size, o.context, step_threads(o) - 1);
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
  return fmt::format(
      "hint: more than 1% of the text becomes the unknown token, which the model "
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
  is_tty_ =
      (&out_ == &std::cout) && ::isatty(fileno(stdout)) && o.comm.size() == 1 && !launched_by_mpi();
  // One trainer per run directory, and no silent replacement of a run: lock out_dir before
  // reading or judging what it holds (a new directory is locked when it is created, below).
  if (root && fs::is_directory(o.out_dir)) lock_out_dir();

  std::u32string text = read_text();
  const std::size_t text_chars = text.size();
  ResumePoint from = find_resume_point();
  load_or_create_model(text, from);
  encode_corpus(std::move(text));
  make_optimizer_and_batches();
  if (o.resume) restore_training_state(from);
  if (run_id_.empty()) run_id_ = new_run_id();
  if (o.saved_step != nullptr) o.saved_step->store(last_saved_step_);
  if (root) prepare_out_dir(from);
  print_banner(text_chars);
  out_.flush();
}

Trainer::~Trainer() {
  if (live_steps_fd_ >= 0) ::close(live_steps_fd_);
}

// ---- text ---------------------------------------------------------------------------------------
std::u32string Trainer::read_text() {
  const TrainOptions& o = options_;
  TextInfo info;
  check_text_fits_in_memory(o.data_path);
  std::u32string text = load_text(o.data_path, &info);
  const std::size_t text_chars = text.size();
  if (info.had_bom)
    out_ << "note: dropped the UTF-8 byte-order mark at the start of " << o.data_path << "\n";
  if (info.crlf_converted > 0)
    out_ << "note: converted " << info.crlf_converted << " CRLF line endings to LF\n";
  // A fresh model's context length is known now: say that first, not "the text is too short".
  if (!o.resume && o.context > o.model.context_length)
    throw std::invalid_argument(
        fmt::format("--context {} is longer than the model's context length {}", o.context,
                    o.model.context_length));
  const std::size_t need = min_text_length(o.context);
  if (text_chars < need)
    throw std::runtime_error(fmt::format(
        "{} holds {} characters; with --context {} it must hold at least {} (the last 10% is "
        "the validation split and needs context + 1 = {} characters). Use a longer text or a "
        "smaller --context.",
        o.data_path, text_chars, o.context, need, o.context + 1));
  return text;
}

// ---- the save to resume from: the one DIR/current points to, or the newest complete one when
// the link was lost (restored by prepare_out_dir, before any cleanup) ---------------------------
Trainer::ResumePoint Trainer::find_resume_point() {
  const TrainOptions& o = options_;
  ResumePoint from;
  from.dir = o.out_dir;
  if (!o.resume) return from;
  std::error_code no_link;
  if (fs::is_directory(o.out_dir) && !has_train_state(o.out_dir) &&
      !fs::exists(fs::symlink_status(fs::path(o.out_dir) / kCurrentLink, no_link))) {
    from.relink = newest_complete_save(o.out_dir);
    if (!from.relink.empty()) {
      from.dir = (fs::path(o.out_dir) / from.relink).string();
      out_ << "note: " << o.out_dir << "/" << kCurrentLink << " (the link to the last complete "
           << "save) is missing; resuming from the newest complete save, " << from.relink
           << ", and restoring the link\n";
    }
  }
  return from;
}

// ---- model and tokenizer: fresh, or from the checkpoint ------------------------------------------
void Trainer::load_or_create_model(const std::u32string& text, ResumePoint& from) {
  TrainOptions& o = options_;
  if (o.resume) {
    if (!has_train_state(from.dir))
      throw std::runtime_error(fmt::format(
          "--resume: {} holds no checkpoint with a training state (config.json, model.safetensors, "
          "train_state.json, train_state.safetensors); run without --resume first",
          o.out_dir));
    Checkpoint loaded = load_checkpoint(from.dir);
    if (!loaded.warning().empty()) out_ << "warning: " << loaded.warning() << "\n";
    from.weights_step = loaded.weights_step();
    from.weights_run_id = loaded.run_id();
    // A BPE run continues with its saved vocabulary, never retrained.
    if (const Tokenizer* chars = loaded.tokenizer().chars()) tokenizer_ = *chars;
    if (const BpeTokenizer* bpe = loaded.tokenizer().bpe()) bpe_ = *bpe;
    const TokenizerKind saved = loaded.tokenizer().kind();
    if (o.tokenizer != saved)
      out_ << "note: --resume continues with the checkpoint's tokenizer ("
           << tokenizer_kind_name(saved) << "), not --tokenizer "
           << tokenizer_kind_name(o.tokenizer) << "\n";
    o.tokenizer = bpe_ ? TokenizerKind::kBpe : TokenizerKind::kChar;
    model_ = loaded.release_model();
    // A resumed run keeps its checkpoint's attention path (the exact resume), unless
    // --attention asks for another.
    if (o.attention_given) model_->set_ops_path(o.model.ops_path);
    o.model = model_->config();
  } else if (o.tokenizer == TokenizerKind::kBpe) {
    // Trained on the training split only (the text before bpe_split_point), so the validation text
    // stays unseen by the tokenizer too. std::invalid_argument for a bad --vocab-size.
    try {
      bpe_ = BpeTokenizer::train(text.substr(0, bpe_split_point(text)), o.bpe_vocab_size);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("--vocab-size {}: {}", o.bpe_vocab_size, e.what()));
    }
    o.model.vocab_size = bpe_->vocab_size();
    o.model.vocab_cap = std::max(o.model.vocab_cap, o.model.vocab_size);  // a cap of characters
    o.model.validate();
  } else {
    tokenizer_ = Tokenizer::from_text(text, o.model.vocab_cap);
    o.model.vocab_size = tokenizer_.vocab_size();
    o.model.validate();  // std::invalid_argument naming the bad size, before any allocation
  }
  if (o.context > o.model.context_length)
    throw std::invalid_argument(
        fmt::format("--context {} is longer than the model's context length {}", o.context,
                    o.model.context_length));
  check_fits_in_memory(o);
  if (!o.resume) model_ = std::make_unique<Decoder>(o.model, o.seed);
}

// ---- the text as ids, kept once -----------------------------------------------------------------
void Trainer::encode_corpus(std::u32string text) {
  const TrainOptions& o = options_;
  if (bpe_) {
    // The whole text is encoded at once (the dummy prefix only at its start); the training
    // split is the tokens of text[0, cut), which are a prefix of the whole text's tokens when the
    // cut falls before a space (no token crosses a word start). Otherwise the two parts are
    // encoded apart, the validation part with its own dummy prefix.
    const std::size_t cut = bpe_split_point(text);
    const std::u32string train_text = text.substr(0, cut);
    const std::u32string val_text = text.substr(cut);
    val_bytes_ = u32_to_utf8(val_text).size();
    auto ids = std::make_shared<TokenIds>(bpe_->encode_compact(text));
    const std::vector<std::int32_t> train_ids = bpe_->encode(train_text);
    bool prefix = train_ids.size() < ids->size();
    for (std::size_t i = 0; prefix && i < train_ids.size(); ++i) prefix = (*ids)[i] == train_ids[i];
    if (!prefix) {
      std::vector<std::int32_t> all = train_ids;
      const std::vector<std::int32_t> val_ids = bpe_->encode(val_text);
      all.insert(all.end(), val_ids.begin(), val_ids.end());
      TokenIds both(bpe_->vocab_size());
      both.reserve(all.size());
      for (const std::int32_t id : all) both.push_back(id);
      *ids = std::move(both);
    }
    const std::size_t val_tokens = ids->size() - train_ids.size();
    if (std::min(train_ids.size(), val_tokens) < o.context + 1)
      throw std::invalid_argument(fmt::format(
          "{}: the {} split has {} BPE tokens, but --context {} needs at least {} (one window plus "
          "the next token to predict); a token holds {:.2f} characters of this text on average. "
          "Use a longer text or a smaller --context",
          o.data_path, train_ids.size() < val_tokens ? "training" : "validation",
          std::min(train_ids.size(), val_tokens), o.context, o.context + 1,
          static_cast<double>(text.size()) / static_cast<double>(ids->size())));
    text = std::u32string();
    ids->shrink_to_fit();
    corpus_ = ids;
    n_train_ = train_ids.size();
    return;
  }
  const bool resuming = o.resume;
  const std::size_t text_chars = text.size();
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
    throw std::runtime_error(
        fmt::format("{} does not match the checkpoint's vocabulary: {}", o.data_path, e.what()));
  }
  // One id per character: the validation split is the text from character n_train on.
  val_bytes_ =
      u32_to_utf8(
          text.substr(static_cast<std::size_t>(std::floor(static_cast<double>(text.size()) * 0.9))))
          .size();
  // The text is no longer needed: only the ids (1 or 2 bytes per character) are kept, once,
  // shared by the samplers of both splits.
  text = std::u32string();
  ids->shrink_to_fit();
  corpus_ = ids;
  n_train_ = static_cast<std::size_t>(
      std::floor(static_cast<double>(corpus_->size()) * 0.9));  // as split_train_val
}

// ---- optimizer, schedule, batches ---------------------------------------------------------------
void Trainer::make_optimizer_and_batches() {
  const TrainOptions& o = options_;
  optimizer_ = std::make_unique<AdamW>(model_->named_parameters(),
                                       AdamWConfig{o.beta1, o.beta2, 1e-8, o.weight_decay});
  parallel_ =
      std::make_unique<DataParallel>(*model_, step_threads(o));  // --threads (autograd/threads.hpp)
  schedule_ = LrSchedule{o.lr, o.min_lr, o.warmup, o.decay_iters};
  const std::size_t n_all = corpus_->size();
  train_batches_ = std::make_unique<BatchSampler>(corpus_, 0, n_train_, o.batch_size, o.context,
                                                  o.seed + 1, "training split");
  eval_train_batches_ = std::make_unique<BatchSampler>(corpus_, 0, n_train_, o.batch_size,
                                                       o.context, o.seed + 2, "training split");
  eval_val_batches_ = std::make_unique<BatchSampler>(corpus_, n_train_, n_all, o.batch_size,
                                                     o.context, o.seed + 2, "validation split");
  eval_start_state_ = eval_train_batches_->state();
  sample_rng_.seed(o.seed + 3);
}

// ---- the training state of the save resumed --------------------------------------------------
void Trainer::restore_training_state(const ResumePoint& from) {
  const TrainOptions& o = options_;
  const TrainState state =
      load_train_state(from.dir, *optimizer_, from.weights_step, from.weights_run_id);
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
      read_steps_csv((fs::path(checkpoint_files_dir(from.dir)) / "steps.csv").string());
  const bool from_zero = std::any_of(saved_rows.begin(), saved_rows.end(),
                                     [](const StepRow& r) { return r.step == 0; });
  for (StepRow& r : saved_rows) {
    if (from_zero) ++r.step;
    if (r.step <= step_) steps_.push_back(r);
  }
  // o.context is the recorded one unless --context gave another (take_recorded_recipe).
  if (state.context != 0 && state.context != o.context)
    out_ << fmt::format(
        "warning: the run in {} was trained with context {} (recorded in its save); this run "
        "trains with --context {} as given, from step {} on (leave --context out to keep {})\n",
        o.out_dir, state.context, o.context, state.step, state.context);
}

// ---- the output directory must be writable before any training ----------------------------------
void Trainer::prepare_out_dir(const ResumePoint& from) {
  const TrainOptions& o = options_;
  ensure_writable_directory(o.out_dir);  // FileError naming the directory and the reason
  if (!lock_) lock_out_dir();
  if (!from.relink.empty()) {
    commit_save(o.out_dir, from.dir);
    const std::string warning = finish_save(o.out_dir);
    if (!warning.empty()) out_ << "warning: " << warning << "\n";
  }
  // A run killed during a save leaves a step directory that never became current (and, in a
  // checkpoint of the flat layout, temporary files); the current save itself is whole.
  check_run_layout(o.out_dir);
  std::size_t stale = remove_stale_saves(o.out_dir);
  const std::vector<std::string> checkpoint_files = {
      "model.safetensors", "best.safetensors", "train_state.safetensors",
      "train_state.json",  "config.json",      "tokenizer.json",
      "log.csv",           "loss.html",        "steps.csv"};
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

}  // namespace glass
