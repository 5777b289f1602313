// What the trainer prints (train/trainer.hpp): the banner before the first step, the progress
// line, the notes after each evaluation and the samples.

#include "train/trainer.hpp"

#include <cmath>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "data/visible_text.hpp"
#include "sample/sampler.hpp"
#include "train/chat_batches.hpp"
#include "train/loss_notes.hpp"
#include "train/time_budget.hpp"

namespace glass {

namespace {

/// "1h02m", "3m12s", "45s".
std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const long s = static_cast<long>(seconds + 0.5);
  if (s >= 3600) return fmt::format("{}h{:02d}m", s / 3600, (s % 3600) / 60);
  if (s >= 60) return fmt::format("{}m{:02d}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

}  // namespace

void Trainer::print_banner(std::size_t text_chars) {
  const TrainOptions& o = options_;
  const bool fits_time = o.time_budget_s > 0 && !o.resume;  // the steps are chosen in run()
  if (chat_)
    print_chat_banner();
  else
    out_ << fmt::format("data: {}, {} characters, {}; train {} / val {} {}\n", o.data_path,
                        text_chars, tokenizer_->describe(/*count_ids=*/true), corpus_.n_train,
                        val_tokens(), std::string(tokenizer_->unit(false)) + "s");
  out_ << fmt::format(
      "model: d_model {}, {} layers, {} heads ({} kv), ffn {}, {} parameters\n"
      "recipe: {}, batch {} x context {}, lr {:g} -> {:g} (warmup {}, cosine to {}), "
      "weight decay {:g}, clip {:g}, seed {}\n",
      o.model.d_model, o.model.n_layers, o.model.n_heads, o.model.n_kv_heads, o.model.ffn_hidden,
      model_->num_parameters(),
      fits_time ? "the steps that fit in " + duration_text(o.time_budget_s)
                : fmt::format("{} steps", o.iters),
      o.batch_size, o.context, o.lr, o.min_lr, o.warmup,
      fits_time && decay_follows_iters_ ? std::string("the last step")
                                        : fmt::format("step {}", o.decay_iters),
      o.weight_decay, o.grad_clip, o.seed);
  const std::vector<std::string> options = recipe_options_in_use(o.model);
  if (!options.empty()) out_ << fmt::format("recipe options: {}\n", fmt::join(options, ", "));
  if (muon_)
    out_ << fmt::format(
        "optimizer: Muon (lr {:g}, the same schedule) on the {} matrices of the blocks, AdamW on "
        "the embeddings, output head and gains{}\n",
        o.muon_lr, muon_->params().size(),
        o.speedrun_recipe ? " (--time's speedrun recipe; --optimizer adamw trains with AdamW)"
                          : "");
  if (o.zero_init_out && step_ == 0)
    out_ << "init: the blocks' output projections (attention W_O, feed-forward w2) start at zero\n";
  if (o.comm.size() > 1)
    out_ << fmt::format("data parallel: {} processes, {} windows of each batch per process\n",
                        o.comm.size(), o.batch_size / static_cast<std::size_t>(o.comm.size()));
  if (o.resume) out_ << "resuming from step " << step_ << " of " << o.out_dir << "\n";
  if (o.overfit_batch)
    out_ << "--overfit-batch: every step trains on the same batch of " << o.batch_size << " x "
         << o.context
         << " characters; the training loss should fall towards 0 (the model "
            "memorises it) while the validation loss does not. If it does not, the loop has a bug. "
            "The evaluations show the loss of that batch and the usual validation loss\n";
}

void Trainer::print_sample() {
  if (options_.sample_tokens == 0 || !options_.comm.is_root()) return;
  // Control characters shown as visible escapes: the model's text must not act on the terminal.
  out_ << "---- sample (temperature 0.8) ----\n"
       << escape_controls(chat_ ? chat_sample() : sample()) << "\n----\n";
}

std::string Trainer::sample() {
  // Start as at a paragraph: after a newline (a BPE model: the last token of "\n" encoded; a
  // character model whose text has none: id 1).
  std::int32_t start = 1;
  try {
    start = tokenizer_->encode(U"\n").back();
  } catch (const UnknownCharacterError&) {}
  SamplingOptions sampling;
  sampling.temperature = 0.8;
  const auto ids =
      generate(*model_, {start}, options_.sample_tokens, options_.context, sampling, sample_rng_);
  return tokenizer_->decode_generated(ids);
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

void Trainer::print_evaluation(long it, const EvalResult& e, double elapsed_s, bool best) {
  const TrainOptions& o = options_;
  if (is_tty_) out_ << "\r\033[K";
  out_ << fmt::format("step {}: {} {:.4f}, val loss {:.4f} (gap {:+.4f}){} | {:.1f} s\n", it,
                      o.overfit_batch ? "loss of the one batch" : "train loss", e.train_loss,
                      e.val_loss, e.val_loss - e.train_loss, best ? " (best so far)" : "",
                      elapsed_s);
  const std::string unit = tokenizer_->unit(false);
  if (chat_) {
    out_ << fmt::format("  val: the loss over the {} answer {}s of {} conversations\n",
                        chat_->val_targets, unit, chat_->val.size());
  } else {
    // Whole or sampled: as evaluate() measured the validation loss (train/text_loss.hpp).
    const std::string how =
        val_loss_exact()
            ? "measured whole: every " + unit + " predicted once"
            : fmt::format("estimated on {} sampled windows of {} {}s",
                          static_cast<std::size_t>(o.eval_iters) * o.batch_size, o.context, unit);
    out_ << fmt::format(
        "  val {:.4f} bits per byte ({} {}s over {} bytes of text in the validation split; {})\n",
        bits_per_byte(e.val_loss, val_tokens(), val_bytes()), val_tokens(), unit, val_bytes(), how);
  }
  if (it == 0 && log().size() == 1 && !chat_)  // a fine-tune starts from its base, not ln V
    out_ << step_zero_note(log().front().train_loss, vocab_size(), tokenizer_->unit(false));
  // overfit_batch: a validation loss rising while the batch is memorised is what the check
  // expects (the banner says so), not overfitting to warn about.
  if (!o.overfit_batch) out_ << evaluation_note(log());
}

}  // namespace glass
