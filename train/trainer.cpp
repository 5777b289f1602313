// The training loop of `glass train`. See train/trainer.hpp.

#include "train/trainer.hpp"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include <fmt/format.h>

#include "autograd/ops.hpp"
#include "autograd/tape.hpp"
#include "data/text.hpp"
#include "train/atomic_file.hpp"
#include "train/checkpoint.hpp"
#include "train/clip.hpp"
#include "train/loss_plot.hpp"
#include "train/model_size.hpp"
#include "train/sampler.hpp"

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
  if (o.decay_iters < 0) o.decay_iters = o.iters;
  positive(o.decay_iters, "--decay-iters");
  if (o.warmup < 0) throw std::invalid_argument("--warmup must be >= 0");
  if (!(o.lr > 0) || !std::isfinite(o.lr)) throw std::invalid_argument("--lr must be a positive number");
  if (o.min_lr < 0) o.min_lr = o.lr / 10;
  if (o.min_lr > o.lr) throw std::invalid_argument(fmt::format("--min-lr ({}) must not exceed --lr ({})", o.min_lr, o.lr));
  if (o.weight_decay < 0) throw std::invalid_argument("--weight-decay must be >= 0");
  if (o.grad_clip < 0) throw std::invalid_argument("--grad-clip must be >= 0 (0 = off)");
}

/// Refuses a model or batch that cannot fit in this machine's memory (a typo such as
/// --d-model 1000000000 or --batch-size 100000000), before allocating anything big.
void check_fits_in_memory(const TrainOptions& o) {
  const double need = training_memory_lower_bound(o.model, o.batch_size, o.context);
  const double have = physical_memory_bytes();
  if (have > 0 && need > have)
    throw std::invalid_argument(fmt::format(
        "this run needs at least {} of memory ({:.4g} parameters, batch {} x context {}) but this "
        "machine has {}. Use a smaller model (--d-model, --n-layers, --ffn-hidden) or a smaller "
        "--batch-size or --context.",
        format_bytes(need), parameter_count(o.model), o.batch_size, o.context, format_bytes(have)));
}

}  // namespace

