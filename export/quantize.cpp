// The reference quantizer (see quantize.hpp): each function is ggml's reference written again,
// in the same float32 operations in the same order. This file is compiled with
// -ffp-contract=off (export/CMakeLists.txt): x · id + 8.5 fused into one FMA would round once
// where ggml's reference rounds twice, and could land a tie on the other side.

#include "export/quantize.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

namespace glass {

namespace {

std::uint32_t bits_of(float x) {
  std::uint32_t w;
  std::memcpy(&w, &x, sizeof w);
  return w;
}

void append_fp16(std::string& out, float x) {
  const std::uint16_t h = fp32_to_fp16(x);
  out += static_cast<char>(h & 0xFF);  // little-endian
  out += static_cast<char>(h >> 8);
}

float read_fp16(const std::string& bytes, std::size_t at) {
  const auto lo = static_cast<std::uint8_t>(bytes[at]),
             hi = static_cast<std::uint8_t>(bytes[at + 1]);
  return fp16_to_fp32(static_cast<std::uint16_t>(lo | (hi << 8)));
}

constexpr std::size_t kQ8Bytes = 2 + kQuantBlock;      // block_q8_0: d, qs[32]
constexpr std::size_t kQ4Bytes = 2 + kQuantBlock / 2;  // block_q4_0: d, qs[16]

}  // namespace

const char* weight_type_name(WeightType type) {
  switch (type) {
    case WeightType::f32:
      return "f32";
    case WeightType::f16:
      return "f16";
    case WeightType::q8_0:
      return "q8_0";
    case WeightType::q4_0:
      return "q4_0";
  }
  return "?";
}

std::vector<std::string> weight_type_names() { return {"f32", "f16", "q8_0", "q4_0"}; }

std::optional<WeightType> parse_weight_type(const std::string& name) {
  for (WeightType t : {WeightType::f32, WeightType::f16, WeightType::q8_0, WeightType::q4_0})
    if (name == weight_type_name(t)) return t;
  return std::nullopt;
}

std::uint32_t ggml_type_id(WeightType type) {
  switch (type) {
    case WeightType::f32:
      return 0;  // GGML_TYPE_F32
    case WeightType::f16:
      return 1;  // GGML_TYPE_F16
    case WeightType::q4_0:
      return 2;  // GGML_TYPE_Q4_0
    case WeightType::q8_0:
      return 8;  // GGML_TYPE_Q8_0
  }
  return 0;
}

std::size_t weight_bytes(WeightType type, std::size_t n) {
  switch (type) {
    case WeightType::f32:
      return 4 * n;
    case WeightType::f16:
      return 2 * n;
    case WeightType::q8_0:
      return n / kQuantBlock * kQ8Bytes;
    case WeightType::q4_0:
      return n / kQuantBlock * kQ4Bytes;
  }
  return 0;
}

std::string WeightCount::shares() const {
  std::vector<std::pair<std::size_t, WeightType>> order;
  for (WeightType t : {WeightType::f32, WeightType::f16, WeightType::q8_0, WeightType::q4_0})
    if (weights[static_cast<int>(t)] > 0) order.emplace_back(weights[static_cast<int>(t)], t);
  std::stable_sort(order.begin(), order.end(), [](auto& a, auto& b) { return a.first > b.first; });
  std::string out;
  for (const auto& [n, t] : order)
    out += fmt::format("{}{:.1f}% {}", out.empty() ? "" : ", ",
                       100.0 * static_cast<double>(n) / static_cast<double>(total()),
                       weight_type_name(t));
  return out;
}

WeightType tensor_type(WeightType wanted, const std::vector<std::size_t>& shape) {
  if (shape.size() < 2) return WeightType::f32;
  const bool blocked = wanted == WeightType::q8_0 || wanted == WeightType::q4_0;
  if (blocked && shape.back() % kQuantBlock != 0) return WeightType::f16;
  return wanted;
}

std::uint16_t fp32_to_fp16(float x) {
  const std::uint32_t w = bits_of(x);
  const std::uint16_t sign = static_cast<std::uint16_t>((w >> 16) & 0x8000);
  const float a = std::fabs(x);
  if (std::isnan(x)) return sign | 0x7E00;  // a quiet NaN
  // 65520 is halfway between the largest half, 65504, and 65536: ties go to the even
  // mantissa, which is 65536's, past the range: infinity.
  if (a >= 65520.0f) return sign | 0x7C00;
  if (a < 0x1p-14f) {
    // Subnormal half: a whole number of 2^-24, rounded half to even (nearbyint in the default
    // rounding mode). 1024 · 2^-24 = 2^-14 is the smallest normal half, whose bits are 0x0400.
    return sign | static_cast<std::uint16_t>(std::nearbyint(a * 0x1p24f));
  }
  // Normal: the exponent rebiased (127 → 15), the 23-bit mantissa cut to 10 bits, rounded half to
  // even on the 13 bits dropped; a carry out of the mantissa steps the exponent, as it should.
  const std::uint32_t exponent = ((w >> 23) & 0xFF) - 127 + 15;
  const std::uint32_t mantissa = w & 0x7FFFFF;
  std::uint32_t h = (exponent << 10) | (mantissa >> 13);
  const std::uint32_t dropped = mantissa & 0x1FFF;
  if (dropped > 0x1000 || (dropped == 0x1000 && (h & 1) != 0)) ++h;
  return sign | static_cast<std::uint16_t>(h);
}

float fp16_to_fp32(std::uint16_t h) {
  const float sign = (h & 0x8000) != 0 ? -1.0f : 1.0f;
  const int exponent = (h >> 10) & 0x1F;
  const int mantissa = h & 0x3FF;
  if (exponent == 0x1F) return mantissa != 0 ? std::nanf("") : sign * INFINITY;
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), -24);  // subnormal
  return sign * std::ldexp(static_cast<float>(1024 + mantissa), exponent - 25);
}

