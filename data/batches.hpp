#pragma once
// Train/validation split and random batches of next-token windows.
//
// A batch holds B windows of T consecutive token ids taken from one split:
//   x[b] = data[i_b : i_b + T]        (the inputs)
//   y[b] = data[i_b + 1 : i_b + T + 1] (the targets: x shifted left by one)
// with each start i_b drawn uniformly from [0, len - T - 1], as nanoGPT's get_batch does.

#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <xtensor/xarray.hpp>

#include "data/token_ids.hpp"

namespace glass {

/// Token ids of the corpus cut in two by position: the first part trains, the rest validates.
struct Split {
  std::vector<std::int32_t> train;
  std::vector<std::int32_t> val;
};

/// Splits `ids` by characters: train = ids[0 : n], val = ids[n : len] with
/// n = floor(len * train_fraction). Throws std::invalid_argument if train_fraction is not in (0, 1).
Split split_train_val(const std::vector<std::int32_t>& ids, double train_fraction = 0.9);

/// Throws std::invalid_argument unless `ids` holds at least context + 1 tokens (one window plus
/// its shifted target). `what` names the data in the message, e.g. "validation split".
void require_window(const std::vector<std::int32_t>& ids, std::size_t context,
                    const std::string& what);
/// The same check for `size` tokens.
void require_window(std::size_t size, std::size_t context, const std::string& what);

/// One batch as flat row-major buffers of B * T ids.
struct Batch {
  std::size_t batch_size = 0;       ///< B
  std::size_t context = 0;          ///< T
  std::vector<std::int32_t> x;      ///< inputs, row b = x[b*T : (b+1)*T]
  std::vector<std::int32_t> y;      ///< targets, y[b*T + t] = x[b*T + t + 1] inside the corpus
  std::vector<std::size_t> starts;  ///< the window starts i_b (for tests and the inspector)
};

/// Token ids as an array of shape (B, T); the same type as glass::Ids in autograd/tensor.hpp.
using IdArray = xt::xarray<std::int32_t, xt::layout_type::row_major>;

/// Flat B*T ids -> an array of shape (B, T).
inline IdArray to_id_array(const std::vector<std::int32_t>& flat, std::size_t batch_size,
                           std::size_t context) {
  IdArray a = IdArray::from_shape({batch_size, context});
  std::copy(flat.begin(), flat.end(), a.data());
  return a;
}

/// Where a training loop draws its batches from: B rows of T input ids and their T targets
/// (a target -1 is not counted by the loss), with a state that a checkpoint saves so that a
/// resumed run draws the same batches. BatchSampler draws windows of a text; ChatBatches
/// (train/chat_batches.hpp) conversations with their loss mask.
class Batches {
 public:
  virtual ~Batches() = default;
  /// The next batch as flat rows. Virtual functions trade in Batch, never in IdArray: a class's
  /// virtual table is emitted with its first out-of-line virtual function, here in the data
  /// library, built without xtensor's SIMD allocator, where IdArray is another type than in the
  /// callers (one definition rule).
  virtual Batch next_batch() = 0;
  /// The next batch as (B, T) arrays of inputs and targets. (Inline and not virtual, so that
  /// xtensor is instantiated with the caller's build flags, not in the xtensor-free data library.)
  void next(IdArray& x, IdArray& y) {
    Batch batch = next_batch();
    x = to_id_array(batch.x, batch.batch_size, batch.context);
    y = to_id_array(batch.y, batch.batch_size, batch.context);
  }
  /// The random engine's state as text, for checkpoints.
  virtual std::string state() const = 0;
  /// Restores a state written by state(). Throws std::invalid_argument if it cannot be parsed.
  virtual void set_state(const std::string& state) = 0;
};

/// Draws batches of random windows from one split with its own seeded std::mt19937_64.
///
/// The sampler reads its ids from a TokenIds shared with the other samplers of the corpus (a
/// range of it: the training or the validation split), so a corpus is held once, in 1 or 2
/// bytes per character. Its whole state is the engine, which can be saved with
/// state() and restored with set_state() so that a resumed run draws exactly the same batches.
/// Starts are drawn with std::uniform_int_distribution (libstdc++'s algorithm: reproducible on
/// this toolchain, not necessarily across standard libraries).
class BatchSampler : public Batches {
 public:
  /// Throws std::invalid_argument if batch_size or context is zero, or if `ids` is shorter than
  /// context + 1 tokens (the message says how long it must be; `what` names the split).
  BatchSampler(const std::vector<std::int32_t>& ids, std::size_t batch_size, std::size_t context,
               std::uint64_t seed, std::string what = "training split");
  /// Windows from ids[begin, end) of a shared corpus (not copied); the same checks.
  BatchSampler(std::shared_ptr<const TokenIds> ids, std::size_t begin, std::size_t end,
               std::size_t batch_size, std::size_t context, std::uint64_t seed,
               std::string what = "training split");

  /// The next batch of B windows.
  Batch next();
  Batch next_batch() override { return next(); }
  using Batches::next;  // next(x, y): the next batch as (B, T) arrays

  std::size_t batch_size() const { return batch_size_; }
  std::size_t context() const { return context_; }
  /// Number of ids the windows are drawn from.
  std::size_t size() const { return size_; }

  /// The engine's state as text (std::mt19937_64's operator<<), for checkpoints.
  std::string state() const override;
  /// Restores a state written by state(). Throws std::invalid_argument if it cannot be parsed.
  void set_state(const std::string& state) override;
  /// The random engine that picks batch start positions.
  std::mt19937_64& engine() { return engine_; }

 private:
  std::shared_ptr<const TokenIds> ids_;
  std::size_t begin_ = 0, size_ = 0;  // the range [begin_, begin_ + size_) of *ids_
  std::size_t batch_size_;
  std::size_t context_;
  std::string what_;
  std::mt19937_64 engine_;
};

}  // namespace glass
