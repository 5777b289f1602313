// Fast kernel: masked_softmax = softmax(masked_fill(scores, mask, -inf)) in one pass.
// Replaces the reference ops masked_fill + softmax (ops_nn.cpp); tests/autograd/
// fused_vs_composed_f64_test.cpp and kernels_f64_test.cpp check values and gradients against them.

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "autograd/kernels/kernels.hpp"
#include "autograd/kernels/simd.hpp"
#include "autograd/kernels/grad_buffers.hpp"
#include "autograd/ops_util.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

namespace {
constexpr Scalar kMinusInf = -std::numeric_limits<Scalar>::infinity();

/// Splits shape (..., d) into rows x d; throws for 0-d input.
void rows_of(const Shape& s, const char* op, std::size_t& rows, std::size_t& d) {
  if (s.empty()) throw std::invalid_argument(std::string(op) + ": needs at least one axis, got shape ()");
  d = s.back();
  rows = d == 0 ? 0 : detail::numel(s) / d;
}
}  // namespace

// ---- masked_softmax ------------------------------------------------------------------------------
// softmax(masked_fill(x, mask, -inf)) in one pass: y_j = exp(x_j - max) / sum_k exp(x_k - max)
// over the allowed (unmasked) j and k, y_j = 0 at masked j. Backward, as softmax's:
// dx_j = y_j (g_j - sum_k g_k y_k) at allowed j, exactly 0 at masked j.
//
// Most attention rows are "prefix" rows: the first k keys are allowed and the rest masked (every
// row of a causal mask). Such a row only computes over x[0..k) and writes zeros after, so the
// masked future costs nothing. Any other row checks the flag of each entry.
Tensor masked_softmax(const Tensor& scores, const Mask& mask) {
  std::size_t rows, d;
  rows_of(scores.shape(), "masked_softmax", rows, d);
  std::vector<char> masked = detail::mask_flags(scores.shape(), mask, "masked_softmax");
  if (d > 0 && masked.size() % d != 0) masked.assign(d, masked[0]);  // mask of shape (): one row
  // The flags come in mask_rows rows of length d; scores row r uses flag row r % mask_rows.
  // prefix[q] = k when flag row q is k allowed entries then only masked ones, else kGeneral.
  constexpr std::size_t kGeneral = static_cast<std::size_t>(-1);
  const std::size_t mask_rows = d > 0 ? masked.size() / d : 0;
  std::vector<std::size_t> prefix(mask_rows);
  for (std::size_t q = 0; q < mask_rows; ++q) {
    const char* f = masked.data() + q * d;
    const std::size_t k = static_cast<std::size_t>(std::find(f, f + d, char(1)) - f);
    prefix[q] = std::all_of(f + k, f + d, [](char m) { return m != 0; }) ? k : kGeneral;
  }
  // A prefix row's exponentials and sum run over its first k entries rounded up to whole SIMD
  // batches (the entries between k and that bound are exp(-inf) = 0): then every entry goes
  // through the same vectorized exp, and the sum through the same partial sums, as the fast row
  // softmax over the full masked row (simd::softmax_row).
  constexpr std::size_t width = xsimd::batch<Scalar>::size;
  auto span_of = [d, width](std::size_t k) { return std::min(d, (k + width - 1) / width * width); };

  Array out = detail::empty_array(scores.shape());
  for (std::size_t r = 0; r < rows; ++r) {
    const Scalar* x = scores.value().data() + r * d;
    Scalar* y = out.data() + r * d;
    const std::size_t k = prefix[r % mask_rows];
    if (k != kGeneral) {
      const Scalar m = simd::max_n(x, k);  // -inf when k == 0 (fully masked row)
      if (m == kMinusInf) {  // nothing finite allowed: zeros, or NaN when an allowed entry is NaN
        std::fill(y, y + d, Scalar(0));
        if (std::any_of(x, x + k, [](Scalar v) { return std::isnan(v); }))
          std::fill(y, y + k, std::numeric_limits<Scalar>::quiet_NaN());
        continue;
      }
      const std::size_t span = span_of(k);
      for (std::size_t j = 0; j < k; ++j) y[j] = x[j] - m;
      std::fill(y + k, y + span, kMinusInf);
      simd::exp_n(y, y, span);  // e^(x - max); the -inf padding gives 0
      const Scalar inv = 1 / simd::sum_n(y, span);
      for (std::size_t j = 0; j < k; ++j) y[j] *= inv;
      std::fill(y + k, y + d, Scalar(0));
    } else {
      const char* f = masked.data() + (r % mask_rows) * d;
      Scalar m = kMinusInf;
      for (std::size_t j = 0; j < d; ++j)
        if (!f[j]) m = std::max(m, x[j]);
      if (m == kMinusInf) {  // nothing finite allowed: zeros, or NaN when an allowed entry is NaN
        for (std::size_t j = 0; j < d; ++j)
          y[j] = !f[j] && std::isnan(x[j]) ? std::numeric_limits<Scalar>::quiet_NaN() : Scalar(0);
        if (std::any_of(y, y + d, [](Scalar v) { return std::isnan(v); }))
          for (std::size_t j = 0; j < d; ++j) y[j] = f[j] ? Scalar(0) : std::numeric_limits<Scalar>::quiet_NaN();
        continue;
      }
      for (std::size_t j = 0; j < d; ++j) y[j] = f[j] ? kMinusInf : x[j] - m;
      simd::exp_n(y, y, d);
      const Scalar inv = 1 / simd::sum_n(y, d);
      for (std::size_t j = 0; j < d; ++j) y[j] *= inv;
    }
  }
  const bool track = needs_grad({&scores});
  Tensor result = detail::make_output(std::move(out), track);
  if (track) {
    // y is read through a plain pointer, not a Tensor (the record owns the output, see softmax).
    const TensorImpl* y = result.impl();
    tape().record("masked_softmax", result,
                  [scores, y, rows, d, mask_rows, span_of, masked = std::move(masked),
                   prefix = std::move(prefix)](Array& grad) {
                    // dx overwrites g in place, row by row (each row's dot is taken first).
                    Array ga = detail::take_grad(grad);
                    for (std::size_t r = 0; r < rows; ++r) {
                      const Scalar* yr = y->value.data() + r * d;
                      Scalar* dx = ga.data() + r * d;
                      const Scalar* g = dx;
                      const std::size_t k = prefix[r % mask_rows];
                      if (k != kGeneral) {
                        // y is 0 past k, so the dot over the span equals the one over the row.
                        const Scalar dot = simd::dot_n(g, yr, span_of(k));  // sum_k g_k y_k
                        for (std::size_t j = 0; j < k; ++j) dx[j] = yr[j] * (g[j] - dot);
                        std::fill(dx + k, dx + d, Scalar(0));
                      } else {
                        const char* f = masked.data() + (r % mask_rows) * d;
                        const Scalar dot = simd::dot_n(g, yr, d);
                        for (std::size_t j = 0; j < d; ++j) dx[j] = f[j] ? Scalar(0) : yr[j] * (g[j] - dot);
                      }
                    }
                    accumulate_grad(scores, std::move(ga));
                  });
  }
  return result;
}

}  // namespace GLASS_PRECISION
}  // namespace glass
