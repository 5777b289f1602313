#pragma once
// Batches of conversations for chat fine-tuning: each row of a batch is one conversation rendered
// by the chat template (data/chat_template.hpp), padded at its end. The model reads ids[0, n-1)
// and is trained to predict labels[1, n): the answers' tokens and their <|im_end|>; the template's
// ignored labels and the padding are targets -1, which the loss does not count.
//
// Padding, not packing: a row holds one conversation and nothing else, so attention never
// crosses from one conversation into another (packing several into a row would waste no
// positions but, without a mask between documents, let an answer read an unrelated conversation).
// A padded position changes nothing: it comes after every counted target of its row, and
// attention is causal.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "data/batches.hpp"
#include "data/chat_template.hpp"

namespace glass {

/// Rows of conversations drawn uniformly at random (with replacement) from a set, by a seeded
/// std::mt19937_64 whose state a checkpoint saves (Batches).
class ChatBatches : public Batches {
 public:
  /// `conversations` are rendered (render_chat), each of 2 to context + 1 ids (the last one is
  /// only predicted). `pad_id` fills the inputs after a conversation (any id of the vocabulary:
  /// no counted target follows it). Throws std::invalid_argument for no conversation, a batch
  /// size or context of 0, or a conversation of another length.
  ChatBatches(std::vector<ChatTokens> conversations, std::size_t batch_size, std::size_t context,
              std::int32_t pad_id, std::uint64_t seed);

  /// The next B rows: inputs x (B, T) and targets y (B, T), -1 where not counted, flat.
  Batch next_batch() override;
  std::string state() const override;
  void set_state(const std::string& state) override;

  /// Rows `first` .. `first + count - 1` of the set in order, as one batch of `count` rows (the
  /// exact loss of a whole set, batch by batch). Throws std::out_of_range past the end.
  void rows_in_order(std::size_t first, std::size_t count, IdArray& x, IdArray& y) const;
  std::size_t size() const { return conversations_.size(); }

 private:
  /// One row of T inputs and targets from conversation `c`, written at x[0..T) and y[0..T).
  void fill_row(const ChatTokens& c, std::int32_t* x, std::int32_t* y) const;
  std::vector<ChatTokens> conversations_;
  std::size_t batch_size_, context_;
  std::int32_t pad_id_;
  std::mt19937_64 engine_;
};

/// The conversations of a chat fine-tune (TrainOptions::chat), as the Trainer reads and renders
/// them.
struct ChatRun {
  std::vector<Conversation> train, val;  ///< as read (val: its file, or the training file's tail)
  std::string val_source;                ///< where val comes from, in words
  std::vector<ChatTokens> train_tokens, val_tokens;  ///< rendered with the run's tokenizer
  std::size_t train_targets = 0, val_targets = 0;    ///< their counted targets
  std::size_t base_vocab = 0;                        ///< the base's vocabulary size (0 on resume)
  std::vector<char32_t> added;            ///< the characters the base's vocabulary lacked
  std::unique_ptr<ChatBatches> val_rows;  ///< val in order (the exact validation loss)
};

}  // namespace glass
