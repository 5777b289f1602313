// sum_of_squares: sum(x * x) over a whole array in double, for the global gradient norm
// (train/clip.cpp). A plain `total += x * x` loop in double can be neither vectorized nor
// pipelined; here blocks of 1024 squares are summed with SIMD in Scalar (simd::dot_n) and the
// blocks in double, several times faster.

#include <algorithm>

#include "autograd/kernels/kernels.hpp"
#include "autograd/kernels/simd.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

double sum_of_squares(const Array& x) {
  const Scalar* v = x.data();
  const std::size_t n = x.size();
  // In float a square overflows above ~1.8e19 and vanishes below ~1e-19: a block whose float sum
  // leaves [1e-30, 1e30] (or is 0) is summed again in double, element by element, so the result
  // is right for any finite input.
  constexpr std::size_t kBlock = 1024;
  double total = 0.0;
  for (std::size_t i = 0; i < n; i += kBlock) {
    const std::size_t len = std::min(kBlock, n - i);
    const Scalar block = simd::dot_n(v + i, v + i, len);
    if (block >= Scalar(1e-30) && block <= Scalar(1e30)) {
      total += static_cast<double>(block);
    } else {
      for (std::size_t j = i; j < i + len; ++j) total += static_cast<double>(v[j]) * v[j];
    }
  }
  return total;
}

}  // namespace GLASS_PRECISION
}  // namespace glass
