#pragma once
// What the numbers of a training run mean, in words a learner can act on: the loss at step 0
// against the uniform guess ln V, the gap between train and validation loss and overfitting at
// each evaluation, and a summary at the end. Pure functions of the numbers (the trainer prints
// them), so each message is tested on its own.
//
// Cross-entropy in nats per character: a model that gives every one of the V characters the
// same probability 1/V has loss -ln(1/V) = ln V; bits per character = nats / ln 2.

#include <cstddef>
#include <string>
#include <vector>

#include "data/yardstick.hpp"
#include "train/train_state.hpp"

namespace glass {

/// How far (in nats) the step-0 loss may be from ln V before it is flagged. A freshly
/// initialised model (weights of std 0.02) predicts almost uniformly: its loss is ln V within a
/// few hundredths; half a nat off means the logits are far from flat (a bad initialisation) or
/// the targets leak into the inputs (a loss far below ln V).
inline constexpr double kStepZeroTolerance = 0.5;

/// Evaluations without a new best validation loss after which the run is called overfitting.
inline constexpr int kPatienceEvals = 3;

/// How the size V of a vocabulary is said wherever the program shows it (`glass train`, the page
/// of `glass serve`): "vocabulary 83 (82 characters + the unknown id 0)". V counts the unknown
/// token, id 0, which is no character of the text; a uniform guess over the V entries has loss ln V.
std::string vocabulary_words(std::size_t vocab_size);

/// The line printed after the evaluation at step 0 of a fresh run, e.g.
///   "note: loss 4.4550 ≈ ln 83 = 4.4188: the model is guessing uniformly among the 83 entries of
///   its vocabulary (82 characters + the unknown id 0), as it should at the start"
/// or a "warning: ..." when |loss - ln V| > kStepZeroTolerance, saying what that points to.
/// `unit` names what one id stands for: "character" (the character tokenizer) or "token" (BPE:
/// the vocabulary is then described as BPE tokens, without the unknown id).
std::string step_zero_note(double loss, std::size_t vocab_size,
                           const std::string& unit = "character");

/// The note printed after an evaluation, given every evaluation so far (`log`, the last one just
/// added): "" when there is nothing to say; a note when the validation loss has not improved for
/// kPatienceEvals evaluations (overfitting: the best weights are kept in best.safetensors), when
/// it rose since the previous evaluation while the training loss fell, or (once, when it starts)
/// when the gap val - train widened at each of the last two evaluations, by 0.1 nats in all,
/// while the validation loss still fell.
std::string evaluation_note(const std::vector<LogRow>& log);

/// The lines printed when a run ends: the best validation loss and its step, first in bits per
/// byte (when `tokens_per_byte`, the validation split's tokens over its UTF-8 bytes, is > 0: the
/// figure a character run and a BPE run share), then per `unit` in nats, bits and perplexity, how it compares with ln V, and what to try next (train longer
/// when validation was still improving, less model or more text when it overfits).
std::string final_summary(const std::vector<LogRow>& log, std::size_t vocab_size, long iters,
                          const std::string& unit = "character", double tokens_per_byte = 0);

/// The loss a memorised batch should reach with --overfit-batch, at most (nats per character).
inline constexpr double kOverfitTarget = 0.3;

/// The verdict of --overfit-batch (llm.c's first check when something is wrong: a model that
/// cannot memorise one batch has a bug in its forward, backward or update): the batch loss went
/// from `first` to `last` in `steps` steps; below kOverfitTarget it passed.
std::string overfit_batch_note(double first, double last, std::size_t steps);

/// The yardstick line printed after final_summary: the bits per byte of an add-one character
/// bigram and of xz on the same validation split given the training split (data/yardstick.hpp),
/// beside the model's best (`model_bits_per_byte`), and which of them the model beats. Says
/// which part of each split the yardsticks read when a split was longer than their cap
/// (`val_chars` and `train_chars`: the splits' whole lengths in characters).
std::string yardstick_note(double model_bits_per_byte, const Yardstick& y, std::size_t train_chars,
                           std::size_t val_chars);

}  // namespace glass
