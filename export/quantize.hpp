#pragma once
// The reference quantizer: ggml's weight formats written out as their math, byte for byte as
// ggml's reference code writes them (ggml-quants.c: quantize_row_q8_0_ref,
// quantize_row_q4_0_ref, dequantize_row_q8_0, dequantize_row_q4_0; ggml-impl.h:
// GGML_FP32_TO_FP16), so that a file glass writes is the file llama.cpp's own tools would write.
//
// A row of weights is cut into blocks of 32 (QK8_0 = QK4_0 = 32). Each block keeps one scale d
// as a 16-bit float and 32 small integers q; the block's values are read back as q · d.
//   Q8_0 (34 bytes, 8.5 bits per weight):  d = max|x| / 127,  q = round(x / d) in [-127, 127]
//                                           bytes: d (fp16), q[0..32) (int8)
//   Q4_0 (18 bytes, 4.5 bits per weight):  m = the x of largest |x| (its sign kept), d = m / -8,
//                                           q = min(15, trunc(x / d + 8.5)) in [0, 15],
//                                           read back as (q - 8) · d
//                                           bytes: d (fp16), then 16 bytes: byte j holds
//                                           element j in its low nibble, element j + 16 in its
//                                           high one
// "x / d" is x · id with id = 1/d (0 when d = 0: a zero block), in float32 as ggml computes it;
// round() rounds halves away from zero (roundf). Q4_0's d takes the sign that puts m at q = 0:
// the extreme value is kept exactly (to d's fp16 rounding), the other side loses one level.
//
// Which type a tensor gets (tensor_type): a vector (the RMSNorm gains) stays F32, a matrix whose
// rows are not a multiple of 32 long cannot be cut into blocks and is written in F16, as
// llama.cpp's converter does (convert_hf_to_gguf.py falls back to F16 on a shape it cannot
// quantize).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace glass {

/// The weight formats, named as ggml names them.
enum class WeightType { f32, f16, q8_0, q4_0 };

/// Elements per Q8_0 / Q4_0 block (ggml's QK8_0 = QK4_0 = 32).
constexpr std::size_t kQuantBlock = 32;

/// "f32", "f16", "q8_0", "q4_0".
const char* weight_type_name(WeightType type);
/// The names above in that order (for a flag's choices).
std::vector<std::string> weight_type_names();
/// The type named `name` (exactly as weight_type_name spells it), or nothing.
std::optional<WeightType> parse_weight_type(const std::string& name);
/// ggml's type id (ggml.h: enum ggml_type): F32 = 0, F16 = 1, Q4_0 = 2, Q8_0 = 8.
std::uint32_t ggml_type_id(WeightType type);
/// Bytes of `n` values of `type` (n a multiple of 32 for Q8_0 and Q4_0): 4n, 2n, 34 n/32, 18 n/32.
std::size_t weight_bytes(WeightType type, std::size_t n);

/// The type a tensor of `shape` (slowest axis first) is stored in when `wanted` is asked: F32 for
/// a vector; F16 for a Q8_0/Q4_0 matrix whose rows (the last axis) are not a multiple of 32;
/// `wanted` otherwise.
WeightType tensor_type(WeightType wanted, const std::vector<std::size_t>& shape);

/// IEEE half precision of `x`, rounded to nearest, ties to even (as GGML_FP32_TO_FP16 and the
/// F16C instruction vcvtps2ph): subnormal halves below 2^-14, ±inf from 65520 on, NaN kept.
std::uint16_t fp32_to_fp16(float x);
/// The float32 value of the half `h` (exact).
float fp16_to_fp32(std::uint16_t h);

/// `n` values as the bytes of `type` (n a multiple of 32 for Q8_0 and Q4_0, else
/// std::invalid_argument): F32 as they are, F16 each rounded, Q8_0 / Q4_0 block by block.
std::string quantize(WeightType type, const float* x, std::size_t n);
/// The `n` values that the bytes of `type` hold (bytes.size() must be weight_bytes(type, n),
/// else std::invalid_argument).
std::vector<float> dequantize(WeightType type, const std::string& bytes, std::size_t n);

/// How many weights a model or a file holds in each type, and the bytes they take.
struct WeightCount {
  std::size_t weights[4] = {};  ///< indexed by WeightType: f32, f16, q8_0, q4_0
  std::size_t bytes = 0;        ///< the tensors' data, without the file's alignment padding

  void add(WeightType type, std::size_t n) {
    weights[static_cast<int>(type)] += n;
    bytes += weight_bytes(type, n);
  }
  std::size_t total() const { return weights[0] + weights[1] + weights[2] + weights[3]; }
  /// bytes · 8 / weights: what the whole file pays per weight, norms and F16 rows included.
  double bits_per_weight() const { return total() == 0 ? 0.0 : 8.0 * bytes / total(); }
  /// "45.3% q4_0, 30.1% f16, 24.6% ..." (types that hold weights, most first).
  std::string shares() const;
};

/// One Q8_0 block (34 bytes) of x[0..32).
std::string quantize_block_q8_0(const float* x);
/// One Q4_0 block (18 bytes) of x[0..32).
std::string quantize_block_q4_0(const float* x);

}  // namespace glass
