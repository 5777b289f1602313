#pragma once
// Batches of conversations for chat fine-tuning: each row of a batch is one conversation rendered
// by the chat template (data/chat_template.hpp), padded at its end to the batch's longest row. The
// model reads ids[0, n-1) and is trained to predict labels[1, n): the answers' tokens and their
// <|im_end|>; the template's ignored labels and the padding are targets -1, which the loss does
// not count.
//
// Length buckets: the conversations, sorted by length, are cut into buckets of about equal size,
// and a batch draws all its rows from one bucket, so its width (its longest row) is close to each
// of its rows' lengths instead of the longest conversation of the whole set. The bucket is the
// one of a conversation drawn uniformly, and the rows are drawn uniformly inside it, so every row
// is still a uniform draw from the whole set (P(c) = |bucket|/N * 1/|bucket| = 1/N); only rows of
// one batch are alike in length. A batch of a few short conversations costs a few short rows.
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

/// The length buckets of a set (see the file comment) unless told otherwise.
inline constexpr std::size_t kChatLengthBuckets = 16;

/// Rows of conversations drawn uniformly at random (with replacement) from a set, a batch from
/// one length bucket, by a seeded std::mt19937_64 whose state a checkpoint saves (Batches).
class ChatBatches : public Batches {
 public:
  /// `conversations` are rendered (render_chat), each of 2 to context + 1 ids (the last one is
  /// only predicted). `pad_id` fills the inputs after a conversation (any id of the vocabulary:
  /// no counted target follows it). `buckets` length buckets (at most one per conversation; 1:
  /// every batch draws from the whole set). Throws std::invalid_argument for no conversation, a
  /// batch size, context or bucket count of 0, or a conversation of another length.
  ChatBatches(std::vector<ChatTokens> conversations, std::size_t batch_size, std::size_t context,
              std::int32_t pad_id, std::uint64_t seed, std::size_t buckets = kChatLengthBuckets);

  /// The next B rows, T = the longest row's inputs (at most the context): inputs x (B, T) and
  /// targets y (B, T), -1 where not counted, flat; `starts` holds the conversations' indices.
  Batch next_batch() override;
  std::string state() const override;
  void set_state(const std::string& state) override;

  /// The conversations `rows` (indices into the set) as one batch padded to `width` inputs
  /// (0: the longest row's). Throws std::out_of_range for an index past the end and
  /// std::invalid_argument for a width shorter than a row or longer than the context.
  Batch rows(const std::vector<std::size_t>& rows, std::size_t width = 0) const;
  /// Rows `first` .. `first + count - 1` of the set in order, as one batch of `count` rows padded
  /// to their longest (the exact loss of a whole set, batch by batch). Throws std::out_of_range
  /// past the end.
  void rows_in_order(std::size_t first, std::size_t count, IdArray& x, IdArray& y) const;
  std::size_t size() const { return conversations_.size(); }

 private:
  /// One row of `width` inputs and targets from conversation `c`, at x[0..width), y[0..width).
  void fill_row(const ChatTokens& c, std::size_t width, std::int32_t* x, std::int32_t* y) const;
  std::vector<ChatTokens> conversations_;
  std::size_t batch_size_, context_;
  std::int32_t pad_id_;
  std::mt19937_64 engine_;
  std::vector<std::size_t> by_length_;     ///< the indices sorted by length (stable)
  std::vector<std::size_t> bucket_start_;  ///< bucket k: by_length_[start[k], start[k + 1])
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
