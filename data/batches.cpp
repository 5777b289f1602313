// Train/validation split and the random-window batch sampler. See data/batches.hpp.

#include "data/batches.hpp"

#include <fmt/format.h>

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace glass {

Split split_train_val(const std::vector<std::int32_t>& ids, double train_fraction) {
  if (!(train_fraction > 0.0 && train_fraction < 1.0)) {
    throw std::invalid_argument(
        fmt::format("train fraction must be between 0 and 1 (exclusive), got {}", train_fraction));
  }
  const auto n =
      static_cast<std::size_t>(std::floor(static_cast<double>(ids.size()) * train_fraction));
  Split split;
  split.train.assign(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n));
  split.val.assign(ids.begin() + static_cast<std::ptrdiff_t>(n), ids.end());
  return split;
}

void require_window(std::size_t size, std::size_t context, const std::string& what) {
  if (size < context + 1) {
    throw std::invalid_argument(fmt::format(
        "the {} has {} characters, but a context of {} needs at least {} (one window of {} "
        "plus the next character to predict)",
        what, size, context, context + 1, context));
  }
}

void require_window(const std::vector<std::int32_t>& ids, std::size_t context,
                    const std::string& what) {
  require_window(ids.size(), context, what);
}

BatchSampler::BatchSampler(const std::vector<std::int32_t>& ids, std::size_t batch_size,
                           std::size_t context, std::uint64_t seed, std::string what)
    : BatchSampler(std::make_shared<const TokenIds>(TokenIds::from(ids)), 0, ids.size(), batch_size,
                   context, seed, std::move(what)) {}

BatchSampler::BatchSampler(std::shared_ptr<const TokenIds> ids, std::size_t begin, std::size_t end,
                           std::size_t batch_size, std::size_t context, std::uint64_t seed,
                           std::string what)
    : ids_(std::move(ids)),
      begin_(begin),
      size_(end - begin),
      batch_size_(batch_size),
      context_(context),
      what_(std::move(what)),
      engine_(seed) {
  if (!ids_ || begin > end || end > ids_->size())
    throw std::invalid_argument("BatchSampler: the range is outside the ids");
  if (batch_size_ == 0) throw std::invalid_argument("batch size must be at least 1");
  if (context_ == 0) throw std::invalid_argument("context length must be at least 1");
  require_window(size_, context_, what_);
}

Batch BatchSampler::next() {
  Batch batch;
  batch.batch_size = batch_size_;
  batch.context = context_;
  batch.x.resize(batch_size_ * context_);
  batch.y.resize(batch_size_ * context_);
  batch.starts.resize(batch_size_);
  // i in [0, len - T - 1]: the last target id[i + T] is still inside the data.
  std::uniform_int_distribution<std::size_t> start_dist(0, size_ - context_ - 1);
  const TokenIds& ids = *ids_;
  for (std::size_t b = 0; b < batch_size_; ++b) {
    const std::size_t i = start_dist(engine_);
    batch.starts[b] = i;
    for (std::size_t t = 0; t < context_; ++t) {
      batch.x[b * context_ + t] = ids[begin_ + i + t];
      batch.y[b * context_ + t] = ids[begin_ + i + t + 1];
    }
  }
  return batch;
}

std::string BatchSampler::state() const {
  std::ostringstream out;
  out << engine_;
  return out.str();
}

void BatchSampler::set_state(const std::string& state) {
  std::istringstream in(state);
  std::mt19937_64 restored;
  in >> restored;
  if (in.fail()) {
    throw std::invalid_argument("cannot restore the batch sampler: the saved RNG state is corrupt");
  }
  engine_ = restored;
}

}  // namespace glass
