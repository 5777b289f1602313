// Batches of conversations with their loss mask. See train/chat_batches.hpp.

#include "train/chat_batches.hpp"

#include <algorithm>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

namespace glass {

ChatBatches::ChatBatches(std::vector<ChatTokens> conversations, std::size_t batch_size,
                         std::size_t context, std::int32_t pad_id, std::uint64_t seed,
                         std::size_t buckets)
    : conversations_(std::move(conversations)),
      batch_size_(batch_size),
      context_(context),
      pad_id_(pad_id),
      engine_(seed) {
  if (conversations_.empty()) throw std::invalid_argument("ChatBatches: no conversation");
  if (batch_size == 0 || context == 0 || buckets == 0)
    throw std::invalid_argument(
        "ChatBatches: the batch size, the context and the bucket count must be at least 1");
  for (const ChatTokens& c : conversations_)
    if (c.ids.size() < 2 || c.ids.size() > context + 1 || c.labels.size() != c.ids.size())
      throw std::invalid_argument(fmt::format(
          "ChatBatches: a conversation of {} ids ({} labels) does not fit a window of {}",
          c.ids.size(), c.labels.size(), context));
  // Sorted by length, cut into `buckets` runs of (nearly) equal size.
  const std::size_t n = conversations_.size(), k = std::min(buckets, n);
  by_length_.resize(n);
  std::iota(by_length_.begin(), by_length_.end(), std::size_t{0});
  std::stable_sort(by_length_.begin(), by_length_.end(), [&](std::size_t a, std::size_t b) {
    return conversations_[a].ids.size() < conversations_[b].ids.size();
  });
  for (std::size_t j = 0; j <= k; ++j) bucket_start_.push_back(j * n / k);
}

void ChatBatches::fill_row(const ChatTokens& c, std::size_t width, std::int32_t* x,
                           std::int32_t* y) const {
  const std::size_t n = c.ids.size();  // x[t] = ids[t], y[t] = labels[t + 1], t < n - 1
  for (std::size_t t = 0; t < width; ++t) {
    x[t] = t + 1 < n ? c.ids[t] : pad_id_;
    y[t] = t + 1 < n ? c.labels[t + 1] : kIgnoreLabel;
  }
}

Batch ChatBatches::rows(const std::vector<std::size_t>& rows, std::size_t width) const {
  std::size_t longest = 1;
  for (std::size_t r : rows) {
    if (r >= conversations_.size())
      throw std::out_of_range(fmt::format("ChatBatches: row {} of {}", r, conversations_.size()));
    longest = std::max(longest, conversations_[r].ids.size() - 1);
  }
  if (width == 0) width = longest;
  if (width < longest || width > context_)
    throw std::invalid_argument(
        fmt::format("ChatBatches: a width of {} for rows of up to {} inputs (context {})", width,
                    longest, context_));
  Batch batch;
  batch.batch_size = rows.size();
  batch.context = width;
  batch.x.resize(rows.size() * width);
  batch.y.resize(rows.size() * width);
  batch.starts = rows;
  for (std::size_t b = 0; b < rows.size(); ++b)
    fill_row(conversations_[rows[b]], width, batch.x.data() + b * width,
             batch.y.data() + b * width);
  return batch;
}

Batch ChatBatches::next_batch() {
  // The bucket of a conversation drawn uniformly, then B rows drawn uniformly inside it.
  std::uniform_int_distribution<std::size_t> pick(0, by_length_.size() - 1);
  const std::size_t first = pick(engine_);
  const std::size_t k =
      static_cast<std::size_t>(std::upper_bound(bucket_start_.begin(), bucket_start_.end(), first) -
                               bucket_start_.begin() - 1);
  std::uniform_int_distribution<std::size_t> in_bucket(bucket_start_[k], bucket_start_[k + 1] - 1);
  std::vector<std::size_t> drawn(batch_size_);
  for (std::size_t& r : drawn) r = by_length_[in_bucket(engine_)];
  return rows(drawn);
}

void ChatBatches::rows_in_order(std::size_t first, std::size_t count, IdArray& x,
                                IdArray& y) const {
  if (first + count > conversations_.size())
    throw std::out_of_range(
        fmt::format("ChatBatches: rows {}..{} of {}", first, first + count, conversations_.size()));
  std::vector<std::size_t> in_order(count);
  std::iota(in_order.begin(), in_order.end(), first);
  const Batch batch = rows(in_order);
  x = to_id_array(batch.x, batch.batch_size, batch.context);
  y = to_id_array(batch.y, batch.batch_size, batch.context);
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