std::string quantize_block_q8_0(const float* x) {
  // quantize_row_q8_0_ref: d = amax / 127, id = 1/d, q = roundf(x · id).
  float amax = 0.0f;
  for (std::size_t j = 0; j < kQuantBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  std::string block;
  append_fp16(block, d);
  for (std::size_t j = 0; j < kQuantBlock; ++j)
    block += static_cast<char>(static_cast<std::int8_t>(std::roundf(x[j] * id)));
  return block;
}

std::string quantize_block_q4_0(const float* x) {
  // quantize_row_q4_0_ref: max = the first x of largest |x|, d = max / -8, id = 1/d,
  // q = min(15, (int8_t)(x · id + 8.5)): the cast truncates, so + 8.5 rounds x · id + 8 to
  // nearest, halves up.
  float amax = 0.0f, max = 0.0f;
  for (std::size_t j = 0; j < kQuantBlock; ++j)
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  const float d = max / -8;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  std::string block;
  append_fp16(block, d);
  const auto level = [&](float v) {
    const float scaled = v * id;
    return static_cast<std::uint8_t>(
        std::min(15, static_cast<int>(static_cast<std::int8_t>(scaled + 8.5f))));
  };
  for (std::size_t j = 0; j < kQuantBlock / 2; ++j)
    block += static_cast<char>(level(x[j]) | (level(x[j + kQuantBlock / 2]) << 4));
  return block;
}

std::string quantize(WeightType type, const float* x, std::size_t n) {
  std::string out;
  switch (type) {
    case WeightType::f32:
      out.assign(reinterpret_cast<const char*>(x), n * sizeof(float));
      return out;
    case WeightType::f16:
      for (std::size_t i = 0; i < n; ++i) append_fp16(out, x[i]);
      return out;
    case WeightType::q8_0:
    case WeightType::q4_0:
      if (n % kQuantBlock != 0)
        throw std::invalid_argument(
            fmt::format("{} values cannot be cut into {} blocks of 32", n, weight_type_name(type)));
      for (std::size_t b = 0; b < n; b += kQuantBlock)
        out += type == WeightType::q8_0 ? quantize_block_q8_0(x + b) : quantize_block_q4_0(x + b);
      return out;
  }
  return out;
}

std::vector<float> dequantize(WeightType type, const std::string& bytes, std::size_t n) {
  const bool blocked = type == WeightType::q8_0 || type == WeightType::q4_0;
  if ((blocked && n % kQuantBlock != 0) || bytes.size() != weight_bytes(type, n))
    throw std::invalid_argument(
        fmt::format("{} bytes are not {} values of {}", bytes.size(), n, weight_type_name(type)));
  std::vector<float> y(n);
  const auto byte = [&](std::size_t at) { return static_cast<std::uint8_t>(bytes[at]); };
  switch (type) {
    case WeightType::f32:
      std::memcpy(y.data(), bytes.data(), bytes.size());
      break;
    case WeightType::f16:
      for (std::size_t i = 0; i < n; ++i) y[i] = read_fp16(bytes, 2 * i);
      break;
    case WeightType::q8_0:  // dequantize_row_q8_0: y = q · d
      for (std::size_t b = 0; b < n / kQuantBlock; ++b) {
        const std::size_t at = b * kQ8Bytes;
        const float d = read_fp16(bytes, at);
        for (std::size_t j = 0; j < kQuantBlock; ++j)
          y[b * kQuantBlock + j] =
              static_cast<float>(static_cast<std::int8_t>(byte(at + 2 + j))) * d;
      }
      break;
    case WeightType::q4_0:  // dequantize_row_q4_0: y = (q - 8) · d, low nibbles first
      for (std::size_t b = 0; b < n / kQuantBlock; ++b) {
        const std::size_t at = b * kQ4Bytes;
        const float d = read_fp16(bytes, at);
        for (std::size_t j = 0; j < kQuantBlock / 2; ++j) {
          y[b * kQuantBlock + j] = static_cast<float>((byte(at + 2 + j) & 0x0F) - 8) * d;
          y[b * kQuantBlock + j + kQuantBlock / 2] =
              static_cast<float>((byte(at + 2 + j) >> 4) - 8) * d;
        }
      }
      break;
  }
  return y;
}

}  // namespace glass
