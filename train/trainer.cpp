// The training loop (train/trainer.hpp): one optimizer step, the evaluation, and run(), which
// alternates them with the saves until the last step or a stop request.

#include "train/trainer.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "autograd/ops.hpp"
#include "autograd/tape.hpp"
#include "train/clip.hpp"
#include "train/distributed.hpp"
#include "train/loss_notes.hpp"
#include "train/trainer_detail.hpp"

namespace glass {

using trainer_detail::Clock;
using trainer_detail::seconds_since;

namespace {

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
  const Communicator& comm = options_.comm;  // N processes (mpirun -np N), or one
  x = shard_rows(x, comm);                   // (B/N, T): this process's windows
  y = shard_rows(y, comm);

  // zero_grad, forward (B/N, T, V), cross-entropy (the mean over the B/N*T predictions) and
  // backward into every parameter's grad, on step_threads() threads (train/data_parallel.hpp).
  const double shard_loss = parallel_->loss_and_grad(x, y);
  // The mean of the N shards' gradients is the gradient of the whole batch (and likewise the loss).
  const double loss_value = average_gradients(model_->parameters(), shard_loss, comm);
  if (!std::isfinite(loss_value))  // (a shard with a non-finite loss ran no backward)
    throw NonFiniteError(fmt::format("the loss became {} at step {} (lr {:.3g})",
                                     non_finite_name(loss_value), it, lr));
  const double norm = clip_grad_norm(model_->parameters(), options_.grad_clip);
  last_grad_norm_ = norm;  // before clipping
  if (!std::isfinite(norm))
    throw NonFiniteError(fmt::format("the gradient norm became {} at step {} (lr {:.3g})",
                                     non_finite_name(norm), it, lr));
  optimizer_->step(lr);  // AdamW update
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
  }  // validation windows below
  eval_val_batches_->set_state(eval_train_batches_->state());
  losses[1] = mean_loss(*eval_val_batches_);
  comm.all_reduce_sum(losses);  // the mean of the N processes' means
  const EvalResult r{losses[0] / comm.size(), losses[1] / comm.size()};
  for (const auto& [loss, split] :
       {std::pair{r.train_loss, "training split"}, {r.val_loss, "validation split"}})
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

TrainResult Trainer::run() {
  const TrainOptions& o = options_;
  run_start_ = Clock::now();
  const double tokens_per_step = static_cast<double>(o.batch_size * o.context);
  double train_seconds = 0;  // time in train_step since the last eval (for tokens/s)
  long steps_since_eval = 0;
  double mean_step_s = 0;  // running mean step time (for the ETA)
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
                          e.val_loss, e.val_loss - e.train_loss, best ? " (best so far)" : "",
                          row.elapsed_s);
      out_ << fmt::format(
          "  val {:.4f} bits per byte ({} {} over {} bytes of text in the validation "
          "split)\n",
          bits_per_byte(e.val_loss, val_tokens(), val_bytes_), val_tokens(),
          bpe_ ? "tokens" : "characters", val_bytes_);
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
    out_ << "\n" << final_summary(log_, vocab_size(), o.iters, bpe_ ? "token" : "character");
  if (o.overfit_batch && !steps_.empty())
    out_ << "\n" << overfit_batch_note(steps_.front().loss, steps_.back().loss, steps_.size());

  // Whoever runs the trainer writes its own end-of-run files (glass train: the loss page).
  if (o.comm.is_root() && o.on_run_end) o.on_run_end(*this);

  result.step = step_;
  result.best_val = best_val_;
  if (!log_.empty()) result.last_eval = {log_.back().train_loss, log_.back().val_loss};
  return result;
}

}  // namespace glass
