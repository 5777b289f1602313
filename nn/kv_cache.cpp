// The KV cache: each decoder block's post-RoPE keys and values (LayerKVCache), kept for
// generation so that earlier positions are not recomputed, and dropped from the front when
// generation rolls past the window (drop_oldest; see nn/decoder.hpp for why RoPE allows it).

#include "nn/decoder.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace glass {
inline namespace GLASS_PRECISION {

// ---- KV cache ------------------------------------------------------------------------------

LayerKVCache::LayerKVCache(std::size_t batch_size, std::size_t capacity, std::size_t n_kv_heads,
                           std::size_t head_dim)
    : keys(Shape{batch_size, capacity, n_kv_heads, head_dim}, Scalar(0)),
      values(Shape{batch_size, capacity, n_kv_heads, head_dim}, Scalar(0)),
      capacity_(capacity),
      batch_size_(batch_size),
      n_kv_heads_(n_kv_heads),
      head_dim_(head_dim) {}

void LayerKVCache::advance(std::size_t n) {
  if (length_ + n > capacity_) {
    throw std::invalid_argument("KVCache::advance: " + std::to_string(length_) + " + " +
                                std::to_string(n) + " positions exceed the capacity " +
                                std::to_string(capacity_));
  }
  length_ += n;
}

void LayerKVCache::drop_oldest(std::size_t n) {
  if (n > length_) {
    throw std::invalid_argument("KVCache::drop_oldest: cannot drop " + std::to_string(n) + " of " +
                                std::to_string(length_) + " cached positions");
  }
  if (n == 0) return;  // (std::copy onto its own range would be undefined)
  // Per batch row, slots n .. length_-1 (contiguous: positions before heads) move to the front.
  const std::size_t row = n_kv_heads_ * head_dim_;  // one position, all heads
  for (std::size_t b = 0; b < batch_size_; ++b) {
    Scalar* k = keys.data() + b * capacity_ * row;
    Scalar* v = values.data() + b * capacity_ * row;
    std::copy(k + n * row, k + length_ * row, k);
    std::copy(v + n * row, v + length_ * row, v);
  }
  length_ -= n;
  first_position_ += n;
}

std::pair<Tensor, Tensor> LayerKVCache::extend(const Tensor& new_keys, const Tensor& new_values) {
  const std::size_t start = length_;
  const Tensor past_keys(cached_keys(start)), past_values(cached_values(start));
  append(new_keys.value(), new_values.value());
  if (start == 0) return {new_keys, new_values};
  return {concat({past_keys, new_keys}, 1), concat({past_values, new_values}, 1)};
}

KVCache::KVCache(const ModelConfig& config, std::size_t batch_size)
    : capacity_(config.context_length), batch_size_(batch_size) {
  if (batch_size == 0) throw std::invalid_argument("KVCache: batch_size must be at least 1");
  for (std::size_t layer = 0; layer < config.n_layers; ++layer)
    layers.emplace_back(batch_size, config.context_length, config.n_kv_heads, config.head_dim());
}

void KVCache::clear() {
  for (auto& layer : layers) layer.clear();
}

void KVCache::drop_oldest(std::size_t n) {
  for (auto& layer : layers) layer.drop_oldest(n);
}

void KVCache::advance(std::size_t n) {
  if (length() + n > capacity_) {
    throw std::invalid_argument("KVCache::advance: " + std::to_string(length()) + " + " +
                                std::to_string(n) + " positions exceed the capacity " +
                                std::to_string(capacity_));
  }
  for (auto& layer : layers) layer.advance(n);
}

void LayerKVCache::append(const Array& new_keys, const Array& new_values) {
  const Shape shape = shape_of(new_keys);
  if (shape.size() != 4 || shape[0] != batch_size_ || shape[2] != n_kv_heads_ ||
      shape[3] != head_dim_ || shape_of(new_values) != shape) {
    throw std::invalid_argument(
        "KVCache::append: expected keys and values of shape (" + std::to_string(batch_size_) +
        ", n, " + std::to_string(n_kv_heads_) + ", " + std::to_string(head_dim_) + "), got " +
        shape_str(shape) + " and " + shape_str(shape_of(new_values)));
  }
  const std::size_t n = shape[1];
  if (length_ + n > capacity_) {
    throw std::invalid_argument("KVCache::append: " + std::to_string(length_) + " cached + " +
                                std::to_string(n) + " new positions exceed the capacity " +
                                std::to_string(capacity_));
  }
  // Positions come before heads, so for each batch row the n new positions (all heads) are one
  // contiguous block, written at positions length_ .. length_+n-1.
  const std::size_t block = n * n_kv_heads_ * head_dim_;
  for (std::size_t b = 0; b < batch_size_; ++b) {
    const std::size_t dst = (b * capacity_ + length_) * n_kv_heads_ * head_dim_;
    std::copy_n(new_keys.data() + b * block, block, keys.data() + dst);
    std::copy_n(new_values.data() + b * block, block, values.data() + dst);
  }
}

namespace {

// The first m positions of one layer's cache storage (B, capacity, H_kv, D): (B, m, H_kv, D),
// one contiguous copy per batch row.
Array first_positions(const Array& storage, std::size_t m) {
  const Shape& full = shape_of(storage);
  const std::size_t capacity = full[1], row = full[2] * full[3];  // one position, all heads
  Array out = Array::from_shape({full[0], m, full[2], full[3]});
  for (std::size_t b = 0; b < full[0]; ++b)
    std::copy_n(storage.data() + b * capacity * row, m * row, out.data() + b * m * row);
  return out;
}

}  // namespace

Array LayerKVCache::cached_keys(std::size_t m) const {
  return first_positions(keys, std::min(m, capacity_));
}

Array LayerKVCache::cached_values(std::size_t m) const {
  return first_positions(values, std::min(m, capacity_));
}

}  // namespace GLASS_PRECISION
}  // namespace glass
