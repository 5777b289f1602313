// causal_attention: scaled dot-product attention under the causal mask as ONE op, in the manner
// of FlashAttention (Dao et al. 2022, "FlashAttention: Fast and Memory-Efficient Exact Attention
// with IO-Awareness", Algorithms 1 and 2), with the exact softmax of each row computed at once
// (the keys a row may see fit in a small scratch, so no online rescaling is needed).
//
// It computes what these four steps compute (the attention's steps 5-8 in nn/attention.cpp, Attention::forward_reference):
//   S = masked_fill(scale Q K^T, causal_mask(n, m, start), -inf)   (B, H, n, m)
//   P = softmax(S)                                                 (B, H, n, m)
//   O = P V, heads back to (B, n, H, D)                            (B, n, H, D)
// but never stores S or P (nor their gradients): 2 x 8 MB per layer at B = 8, T = 256 that
// would be written to memory and read back. Instead, for each batch row b, query head h and
// block of kRowBlock query rows [r0, r1), which may see the keys [0, hi) with hi = start + r1
// (row i sees the keys 0 .. start + i):
//
//   forward:   S_blk = scale Q_blk K[0:hi]^T                   (rows, hi)   gemm, in a scratch
//              E_ij  = e^(S_ij - max_i) for the allowed keys j <= start + i, exactly 0 beyond
//              L_i   = max_i + log(sum_j E_ij)                   the row's logsumexp, saved
//              O_blk = (E_blk V[0:hi]) / sum_j E_ij = P_blk V    (rows, D)    gemm
//   backward:  P_blk  = e^(S_blk - L), S_blk recomputed as above (the forward's weights again)
//              dV[0:hi] += P_blk^T dO_blk                        gemm
//              dP_blk = dO_blk V[0:hi]^T                         gemm
//              dS_blk = P_blk * (dP_blk - D_i),  D_i = dO_i . O_i (= sum_j P_ij dP_ij: softmax's
//                       backward with the row dot product read off the output, D numbers)
//              dQ_blk  = scale dS_blk K[0:hi]                    gemm
//              dK[0:hi] += scale dS_blk^T Q_blk                  gemm
// (The backward makes one gemm more than the step-by-step ops, the recomputed S; it still wins:
// bench_kernels at B = 8, T = 256, 4 heads, 2 KV heads, head_dim 32, forward + backward ~6.0 ms
// against ~7.5 ms for the three ops, and in a training step, where the three ops' tensors push
// everything else out of the cache, the attention costs about half as much.)
//
// Only L (B, H, n) is kept for the backward pass; the scratch of a block (kRowBlock x m) stays
// in the L1/L2 cache. q, k and v are
// read in place in their (B, positions, heads, head_dim) layout through BLAS leading dimensions
// (row stride H * D or H_kv * D), the output and dQ are written in place the same way, query
// head h reads KV head h / n_rep, and K^T / V^T are packed once per KV head (a row block times a
// contiguous (D, hi) matrix is faster in OpenBLAS than reading the transpose in place).

#include "autograd/blas.hpp"
#include "autograd/kernels/attention_util.hpp"
#include "autograd/kernels/kernels.hpp"
#include "autograd/kernels/simd.hpp"
#include "autograd/kernels/grad_buffers.hpp"
#include "autograd/ops_util.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <vector>