Trainer::Trainer(TrainOptions options, std::ostream& out) : options_(std::move(options)), out_(out) {
  TrainOptions& o = options_;
  check_options(o);
  is_tty_ = (&out_ == &std::cout) && ::isatty(fileno(stdout));

  // ---- text ---------------------------------------------------------------------------------
  TextInfo info;
  const std::u32string text = load_text(o.data_path, &info);
  if (info.had_bom) out_ << "note: dropped the UTF-8 byte-order mark at the start of " << o.data_path << "\n";
  if (info.crlf_converted > 0)
    out_ << "note: converted " << info.crlf_converted << " CRLF line endings to LF\n";
  // A fresh model's context length is known now: say that first, not "the text is too short".
  if (!o.resume && o.context > o.model.context_length)
    throw std::invalid_argument(fmt::format(
        "--context {} is longer than the model's context length {}", o.context, o.model.context_length));
  const std::size_t need = min_text_length(o.context);
  if (text.size() < need)
    throw std::runtime_error(fmt::format(
        "{} holds {} characters; with --context {} it must hold at least {} (the last 10% is "
        "the validation split and needs context + 1 = {} characters). Use a longer text or a "
        "smaller --context.",
        o.data_path, text.size(), o.context, need, o.context + 1));

  // ---- model and tokenizer: fresh, or from the checkpoint -----------------------------------
  TrainState state;
  std::string weights_step;  // the step model.safetensors records, checked against the state's
  const bool resuming = o.resume;
  if (resuming) {
    if (!has_train_state(o.out_dir))
      throw std::runtime_error(fmt::format(
          "--resume: {} holds no checkpoint with a training state (config.json, model.safetensors, "
          "train_state.json, train_state.safetensors); run without --resume first",
          o.out_dir));
    LoadedModel loaded = load_checkpoint(o.out_dir);
    weights_step = loaded.weights_step;
    tokenizer_ = std::move(loaded.tokenizer);
    model_ = std::move(loaded.model);
    model_->set_attention(o.model.attention);  // --attention applies to a resumed run too
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
  std::vector<std::int32_t> ids;
  try {
    std::size_t unknown = 0;
    ids = tokenizer_.encode(text, /*map_unknown=*/!resuming || vocab_full, &unknown);
    if (unknown > 0)
      out_ << fmt::format(
          "note: {} has more distinct characters than the vocabulary holds ({} with the unknown "
          "id 0); {} occurrences of the rarest ones ({:.2f}% of the text) become the unknown token\n",
          o.data_path, o.model.vocab_cap, unknown,
          100.0 * static_cast<double>(unknown) / static_cast<double>(text.size()));
  } catch (const UnknownCharacterError& e) {
    throw std::runtime_error(fmt::format("{} does not match the checkpoint's vocabulary: {}",
                                         o.data_path, e.what()));
  }
  split_ = split_train_val(ids, 0.9);

  // ---- optimizer, schedule, batches -----------------------------------------------------------
  optimizer_ = std::make_unique<AdamW>(model_->named_parameters(),
                                       AdamWConfig{o.beta1, o.beta2, 1e-8, o.weight_decay});
  schedule_ = LrSchedule{o.lr, o.min_lr, o.warmup, o.decay_iters};
  train_batches_ = std::make_unique<BatchSampler>(split_.train, o.batch_size, o.context, o.seed + 1,
                                                  "training split");
  eval_train_batches_ = std::make_unique<BatchSampler>(split_.train, o.batch_size, o.context,
                                                       o.seed + 2, "training split");
  eval_val_batches_ = std::make_unique<BatchSampler>(split_.val, o.batch_size, o.context,
                                                     o.seed + 2, "validation split");
  eval_start_state_ = eval_train_batches_->state();
  sample_rng_.seed(o.seed + 3);

  if (resuming) {
    state = load_train_state(o.out_dir, *optimizer_, weights_step);
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
    if (state.context != 0 && state.context != o.context)
      out_ << "warning: resuming with --context " << o.context << " but the checkpoint was trained with "
           << state.context << "\n";
  }

  // ---- the output directory must be writable before any training -----------------------------
  ensure_writable_directory(o.out_dir);  // FileError naming the directory and the reason
  // A run killed while writing a checkpoint (a second Ctrl-C, a kill) leaves its temporary file
  // behind; the checkpoint itself is whole (atomic rename). Tidy those up.
  const std::vector<std::string> checkpoint_files = {
      "model.safetensors", "best.safetensors", "train_state.safetensors", "train_state.json",
      "config.json", "log.csv", "loss.svg"};
  if (const std::size_t stale = remove_stale_temp_files(o.out_dir, checkpoint_files); stale > 0)
    out_ << "note: removed " << stale << " temporary file(s) left in " << o.out_dir
         << " by an interrupted run\n";
  if (!resuming && fs::exists(fs::path(o.out_dir) / "model.safetensors"))
    out_ << "note: " << o.out_dir << " already holds a checkpoint; this new run will replace it "
         << "(use --resume to continue it instead)\n";

  out_ << fmt::format(
      "data: {} ({} characters, vocabulary {}), train {} / val {} characters\n"
      "model: d_model {}, {} layers, {} heads ({} kv), ffn {}, {} parameters\n"
      "recipe: {} steps, batch {} x context {}, lr {:g} -> {:g} (warmup {}, cosine to step {}), "
      "weight decay {:g}, clip {:g}, seed {}\n",
      o.data_path, text.size(), tokenizer_.vocab_size(), split_.train.size(), split_.val.size(),
      o.model.d_model, o.model.n_layers, o.model.n_heads, o.model.n_kv_heads, o.model.ffn_hidden,
      model_->num_parameters(), o.iters, o.batch_size, o.context, o.lr, o.min_lr, o.warmup,
      o.decay_iters, o.weight_decay, o.grad_clip, o.seed);
  if (resuming) out_ << "resuming from step " << step_ << " of " << o.out_dir << "\n";
  out_.flush();
}

Trainer::~Trainer() = default;

// ---- one optimizer step: the heart of training ------------------------------------------------
double Trainer::train_step(long it) {
  const double lr = schedule_.at(it);
  Ids x, y;
  train_batches_->next(x, y);                        // (B, T) inputs and next-char targets

  Tensor logits = model_->forward(x);                // (B, T, V)
  Tensor loss = cross_entropy(logits, y);            // mean over the B*T predictions
  const double loss_value = loss.item();
  if (!std::isfinite(loss_value)) {
    tape().clear();
    throw NonFiniteError(fmt::format("the loss became {} at step {} (lr {:.3g})", non_finite_name(loss_value), it, lr));
  }
  optimizer_->zero_grad();
  loss.backward();                                   // fills every parameter's grad
  const double norm = clip_grad_norm(model_->parameters(), options_.grad_clip);
  if (!std::isfinite(norm))
    throw NonFiniteError(fmt::format("the gradient norm became {} at step {} (lr {:.3g})", non_finite_name(norm), it, lr));
  optimizer_->step(lr);                              // AdamW update
  return loss_value;
}

EvalResult Trainer::evaluate() {
  NoGradGuard no_grad;
  auto mean_loss = [&](BatchSampler& batches) {
    double total = 0;
    Ids x, y;
    for (long i = 0; i < options_.eval_iters; ++i) {
      batches.next(x, y);
      total += cross_entropy(model_->forward(x), y).item();
    }
    return total / static_cast<double>(options_.eval_iters);
  };
  // One generator, re-seeded at every evaluation, draws the training windows then the
  // validation windows (as the PyTorch twin): every evaluation sees the same batches.
  eval_train_batches_->set_state(eval_start_state_);
  EvalResult r;
  r.train_loss = mean_loss(*eval_train_batches_);
  eval_val_batches_->set_state(eval_train_batches_->state());
  r.val_loss = mean_loss(*eval_val_batches_);
  return r;
}

void Trainer::print_sample() {
  if (options_.sample_tokens == 0) return;
  std::vector<std::int32_t> prompt = {tokenizer_.contains(U'\n') ? tokenizer_.id_of(U'\n') : 1};
  SamplingOptions sampling;
  sampling.temperature = 0.8;
  const auto ids = generate(*model_, prompt, options_.sample_tokens, options_.context, sampling,
                            sample_rng_);
  out_ << "---- sample (temperature 0.8) ----\n" << tokenizer_.decode_utf8(ids) << "\n----\n";
}

void Trainer::save(bool also_best) {
  const std::string& dir = options_.out_dir;
  const std::string extra = fmt::format(R"({{"training": {{"context": {}, "step": {}}}}})",
                                        options_.context, step_);
  save_model(dir, *model_, tokenizer_, "model.safetensors", extra, step_);
  if (also_best) save_model(dir, *model_, tokenizer_, "best.safetensors", extra, step_);
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
  save_train_state(dir, *optimizer_, state);
  write_file_atomic((fs::path(dir) / "log.csv").string(), log_csv(log_));
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

  for (long it = step_;; ++it) {
    step_ = it;
    if (o.stop_flag && *o.stop_flag) {
      if (is_tty_) out_ << "\n";
      out_ << "interrupted at step " << it << ": saving a checkpoint in " << o.out_dir << "\n";
      save(false);
      result.interrupted = true;
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
      out_ << fmt::format("step {}: train loss {:.4f}, val loss {:.4f}{} | {:.1f} s\n", it,
                          e.train_loss, e.val_loss, best ? " (best so far)" : "", row.elapsed_s);
      print_sample();
      save(best);
      train_seconds = 0;
      steps_since_eval = 0;
    }
    if (it >= o.iters) break;

    const auto t0 = Clock::now();
    const double loss = train_step(it);
    const double dt = seconds_since(t0);
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

  // The loss curve of the whole run (including before a resume).
  std::vector<double> steps, train_loss, val_loss;
  for (const LogRow& r : log_) {
    steps.push_back(static_cast<double>(r.step));
    train_loss.push_back(r.train_loss);
    val_loss.push_back(r.val_loss);
  }
  write_file_atomic((fs::path(o.out_dir) / "loss.svg").string(),
                    loss_plot_svg(steps, train_loss, val_loss,
                                  "GlassLLM training loss: " + fs::path(o.data_path).filename().string()));

  result.step = step_;
  result.best_val = best_val_;
  if (!log_.empty()) result.last_eval = {log_.back().train_loss, log_.back().val_loss};
  return result;
}

}  // namespace glass
