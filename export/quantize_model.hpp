#pragma once
// A model's weights quantized and read back in memory, with the GGUF exporter's rules
// (export/quantize.hpp: tensor_type decides each tensor, the same quantize and dequantize): the
// float model then computes with exactly the values a quantized file holds, so glass eval and
// glass sample measure what a format costs. llama.cpp computes the same products with its
// activations rounded to 8 bits as well (Q8_0 blocks of the input of each Q8_0/Q4_0 product);
// glass keeps them in float32, so it measures the weights' cost alone.

#include "export/quantize.hpp"
#include "nn/decoder.hpp"

namespace glass {

/// Replaces every parameter of `model` by its values stored as tensor_type(type, shape) and read
/// back: vectors (norm gains) unchanged, matrices in `type`, or in F16 when their rows are not a
/// multiple of 32 long. Returns the weights in each type and the bytes they would take.
/// `type` f32 changes nothing.
WeightCount quantize_weights(Decoder& model, WeightType type);

}  // namespace glass
