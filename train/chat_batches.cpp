// Batches of conversations with their loss mask. See train/chat_batches.hpp.

#include "train/chat_batches.hpp"

#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

namespace glass {

ChatBatches::ChatBatches(std::vector<ChatTokens> conversations, std::size_t batch_size,
                         std::size_t context, std::int32_t pad_id, std::uint64_t seed)
    : conversations_(std::move(conversations)),
      batch_size_(batch_size),
      context_(context),
      pad_id_(pad_id),
      engine_(seed) {
  if (conversations_.empty()) throw std::invalid_argument("ChatBatches: no conversation");
  if (batch_size == 0 || context == 0)
    throw std::invalid_argument("ChatBatches: the batch size and the context must be at least 1");
  for (const ChatTokens& c : conversations_)
    if (c.ids.size() < 2 || c.ids.size() > context + 1 || c.labels.size() != c.ids.size())
      throw std::invalid_argument(fmt::format(
          "ChatBatches: a conversation of {} ids ({} labels) does not fit a window of {}",
          c.ids.size(), c.labels.size(), context));
}

void ChatBatches::fill_row(const ChatTokens& c, std::int32_t* x, std::int32_t* y) const {
  const std::size_t n = c.ids.size();  // x[t] = ids[t], y[t] = labels[t + 1], t < n - 1
  for (std::size_t t = 0; t < context_; ++t) {
    x[t] = t + 1 < n ? c.ids[t] : pad_id_;
    y[t] = t + 1 < n ? c.labels[t + 1] : kIgnoreLabel;
  }
}

Batch ChatBatches::next_batch() {
  Batch batch;
  batch.batch_size = batch_size_;
  batch.context = context_;
  batch.x.resize(batch_size_ * context_);
  batch.y.resize(batch_size_ * context_);
  std::uniform_int_distribution<std::size_t> pick(0, conversations_.size() - 1);
  for (std::size_t b = 0; b < batch_size_; ++b)
    fill_row(conversations_[pick(engine_)], batch.x.data() + b * context_,
             batch.y.data() + b * context_);
  return batch;
}

void ChatBatches::rows_in_order(std::size_t first, std::size_t count, IdArray& x,
                                IdArray& y) const {
  if (first + count > conversations_.size())
    throw std::out_of_range(
        fmt::format("ChatBatches: rows {}..{} of {}", first, first + count, conversations_.size()));
  x = IdArray::from_shape({count, context_});
  y = IdArray::from_shape({count, context_});
  for (std::size_t b = 0; b < count; ++b)
    fill_row(conversations_[first + b], x.data() + b * context_, y.data() + b * context_);
}

std::string ChatBatches::state() const {
  std::ostringstream out;
  out << engine_;
  return out.str();
}

void ChatBatches::set_state(const std::string& state) {
  std::istringstream in(state);
  std::mt19937_64 restored;
  in >> restored;
  if (in.fail())
    throw std::invalid_argument("cannot restore the chat batches: the saved RNG state is corrupt");
  engine_ = restored;
}

}  // namespace glass
