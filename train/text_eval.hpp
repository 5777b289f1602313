#pragma once
// The mean next-token loss of a saved model over a whole text file (`glass eval`), also in bits
// per byte: what a checkpoint predicts on text it never saw.

#include <cstddef>
#include <string>

#include "checkpoint/checkpoint.hpp"

namespace glass {

/// What `evaluate_text` measured and the counts it was taken over.
struct TextEvaluation {
  double loss = 0;              ///< mean cross-entropy, nats per token
  std::size_t predictions = 0;  ///< tokens predicted (all but the first)
  std::size_t text_bytes = 0;   ///< the text's UTF-8 bytes
  std::size_t window = 0;       ///< the most tokens each prediction saw (Checkpoint::window)
  std::size_t unknown = 0;      ///< characters mapped to the unknown id 0
  double bits_per_byte = 0;     ///< the total loss over the bytes (bits_per_byte)
};

/// The loss of `loaded` over the text file at `path`, read and encoded as in training (a BPE
/// model's dummy prefix at its start; characters outside a character vocabulary are an
/// UnknownCharacterError unless `allow_unknown`, or the vocabulary is full and they are the
/// unknown token by design), measured by text_loss (train/text_loss.hpp) in non-overlapping
/// windows of the model's window: every token after the first predicted exactly once, as
/// `glass train` measures its validation split. std::invalid_argument for a text of fewer than
/// 2 tokens; std::runtime_error when a window's loss is not finite (corrupt or diverged weights).
TextEvaluation evaluate_text(const Checkpoint& loaded, const std::string& path, bool allow_unknown);

}  // namespace glass
