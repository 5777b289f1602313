// quantize_weights (see quantize_model.hpp).

#include "export/quantize_model.hpp"

#include <algorithm>
#include <vector>

namespace glass {

WeightCount quantize_weights(Decoder& model, WeightType type) {
  WeightCount count;
  for (auto& [name, p] : model.named_parameters()) {
    Array& w = p.value();
    const std::vector<std::size_t> shape(w.shape().begin(), w.shape().end());
    const WeightType stored = tensor_type(type, shape);
    count.add(stored, w.size());
    if (stored == WeightType::f32) continue;
    const std::vector<float> back =
        dequantize(stored, quantize(stored, w.data(), w.size()), w.size());
    std::copy(back.begin(), back.end(), w.data());
  }
  return count;
}

}  // namespace glass
