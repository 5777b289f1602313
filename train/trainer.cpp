// The training loop (train/trainer.hpp): one optimizer step, the evaluation, and run(), which
// alternates them with the saves until the last step or a stop request; the observers of the
// loop (train/observer.hpp) hear of each step, evaluation and save.

#include "train/trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <ostream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "autograd/ops.hpp"
#include "autograd/tape.hpp"
#include "checkpoint/manifest.hpp"
#include "train/chat_batches.hpp"
#include "train/clip.hpp"
#include "train/distributed.hpp"
#include "train/loss_notes.hpp"
#include "train/model_files.hpp"
#include "train/resume.hpp"
#include "train/run_directory.hpp"
#include "train/text_loss.hpp"

namespace glass {

namespace {

using Clock = std::chrono::steady_clock;

/// Seconds from t0 to now.
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// This process's share of the counted targets (cross_entropy's, those not -1) of the whole
/// batch `y` (B, T): those of its rows (shard_rows) over all; 0 when none is counted.
double target_share(const Ids& y, const Communicator& comm) {
  const std::size_t all = counted_targets(y);
  return all == 0
             ? 0.0
             : static_cast<double>(counted_targets(shard_rows(y, comm))) / static_cast<double>(all);
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

}  // namespace

// ---- one optimizer step: the heart of training ------------------------------------------------
double Trainer::train_step(long it) {
  const double lr = schedule_.at(it);
  Ids x, y;
  if (!options_.overfit_batch) {
    train_batches_->next(x, y);  // (B, T) inputs and next-char targets
  } else {                       // the same batch at every step
    draw_overfit_batch();
    x = overfit_x_;
    y = overfit_y_;
  }
  last_step_positions_ = x.size();             // B * T (a chat batch is as wide as its rows)
  const Communicator& comm = options_.comm;    // N processes (mpirun -np N), or one
  const double share = target_share(y, comm);  // this process's share of the counted targets
  x = shard_rows(x, comm);                     // (B/N, T): this process's windows
  y = shard_rows(y, comm);

  // zero_grad, forward (B/N, T, V), cross-entropy (the mean over the shard's counted targets:
  // all B/N*T of a text, the answers' of a chat fine-tune) and backward into every parameter's
  // grad, on step_threads() threads (train/data_parallel.hpp).
  const double shard_loss = parallel_->loss_and_grad(x, y);
  // The shards' gradients weighted by their shares are the gradient of the whole batch (and
  // likewise the loss); with every target counted each share is 1/N.
  const double loss_value = combine_gradients(model_->parameters(), shard_loss, share, comm);
  if (!std::isfinite(loss_value))  // (a shard with a non-finite loss ran no backward)
    throw NonFiniteError(fmt::format("the loss became {} at step {} (lr {:.3g})",
                                     non_finite_name(loss_value), it, lr));
  const double norm = clip_grad_norm(model_->parameters(), options_.grad_clip);
  last_grad_norm_ = norm;  // before clipping
  if (!std::isfinite(norm))
    throw NonFiniteError(fmt::format("the gradient norm became {} at step {} (lr {:.3g})",
                                     non_finite_name(norm), it, lr));
  optimizer_->step(lr);  // AdamW update
  // Muon's rate follows the same schedule: its peak times lr(it) / lr_max.
  if (muon_) muon_->step(options_.muon_lr * lr / options_.lr);
  return loss_value;
}

void Trainer::draw_overfit_batch() {
  if (overfit_x_.dimension() == 0) train_batches_->next(overfit_x_, overfit_y_);  // (B, T) each
}

double bits_per_byte(double loss_nats_per_token, std::size_t tokens, std::size_t bytes) {
  if (bytes == 0) throw std::invalid_argument("bits_per_byte: a text of 0 bytes");
  return loss_nats_per_token * static_cast<double>(tokens) /
         (static_cast<double>(bytes) * std::log(2.0));
}

EvalResult Trainer::evaluate() {
  NoGradGuard no_grad;
  const Communicator& comm = options_.comm;
  // The processes of a data-parallel run must hold the same weights (they take the same steps).
  if (comm.size() > 1 && !comm.same_on_all_ranks(weights_checksum(model_->parameters())))
    throw std::runtime_error(fmt::format(
        "the weights of the {} processes differ at step {}: their training diverged (a different "
        "glass binary or BLAS library on some machine?)",
        comm.size(), step_));
  auto mean_loss = [&](Batches& batches) {
    double total = 0;
    Ids x, y;
    for (long i = 0; i < options_.eval_iters; ++i) {
      batches.next(x, y);  // each process evaluates its B/N windows of the batch, weighted
      total += target_share(y, comm) *  // by its share of the counted targets (checked after)
               parallel_->loss(shard_rows(x, comm), shard_rows(y, comm));
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
    losses[0] = target_share(overfit_y_, comm) *
                parallel_->loss(shard_rows(overfit_x_, comm), shard_rows(overfit_y_, comm));
    Ids x, y;
    for (long i = 0; i < options_.eval_iters; ++i) eval_train_batches_->next(x, y);  // the usual
  }  // validation windows below
  eval_val_batches_->set_state(eval_train_batches_->state());
  if (!val_loss_exact()) losses[1] = mean_loss(*eval_val_batches_);
  comm.all_reduce_sum(losses);  // the processes' means weighted by their shares: the batches' means
  // A validation split of no more windows than the sample: every token of it, once, as glass
  // eval measures a text (each process computes the whole pass; the tokens are predicted from
  // the windows' own ids, the first from the training split's last id).
  const double val_loss = chat_ ? chat_val_loss()  // every answer token of the set, once
                          : val_loss_exact()
                              ? text_loss(*corpus_.ids, corpus_.n_train - 1, corpus_.ids->size(),
                                          options_.context, options_.batch_size,
                                          [&](const Ids& x, const Ids& y, std::size_t) {
                                            return parallel_->loss(x, y);
                                          })
                                    .mean()
                              : losses[1];
  const EvalResult r{losses[0], val_loss};
  for (const auto& [loss, split] :
       {std::pair{r.train_loss, "training split"}, {r.val_loss, "validation split"}})
    if (!std::isfinite(loss))
      throw NonFiniteError(fmt::format("the evaluation loss on the {} became {} at step {}", split,
                                       non_finite_name(loss), step_));
  return r;
}

bool Trainer::val_loss_exact() const {
  if (chat_) return true;  // chat_val_loss
  return text_loss_windows(val_tokens(), options_.context) <=
         static_cast<std::size_t>(options_.eval_iters) * options_.batch_size;
}

bool Trainer::stop_requested() {
  const int mine = options_.stop_flag != nullptr ? static_cast<int>(*options_.stop_flag) : 0;
  stop_signal_ = options_.comm.max(mine);  // every rank names the same signal
  return stop_signal_ != 0;
}

TrainResult Trainer::run() {
  if (options_.time_budget_s > 0 && !options_.resume) fit_to_time_budget();
  const TrainOptions& o = options_;
  run_start_ = Clock::now();
  double train_seconds = 0;         // time in train_step since the last eval (for tokens/s)
  double positions_since_eval = 0;  // the positions (B * T) of those steps
  double mean_step_s = 0;           // running mean step time (for the ETA)
  double positions_timed = 0, seconds_timed = 0;  // every step's, for the mean tokens/s
  long steps_timed = 0;
  auto last_print = Clock::now() - std::chrono::seconds(10);
  const long print_every = std::max(1L, std::min(o.eval_every, 50L));  // non-TTY progress lines
  TrainResult result;
  if (o.comm.is_root()) steps_record_.open_live(o.out_dir);  // rank 0 alone writes files

  for (long it = step_;; ++it) {
    step_ = it;
    if (stop_requested()) {
      if (is_tty_) out_ << "\n";
      out_ << "interrupted at step " << it << " (" << stop_signal_name(stop_signal_)
           << "): saving a checkpoint in " << o.out_dir << "\n";
      save(false);
      break;
    }
    const bool eval_due = it % o.eval_every == 0 || it == o.iters;
    if (eval_due && (log().empty() || log().back().step != it)) {
      bool best = false;
      evaluate_and_report(it, train_seconds, positions_since_eval, result, best);
      if (stop_requested()) {
        out_ << stop_signal_name(stop_signal_) << " arrived during the evaluation at step " << it
             << "; the evaluation was finished first. Saving a checkpoint in " << o.out_dir << "\n";
        save(best);
        break;
      }
      print_sample();
      save(best);
      train_seconds = 0;
      positions_since_eval = 0;
    }
    if (it >= o.iters) break;

    const auto t0 = Clock::now();
    const double loss = train_step(it);
    const double dt = seconds_since(t0);
    const StepRow row{it + 1,
                      loss,
                      schedule_.at(it),
                      last_grad_norm_,
                      dt > 0 ? static_cast<double>(last_step_positions_) / dt : 0,
                      elapsed_before_ + seconds_since(run_start_)};
    for (TrainObserver* observer : observers_) observer->on_step(row);
    train_seconds += dt;
    positions_since_eval += static_cast<double>(last_step_positions_);
    positions_timed += static_cast<double>(last_step_positions_);
    seconds_timed += dt;
    mean_step_s += (dt - mean_step_s) / static_cast<double>(++steps_timed);
    const long done = it + 1;
    const bool print_now = is_tty_ ? seconds_since(last_print) > 0.1 || done == o.iters
                                   : done % print_every == 0 || done == o.iters;
    if (print_now) {
      last_print = Clock::now();
      print_progress(done, loss, schedule_.at(it),
                     seconds_timed > 0 ? positions_timed / seconds_timed : 0,
                     mean_step_s * static_cast<double>(o.iters - done));
    }
  }
  finish_run(result);
  return result;
}

void Trainer::evaluate_and_report(long it, double train_seconds, double positions_since_eval,
                                  TrainResult& result, bool& best) {
  const EvalResult e = evaluate();
  LogRow row;
  row.step = it;
  row.lr = schedule_.at(it);  // the lr of the step about to be taken (min_lr at the end)
  row.train_loss = e.train_loss;
  row.val_loss = e.val_loss;
  row.tokens_per_s = train_seconds > 0 ? positions_since_eval / train_seconds : 0;
  row.elapsed_s = elapsed_before_ + seconds_since(run_start_);
  for (TrainObserver* observer : observers_) observer->on_eval(row);
  result.last_eval = e;
  best = !has_best_ || e.val_loss < best_val_;
  if (best) {
    best_val_ = e.val_loss;
    has_best_ = true;
  }
  print_evaluation(it, e, row.elapsed_s, best);
}

void Trainer::finish_run(TrainResult& result) {
  const TrainOptions& o = options_;
  result.interrupted = stop_signal_ != 0;
  result.stop_signal = stop_signal_;
  if (is_tty_) out_ << "\r\033[K";
  if (!result.interrupted && !o.overfit_batch && !chat_) {
    const double tokens_per_byte =
        static_cast<double>(val_tokens()) / static_cast<double>(val_bytes());
    out_ << "\n"
         << final_summary(log(), vocab_size(), o.iters, tokenizer_->unit(false), tokens_per_byte);
    if (yardstick_ && !log().empty()) {
      double best = log().front().val_loss;
      for (const LogRow& row : log()) best = std::min(best, row.val_loss);
      out_ << yardstick_note(best * tokens_per_byte / std::log(2.0), *yardstick_, train_chars_,
                             val_chars_);
    }
  }
  if (o.overfit_batch && !steps().empty())
    out_ << "\n" << overfit_batch_note(steps().front().loss, steps().back().loss, steps().size());
  // Whoever runs the trainer writes its own end-of-run files (glass train: the loss page).
  if (o.comm.is_root() && o.on_run_end) o.on_run_end(*this);
  result.step = step_;
  result.iters = o.iters;
  result.eval_every = o.eval_every;
  result.best_val = best_val_;
  if (!log().empty()) result.last_eval = {log().back().train_loss, log().back().val_loss};
}

// ---- the saves: the model, the training state and every observer's files, all-or-nothing ------
TrainState Trainer::training_state() const {
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
  state.log = log();
  state.run_id = run_id_;
  state.has_recipe = true;
  state.recipe = recipe_of(options_);
  state.overfit_batch = options_.overfit_batch;
  return state;
}

void Trainer::save(bool also_best) {
  for (TrainObserver* observer : observers_) observer->before_save(step_);  // every process
  if (!run_dir_) return;                                                    // rank 0 writes for all
  namespace fs = std::filesystem;
  nlohmann::json training = {{"context", options_.context},
                             {"step", step_},
                             {"run_id", run_id_},
                             {"data", fs::path(options_.data_path).filename().string()},
                             {"manifest", kManifestFile}};
  if (chat_)  // the template the fine-tune taught (data/chat_template.hpp) and its base
    training["chat"] = {{"template", "chatml"},
                        {"base", options_.chat.base_dir},
                        {"base_sha256", options_.chat.base_sha256},
                        {"loss_on", options_.chat.loss_on_all ? "all" : "answers"}};
  if (options_.zero_init_out) training["zero_init_out"] = true;  // how its weights started
  const std::string extra = nlohmann::json{{"training", training}}.dump();
  run_dir_->save(step_, run_id_, [&](const SaveSite& site) {
    save_model_files(site.step_dir, *model_, *tokenizer_, extra, step_, run_id_);
    run_dir_->carry_best(site, also_best, has_best_, run_id_);
    save_train_state(site.step_dir, *optimizer_, training_state(), muon_.get());
    for (TrainObserver* observer : observers_) observer->on_save(site);
  });
}

}  // namespace glass
