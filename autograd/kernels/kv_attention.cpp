// Fast kernels without tape: generation's attention over the KV cache (attend_to_cache) and the
// row softmax of plain arrays (softmax_rows). See kernels.hpp for the reference ops they replace;
// tests/autograd/fast_kernels_f64_test.cpp compares them.

#include <algorithm>
#include <vector>

#include "autograd/blas.hpp"
#include "autograd/kernels/kernels.hpp"
#include "autograd/kernels/simd.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

Array attend_to_cache(const Array& keys, const Array& values, const Array& q, Scalar scale,
                      std::size_t start) {
  const std::size_t B = q.shape()[0], n = q.shape()[1], H = q.shape()[2], D = q.shape()[3];
  const std::size_t capacity = keys.shape()[1], H_kv = keys.shape()[2];
  const std::size_t n_rep = H / H_kv;
  const int row_stride = blas::as_int(H_kv * D);  // one cached position = H_kv heads
  Array out = Array::from_shape({B, n, H, D});
  std::vector<Scalar> p(start + n);  // the attention weights of one query
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t h = 0; h < H; ++h) {
        const std::size_t m_i = start + i + 1;  // keys 0 .. start+i are visible
        const std::size_t kv_offset = (b * capacity * H_kv + h / n_rep) * D;
        const Scalar* q_row = q.data() + ((b * n + i) * H + h) * D;
        blas::gemv(false, blas::as_int(m_i), blas::as_int(D), scale, keys.data() + kv_offset,
                   row_stride, q_row, Scalar(0), p.data());
        simd::softmax_row(p.data(), p.data(), m_i);
        blas::gemv(true, blas::as_int(m_i), blas::as_int(D), Scalar(1), values.data() + kv_offset,
                   row_stride, p.data(), Scalar(0), out.data() + ((b * n + i) * H + h) * D);
      }
  return out;
}

Array softmax_rows(const Array& x) {
  Array y = Array::from_shape(x.shape());
  const std::size_t d = x.dimension() == 0 ? 1 : x.shape().back();
  if (d == 0) return y;
  for (std::size_t r = 0; r < x.size() / d; ++r)
    simd::softmax_row(x.data() + r * d, y.data() + r * d, d);
  return y;
}

}  // namespace GLASS_PRECISION
}  // namespace glass
