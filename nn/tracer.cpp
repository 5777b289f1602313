#include "nn/tracer.hpp"

#include "autograd/tape.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace glass {
inline namespace GLASS_PRECISION {

void Tracer::record(const std::string& name, const Array& value, bool has_batch_axis) {
  if (!recording_) return;
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

void Tracer::add_hook(const std::string& name, Hook hook) {
  hooks_.emplace_back(name, std::move(hook));
}

Tensor Tracer::point(const std::string& name, const Tensor& x, bool snapshot) {
  Tensor out = run_hooks(name, x, snapshot);
  auto watch = watched_.find(name);
  if (watch == watched_.end()) return out;
  if (is_recording() && !out.requires_grad()) out = Tensor(out.value(), true);
  watch->second = out;
  return out;
}

Tensor Tracer::run_hooks(const std::string& name, const Tensor& x, bool snapshot) {
  bool any = false;
  for (const auto& [target, hook] : hooks_) any = any || target.empty() || target == name;
  if (!any) {
    if (snapshot) record(name, x.value());
    return x;
  }
  Array value = x.value();  // the hooks work on a copy; x (and the tape) stay as they were
  for (const auto& [target, hook] : hooks_) {
    if (target.empty() || target == name) hook(name, value);
  }
  if (shape_of(value) != x.shape()) {
    throw std::invalid_argument("Tracer: a hook at \"" + name + "\" changed the shape " +
                                shape_str(x.shape()) + " to " + shape_str(shape_of(value)));
  }
  const bool changed =  // bitwise, so that a NaN left alone counts as unchanged
      std::memcmp(value.data(), x.value().data(), value.size() * sizeof(Scalar)) != 0;
  if (snapshot) record(name, changed ? value : x.value());
  return changed ? Tensor(std::move(value)) : x;
}

void Tracer::watch(const std::string& name) { watched_.emplace(name, Tensor()); }

const Tensor& Tracer::watched(const std::string& name) const {
  auto it = watched_.find(name);
  if (it == watched_.end() || !it->second.defined())
    throw std::out_of_range("Tracer: no watched tensor at \"" + name + "\"" +
                            (it == watched_.end() ? " (not watched)" : " (not reached)"));
  return it->second;
}

bool Tracer::has(const std::string& name) const { return values_.count(name) > 0; }

const Array& Tracer::get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) {
    std::string known;
    for (const auto& n : order_) known += (known.empty() ? "" : ", ") + n;
    throw std::out_of_range("Tracer: no snapshot named \"" + name +
                            "\"; recorded: " + (known.empty() ? std::string("(nothing)") : known));
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
