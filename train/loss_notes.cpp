// What the numbers of a training run mean. See loss_notes.hpp.

#include "train/loss_notes.hpp"

#include <cmath>
#include <vector>

#include <fmt/format.h>

namespace glass {

std::string vocabulary_words(std::size_t vocab_size) {
  return fmt::format("vocabulary {} ({} characters + the unknown id 0)", vocab_size,
                     vocab_size > 0 ? vocab_size - 1 : 0);
}

std::string step_zero_note(double loss, std::size_t vocab_size, const std::string& unit) {
  const double ln_v = std::log(static_cast<double>(vocab_size));
  const double off = loss - ln_v;
  if (std::abs(off) <= kStepZeroTolerance)
    return fmt::format(
        "note: loss {:.4f} ≈ ln {} = {:.4f}: the model is guessing uniformly among "
        "the {} entries of its vocabulary ({}), as it should at the start\n",
        loss, vocab_size, ln_v, vocab_size,
        unit == "character"
            ? fmt::format("{} characters + the unknown id 0", vocab_size > 0 ? vocab_size - 1 : 0)
            : std::string("BPE tokens"));
  if (off > 0)
    return fmt::format(
        "warning: loss {:.4f} at step 0 is far above ln {} = {:.4f}, the loss of a uniform guess: "
        "the untrained model is confidently wrong, so its logits are far from flat (initial "
        "weights too large?). Training may still work, but this is the first thing to check\n",
        loss, vocab_size, ln_v);
  return fmt::format(
      "warning: loss {:.4f} at step 0 is far below ln {} = {:.4f}, the loss of a uniform guess: "
      "an untrained model cannot know the text, so the targets probably leak into the inputs "
      "(a bug in the batches or the attention mask)\n",
      loss, vocab_size, ln_v);
}

namespace {
// Overfitting shows as a gap (val - train) that opened up since the best evaluation while the
// training loss kept falling; a flat pair of curves is a plateau.
bool widening_gap(const LogRow& best, const LogRow& last) {
  return last.train_loss < best.train_loss - 0.02 &&
         last.val_loss - last.train_loss > best.val_loss - best.train_loss + 0.02;
}

/// The gap (val - train) widened at each of the last two evaluations (step 0, where both losses
/// are ln V, not counted), by kGapGrowth in all, while the validation loss was still falling at
/// each: the first sign of overfitting, before the validation loss turns up.
constexpr double kGapGrowth = 0.1;
bool gap_widening_while_val_falls(const std::vector<LogRow>& log) {
  if (log.size() < 4) return false;
  const LogRow& a = log[log.size() - 3];
  const LogRow& b = log[log.size() - 2];
  const LogRow& c = log.back();
  const double ga = a.val_loss - a.train_loss, gb = b.val_loss - b.train_loss,
               gc = c.val_loss - c.train_loss;
  return ga < gb && gb < gc && gc - ga >= kGapGrowth && b.val_loss < a.val_loss &&
         c.val_loss < b.val_loss;
}
}  // namespace

std::string evaluation_note(const std::vector<LogRow>& log) {
  if (log.size() < 2) return "";
  std::size_t best = 0;
  for (std::size_t i = 1; i < log.size(); ++i)
    if (log[i].val_loss < log[best].val_loss) best = i;
  const std::size_t since_best = log.size() - 1 - best;
  const LogRow& last = log.back();
  const LogRow& before = log[log.size() - 2];
  const bool gap_widened = widening_gap(log[best], last);
  if (since_best > 0 && since_best % kPatienceEvals == 0 && !gap_widened)
    return fmt::format(
        "note: the validation loss has not improved for {} evaluations (best {:.4f} at step {}; "
        "now {:.4f}, train {:.4f}), and the training loss has not pulled away from it: a "
        "plateau, not overfitting. Try a larger model, a higher --lr, or stop here\n",
        since_best, log[best].val_loss, log[best].step, last.val_loss, last.train_loss);
  if (since_best > 0 && since_best % kPatienceEvals == 0)
    return fmt::format(
        "note: the validation loss has not improved for {} evaluations (best {:.4f} at step {}; "
        "now {:.4f}, train {:.4f}): the model is memorising the training text instead of "
        "learning what generalises (overfitting). best.safetensors keeps the best weights; more "
        "steps will not help. Try more text, a smaller model, or stop here\n",
        since_best, log[best].val_loss, log[best].step, last.val_loss, last.train_loss);
  if (gap_widening_while_val_falls(log) &&
      !gap_widening_while_val_falls(std::vector<LogRow>(log.begin(), log.end() - 1))) {
    const LogRow& first = log[log.size() - 3];
    return fmt::format(
        "note: the validation loss still falls ({:.4f} -> {:.4f}), but the gap (val - train) keeps "
        "widening ({:+.2f} -> {:+.2f} -> {:+.2f}): the model learns the training text faster than "
        "what carries over to new text, the first sign of overfitting. Nothing is lost yet "
        "(best.safetensors keeps the best weights); if the gap goes on growing, the validation "
        "loss will turn up: more text, a smaller model (--d-model, --n-layers) or a larger "
        "--weight-decay narrow it\n",
        first.val_loss, last.val_loss, first.val_loss - first.train_loss,
        before.val_loss - before.train_loss, last.val_loss - last.train_loss);
  }
  if (last.val_loss > before.val_loss && last.train_loss < before.train_loss &&
      last.val_loss > last.train_loss)
    return fmt::format(
        "note: the validation loss rose ({:.4f} -> {:.4f}) while the training loss fell: the gap "
        "(val - train) is now {:.4f}. If it keeps rising, the model is overfitting\n",
        before.val_loss, last.val_loss, last.val_loss - last.train_loss);
  return "";
}

std::string final_summary(const std::vector<LogRow>& log, std::size_t vocab_size, long iters,
                          const std::string& unit, double tokens_per_byte) {
  if (log.empty()) return "";
  std::size_t best = 0;
  for (std::size_t i = 1; i < log.size(); ++i)
    if (log[i].val_loss < log[best].val_loss) best = i;
  const LogRow& b = log[best];
  const LogRow& last = log.back();
  const double ln_v = std::log(static_cast<double>(vocab_size));
  // Bits per byte first: the one figure that compares a character run with a BPE run (a token
  // holds several characters, so its loss is larger for the same model) and with a compressor.
  std::string text = tokens_per_byte > 0
                         ? fmt::format(
                               "best validation loss at step {}: {:.4f} bits per byte (comparable "
                               "across tokenizers)\n",
                               b.step, b.val_loss * tokens_per_byte / std::log(2.0))
                         : fmt::format("best validation loss at step {}:\n", b.step);
  text += fmt::format(
      "  per {}: {:.4f} nats = {:.3f} bits (perplexity {:.2f}: as unsure as a choice among {:.1f} "
      "{}s; a uniform guess is ln {} = {:.4f} nats, {:.3f} bits)\n",
      unit, b.val_loss, b.val_loss / std::log(2.0), std::exp(b.val_loss), std::exp(b.val_loss),
      unit, vocab_size, ln_v, ln_v / std::log(2.0));
  const std::size_t since_best = log.size() - 1 - best;
  if (last.step < iters)
    text += "next: the run was stopped early; continue it with the --resume command below\n";
  else if (b.val_loss > ln_v - 0.1)
    text +=
        "next: the model has learnt almost nothing; train longer (--iters), or check the "
        "learning rate (--lr) and the text\n";
  else if (since_best >= static_cast<std::size_t>(kPatienceEvals) && !widening_gap(b, last))
    text += fmt::format(
        "next: the validation loss stopped improving {} evaluations before the end while the "
        "training loss stayed close to it (a plateau): try a larger model or a higher --lr\n",
        since_best);
  else if (since_best >= static_cast<std::size_t>(kPatienceEvals))
    text += fmt::format(
        "next: the validation loss stopped improving {} evaluations before the end (overfitting): "
        "sample with --best, and for a better model use more text or a smaller one "
        "(--d-model, --n-layers)\n",
        since_best);
  else if (since_best == 0 && log.size() >= 2 &&
           log[log.size() - 2].val_loss - last.val_loss > 0.01)
    text +=
        "next: the validation loss was still falling at the end: train longer (a larger "
        "--iters with --resume continues this run), or try a larger model\n";
  else
    text +=
        "next: sample from it; to go further, try a larger model (--d-model, --n-layers) or "
        "more text\n";
  return text;
}

std::string overfit_batch_note(double first, double last, std::size_t steps) {
  if (last <= kOverfitTarget)
    return fmt::format(
        "overfit check passed: the loss of the one batch went from {:.4f} to {:.4f} "
        "in {} steps, so the model can memorise it: forward, backward and the "
        "AdamW update work together\n",
        first, last, steps);
  return fmt::format(
      "overfit check not passed yet: the loss of the one batch went from {:.4f} to {:.4f} in {} "
      "steps, not below {}. Give it more --iters or a larger --lr; if it still stays up (or rises), "
      "something in the training loop is wrong\n",
      first, last, steps, kOverfitTarget);
}

std::string yardstick_note(double model_bits_per_byte, const Yardstick& y, std::size_t train_chars,
                           std::size_t val_chars) {
  const bool bigram = model_bits_per_byte < y.bigram_bits_per_byte;
  const bool xz = model_bits_per_byte < y.xz_bits_per_byte;
  const char* verdict = bigram && xz ? "it beats both"
                        : bigram     ? "it beats the bigram model, not xz yet"
                        : xz         ? "it beats xz, not the bigram model yet"
                                     : "it beats neither yet: train longer, or check the recipe";
  std::string text = fmt::format(
      "yardstick on the same validation split: a character bigram model (counted on the "
      "training split, add-one smoothing) {:.4f} bits per byte, xz -9 given the training split "
      "{:.4f}; this model {:.4f}: {}\n",
      y.bigram_bits_per_byte, y.xz_bits_per_byte, model_bits_per_byte, verdict);
  if (y.train_chars < train_chars || y.val_chars < val_chars)
    text += fmt::format(
        "  (the yardsticks read the last {} of the training split's {} characters and the "
        "first {} of the validation split's {})\n",
        y.train_chars, train_chars, y.val_chars, val_chars);
  return text;
}

}  // namespace glass