namespace glass {
inline namespace GLASS_PRECISION {

namespace {

using blas::as_int;
using detail::AttentionDims;
using detail::kRowBlock;
using detail::transpose_into;

/// The shapes of causal_attention(q, k, v, ...); throws std::invalid_argument naming the op and
/// all three shapes when they do not fit.
AttentionDims attention_dims(const Shape& sq, const Shape& sk, const Shape& sv) {
  auto fail = [&](const std::string& why) {
    return std::invalid_argument(
        "causal_attention: " + why + ": q " + shape_str(sq) + ", k " + shape_str(sk) + ", v " +
        shape_str(sv) +
        " (expected q (B, n, n_heads, head_dim), k and v (B, m, n_kv_heads, head_dim), n <= m)");
  };
  if (sq.size() != 4 || sk.size() != 4 || sv.size() != 4) throw fail("q, k and v must be 4-D");
  if (sk != sv) throw fail("k and v must have the same shape");
  if (sq[0] != sk[0]) throw fail("batch sizes differ");
  if (sq[3] != sk[3]) throw fail("head_dim differs");
  detail::check_heads(sq[2], sk[2], fail);
  if (sq[1] > sk[1]) throw fail("more queries than keys");
  return AttentionDims{sq[0], sq[2], sk[2], sq[1], sk[1], sq[3], sq[2] / sk[2]};
}

// ---- the row work of a block, vectorized (xsimd) --------------------------------------------
// A block's rows are short (at most m keys, on average about half of them), so the cost per row
// matters as much as the cost per entry: no scalar tail loops, and the scratch rows are padded
// to whole SIMD batches (row stride `padded(hi)`), so the last partial batch of a row is loaded
// and stored whole and the lanes past the row's allowed keys are masked with a select.

using Batch = xsimd::batch<Scalar>;
constexpr std::size_t kLanes = Batch::size;

/// n rounded up to whole SIMD batches: the row stride of the block scratch.
std::size_t padded(std::size_t n) { return (n + kLanes - 1) / kLanes * kLanes; }

/// True in the lanes t with j + t < a, i.e. at the allowed keys of the batch starting at key j.
Batch::batch_bool_type allowed_lanes(std::size_t j, std::size_t a) {
  static const Batch lane_index = [] {
    alignas(64) Scalar index[kLanes];
    for (std::size_t t = 0; t < kLanes; ++t) index[t] = static_cast<Scalar>(t);
    return Batch::load_aligned(index);
  }();
  return lane_index < Batch(static_cast<Scalar>(a - j));
}

/// Sum (or max) of the lanes of one register, pairwise.
template <class Op>
Scalar reduce_lanes(const Batch& x, Op op) {
  alignas(64) Scalar lane[kLanes];
  x.store_aligned(lane);
  for (std::size_t width = kLanes / 2; width > 0; width /= 2)
    for (std::size_t t = 0; t < width; ++t) lane[t] = op(lane[t], lane[t + width]);
  return lane[0];
}

/// max of row[0 .. a), a >= 1; the row's storage extends to padded(a).
Scalar row_max(const Scalar* row, std::size_t a) {
  const Batch lowest(-std::numeric_limits<Scalar>::infinity());
  Batch best = lowest;
  for (std::size_t j = 0; j < a; j += kLanes)
    best = xsimd::max(best,
                      xsimd::select(allowed_lanes(j, a), Batch::load_unaligned(row + j), lowest));
  return reduce_lanes(best, [](Scalar x, Scalar y) { return std::max(x, y); });
}

/// row[j] = e^(row[j] - c) for j < a, exactly 0 for a <= j < hi (the masked keys); the row's
/// storage extends to padded(hi). Returns the partial sums of the exponentials, one per lane.
Batch exp_shifted(Scalar* row, std::size_t a, std::size_t hi, Scalar c) {
  const Batch shift(c), zero(Scalar(0));
  Batch total = zero;
  std::size_t j = 0;
  for (; j < a; j += kLanes) {
    Batch e = xsimd::exp(Batch::load_unaligned(row + j) - shift);
    if (j + kLanes > a) e = xsimd::select(allowed_lanes(j, a), e, zero);  // the last batch
    e.store_unaligned(row + j);
    total += e;
  }
  if (j < hi) std::fill(row + j, row + hi, Scalar(0));
  return total;
}

/// Per-thread scratch, reused across calls (no allocation per block or per call).
struct Scratch {
  std::vector<Scalar> s;    ///< S / P of one block, (rows, hi), row stride padded(hi)
  std::vector<Scalar> dp;   ///< dP / dS of one block, same layout
  std::vector<Scalar> kt;   ///< K_g^T (D, m) of the current KV head
  std::vector<Scalar> vt;   ///< V_g^T (D, m) of the current KV head
  std::vector<Scalar> inv;  ///< 1 / (each row's sum of exponentials), forward only

  void reserve(const AttentionDims& d) {
    s.resize(kRowBlock * padded(d.m));
    dp.resize(kRowBlock * padded(d.m));
    kt.resize(d.D * d.m);
    vt.resize(d.D * d.m);
    inv.resize(kRowBlock);
  }
};

Scratch& scratch() {
  thread_local Scratch instance;
  return instance;
}

}  // namespace

Tensor causal_attention(const Tensor& q, const Tensor& k, const Tensor& v, Scalar scale) {
  const Shape sq = q.shape(), sk = k.shape(), sv = v.shape();
  const AttentionDims d = attention_dims(sq, sk, sv);
  const std::size_t ldq = d.H * d.D, ldk = d.H_kv * d.D;  // row strides (ldo = ldq, ldv = ldk)
  // Start of head h of batch row b in q / the output, of KV head g in k / v, and of L's rows.
  auto q_at = [=](std::size_t b, std::size_t h) { return b * d.n * ldq + h * d.D; };
  auto k_at = [=](std::size_t b, std::size_t g) { return b * d.m * ldk + g * d.D; };
  auto l_at = [=](std::size_t b, std::size_t h) { return (b * d.H + h) * d.n; };

  const Shape so = {d.B, d.n, d.H, d.D};
  Array out = d.empty() ? Array(so, Scalar(0)) : detail::empty_array(so);
  std::vector<Scalar> lse(d.B * d.H * d.n);  // L_i of every row (B, H, n), for the backward pass
  if (!d.empty()) {
    Scratch& w = scratch();
    w.reserve(d);
    for (std::size_t b = 0; b < d.B; ++b) {
      for (std::size_t h = 0; h < d.H; ++h) {
        const std::size_t kv = k_at(b, h / d.n_rep);  // GQA: KV head h / n_rep
        if (h % d.n_rep == 0)                         // K_g^T packed once for its n_rep query heads
          transpose_into(k.value().data() + kv, d.m, d.D, ldk, w.kt.data());
        for (std::size_t r0 = 0; r0 < d.n; r0 += kRowBlock) {
          const std::size_t r1 = std::min(r0 + kRowBlock, d.n), rows = r1 - r0;
          const std::size_t hi = d.start() + r1;  // the block's last row sees keys 0 .. hi-1
          const std::size_t ld = padded(hi);      // row stride of the scratch
          Scalar* s = w.s.data();
          Scalar* o_blk = out.data() + q_at(b, h) + r0 * ldq;  // O_blk, row stride H * D
          // S_blk (rows, hi) = scale Q_blk K[0:hi]^T
          blas::gemm(false, false, as_int(rows), as_int(hi), as_int(d.D), scale,
                     q.value().data() + q_at(b, h) + r0 * ldq, as_int(ldq), w.kt.data(),
                     as_int(d.m), Scalar(0), s, as_int(ld));
          // Each row's softmax over its allowed keys j <= start + i, weight exactly 0 beyond.
          // E_ij = e^(S_ij - max_i); the division by the row's sum waits for the (smaller) output
          // row: O = (E V) / sum.
          for (std::size_t i = 0; i < rows; ++i) {
            Scalar* row = s + i * ld;
            const std::size_t allowed = d.start() + r0 + i + 1;
            const Scalar mx = row_max(row, allowed);
            const Scalar total =
                reduce_lanes(exp_shifted(row, allowed, hi, mx), std::plus<Scalar>());
            // total >= 1 (the max gives e^0)
            w.inv[i] = 1 / total;
            lse[l_at(b, h) + r0 + i] = mx + std::log(total);
          }
          // O_blk (rows, D) = E_blk V[0:hi] / sum, written in place with row stride H * D.
          blas::gemm(false, false, as_int(rows), as_int(d.D), as_int(hi), Scalar(1), s, as_int(ld),
                     v.value().data() + kv, as_int(ldk), Scalar(0), o_blk, as_int(ldq));
          for (std::size_t i = 0; i < rows; ++i)
            for (std::size_t e = 0; e < d.D; ++e) o_blk[i * ldq + e] *= w.inv[i];
        }
      }
    }
  }

  const bool track = needs_grad({&q, &k, &v});
  Tensor result = detail::make_output(std::move(out), track);
  if (track) {
    // O is read through a plain pointer, not a Tensor (the record owns the output, see softmax).
    const TensorImpl* o = result.impl();
    tape().record("causal_attention", result, [=, lse = std::move(lse)](const Array& grad) {
      if (d.empty()) {
        for (const Tensor* t : {&q, &k, &v})
          if (t->requires_grad()) accumulate_grad(*t, Array(t->shape(), Scalar(0)));
        return;
      }
      std::optional<detail::GradTarget> gq, gk, gv;
      if (q.requires_grad()) gq.emplace(q);        // each block of rows written once
      if (k.requires_grad()) gk.emplace(k, true);  // zeros (or the existing grad): blocks add
      if (v.requires_grad()) gv.emplace(v, true);
      const bool want_ds = gq || gk;  // dS is needed for dQ and dK

      Scratch& w = scratch();
      w.reserve(d);
      for (std::size_t b = 0; b < d.B; ++b) {
        for (std::size_t h = 0; h < d.H; ++h) {
          const std::size_t kv = k_at(b, h / d.n_rep);
          const Scalar* kg = k.value().data() + kv;
          if (h % d.n_rep == 0) {  // once per KV head
            transpose_into(kg, d.m, d.D, ldk, w.kt.data());
            if (want_ds) transpose_into(v.value().data() + kv, d.m, d.D, ldk, w.vt.data());
          }
          for (std::size_t r0 = 0; r0 < d.n; r0 += kRowBlock) {
            const std::size_t r1 = std::min(r0 + kRowBlock, d.n), rows = r1 - r0;
            const std::size_t hi = d.start() + r1, ld = padded(hi);
            const std::size_t at = q_at(b, h) + r0 * ldq;  // the block in q, O, dO and dQ
            const Scalar* q_blk = q.value().data() + at;
            const Scalar* go_blk = grad.data() + at;  // dO_blk, row stride H * D
            Scalar* p = w.s.data();
            Scalar* ds = w.dp.data();
            // P_blk = e^(S_blk - L): the forward's weights, recomputed; 0 past the allowed keys.
            blas::gemm(false, false, as_int(rows), as_int(hi), as_int(d.D), scale, q_blk,
                       as_int(ldq), w.kt.data(), as_int(d.m), Scalar(0), p, as_int(ld));
            for (std::size_t i = 0; i < rows; ++i)
              exp_shifted(p + i * ld, d.start() + r0 + i + 1, hi, lse[l_at(b, h) + r0 + i]);
            if (gv)  // dV[0:hi] += P_blk^T dO_blk
              blas::gemm(true, false, as_int(hi), as_int(d.D), as_int(rows), Scalar(1), p,
                         as_int(ld), go_blk, as_int(ldq), Scalar(1), gv->data + kv, as_int(ldk));
            if (!want_ds) continue;
            // dP_blk = dO_blk V[0:hi]^T; dS = P * (dP - D_i) with D_i = dO_i . O_i (softmax's
            // backward: D_i = sum_j P_ij dP_ij); 0 where P is 0.
            blas::gemm(false, false, as_int(rows), as_int(hi), as_int(d.D), Scalar(1), go_blk,
                       as_int(ldq), w.vt.data(), as_int(d.m), Scalar(0), ds, as_int(ld));
            for (std::size_t i = 0; i < rows; ++i) {
              const Scalar* pr = p + i * ld;
              Scalar* row = ds + i * ld;
              const Scalar di = simd::dot_n(go_blk + i * ldq, o->value.data() + at + i * ldq, d.D);
              for (std::size_t j = 0; j < hi; ++j) row[j] = pr[j] * (row[j] - di);  // P = 0: masked
            }
            if (gq)  // dQ_blk = scale dS_blk K[0:hi], written in place
              blas::gemm(false, false, as_int(rows), as_int(d.D), as_int(hi), scale, ds, as_int(ld),
                         kg, as_int(ldk), gq->beta, gq->data + at, as_int(ldq));
            if (gk)  // dK[0:hi] += scale dS_blk^T Q_blk
              blas::gemm(true, false, as_int(hi), as_int(d.D), as_int(rows), scale, ds, as_int(ld),
                         q_blk, as_int(ldq), Scalar(1), gk->data + kv, as_int(ldk));
          }
        }
      }
      if (gq) gq->finish();
      if (gk) gk->finish();
      if (gv) gv->finish();
    });
  }
  return result;
}

}  // namespace GLASS_PRECISION
}  // namespace glass
