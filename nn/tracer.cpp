#include "nn/tracer.hpp"

#include <algorithm>
#include <stdexcept>

namespace glass {
inline namespace GLASS_PRECISION {

void Tracer::record(const std::string& name, const Array& value, bool has_batch_axis) {
  Array copy;
  if (!has_batch_axis) {
    copy = value;
  } else {
    // Keep batch element batch_index_: the contiguous block value[batch_index_, ...].
    if (value.dimension() == 0 || batch_index_ >= value.shape()[0]) {
      throw std::out_of_range("Tracer::record: \"" + name + "\" has shape " +
                              shape_str(shape_of(value)) + ", no batch element " +
                              std::to_string(batch_index_));
    }
    Shape shape(value.shape().begin() + 1, value.shape().end());
    copy = Array::from_shape(shape);
    const std::size_t block = copy.size();
    const Scalar* first = value.data() + batch_index_ * block;
    std::copy(first, first + block, copy.data());
  }
  if (values_.find(name) == values_.end()) order_.push_back(name);
  values_[name] = std::move(copy);
}

bool Tracer::has(const std::string& name) const { return values_.count(name) > 0; }

const Array& Tracer::get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) {
    std::string known;
    for (const auto& n : order_) known += (known.empty() ? "" : ", ") + n;
    throw std::out_of_range("Tracer: no snapshot named \"" + name + "\"; recorded: " +
                            (known.empty() ? std::string("(nothing)") : known));
  }
  return it->second;
}

void Tracer::clear() {
  values_.clear();
  order_.clear();
}

const std::vector<std::string>& Tracer::attention_snapshots() {
  static const std::vector<std::string> names = {
      "attn.q",      "attn.k",    "attn.v",       "attn.rope_q", "attn.rope_k",
      "attn.scores", "attn.mask", "attn.softmax", "attn.mix",    "attn.out"};
  return names;
}

}  // namespace GLASS_PRECISION
}  // namespace glass
