// causal_attention: scaled dot-product attention under the causal mask as ONE op, in the manner
// of FlashAttention (Dao et al. 2022, "FlashAttention: Fast and Memory-Efficient Exact Attention
// with IO-Awareness", Algorithms 1 and 2), with the exact softmax of each row computed at once
// (the keys a row may see fit in a small scratch, so no online rescaling is needed).
//
// It computes what these four steps compute (the attention's steps 5-8 in nn/attention.cpp):
//   S = attention_scores(q, k, scale, causal_mask(n, m, start))   (B, H, n, m)
//   P = masked_softmax(S, mask)                                   (B, H, n, m)
//   O = attention_mix(P, v, mask)                                 (B, n, H, D)
// but never stores S or P (nor their gradients): 2 x 8 MB per layer at B = 8, T = 256 that
// would be written to memory and read back. Instead, for each batch row b, query head h and
// block of kRowBlock query rows [r0, r1), which may see the keys [0, hi) with hi = start + r1:
//
//   forward:   S_blk = scale Q_blk K[0:hi]^T                 (rows, hi)   gemm, in a scratch
//              P_blk = softmax of each row over its allowed keys j <= start + i, 0 beyond
//              L_i   = max_j S_ij + log(sum_j e^(S_ij - max))  (the row's logsumexp, saved)
//              O_blk = P_blk V[0:hi]                         (rows, D)    gemm
//   backward:  D_i    = dO_i . O_i                  (= sum_j P_ij dP_ij, once for all rows)
//              S_blk  recomputed as above, P_blk = e^(S_blk - L)  (the same weights again)
//              dP_blk = dO_blk V[0:hi]^T                     gemm
//              dS_blk = P_blk * (dP_blk - D_i)               softmax's backward, row by row
//              dV[0:hi] += P_blk^T dO_blk                    gemm
//              dQ_blk  = scale dS_blk K[0:hi]                gemm
//              dK[0:hi] += scale dS_blk^T Q_blk              gemm
//
// Only L (B, H, n) is kept for the backward pass; the scratch of a block (kRowBlock x m) stays
// in the L1/L2 cache. As in attention_scores / attention_mix (ops_matmul.cpp), q, k and v are
// read in their (B, positions, heads, head_dim) layout through BLAS leading dimensions, query
// head h reads KV head h / n_rep, and K^T / V^T are packed once per KV head (a row block times a
// contiguous (D, hi) matrix is faster in OpenBLAS than reading the transpose in place).

#include "autograd/blas.hpp"
#include "autograd/ops.hpp"
#include "autograd/ops_util.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

namespace glass {
inline namespace GLASS_PRECISION {

namespace {

int as_int(std::size_t n) { return static_cast<int>(n); }

/// Query rows per block (as the masked attention products in ops_matmul.cpp).
constexpr std::size_t kRowBlock = 32;

/// Shapes of one causal_attention call: B batch, n queries, m keys (start = m - n of them
/// come before the first query), H query heads, H_kv key/value heads (n_rep = H / H_kv), D
/// head_dim.
struct Dims {
  std::size_t B, n, m, H, H_kv, D, n_rep, start;
  bool empty() const { return B == 0 || n == 0 || H == 0 || D == 0; }
};

/// Checks the shapes; throws std::invalid_argument naming the op and all three shapes.
Dims attention_dims(const Shape& sq, const Shape& sk, const Shape& sv) {
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
  if (sk[2] == 0 || sq[2] % sk[2] != 0) {
    throw fail(std::to_string(sq[2]) + " query heads are not a multiple of " +
               std::to_string(sk[2]) + " key/value heads");
  }
  if (sq[1] > sk[1]) throw fail("more queries than keys");
  return Dims{sq[0], sq[1], sk[1], sq[2], sk[2], sq[3], sq[2] / sk[2], sk[1] - sq[1]};
}

/// Per-thread scratch, reused across calls (no allocation per block or per call). One block is
/// the rows [r0, r1) of the n_rep query heads of one KV head, stacked into rows * n_rep rows.
struct Scratch {
  std::vector<Scalar> s;   ///< S / P of one block, (rows * n_rep, hi), row stride hi
  std::vector<Scalar> dp;  ///< dP / dS of one block, same layout
  std::vector<Scalar> kt;  ///< K_g^T (D, m) of the current KV head
  std::vector<Scalar> vt;  ///< V_g^T (D, m) of the current KV head
  std::vector<Scalar> qs, os, gs;  ///< the block's Q, O (or dQ) and dO rows, (rows * n_rep, D)
  std::vector<Scalar> inv;         ///< 1 / (the sum of each row's exponentials), forward only

  void reserve(const Dims& d) {
    s.resize(kRowBlock * d.n_rep * d.m);
    dp.resize(kRowBlock * d.n_rep * d.m);
    kt.resize(d.D * d.m);
    vt.resize(d.D * d.m);
    qs.resize(kRowBlock * d.n_rep * d.D);
    os.resize(kRowBlock * d.n_rep * d.D);
    gs.resize(kRowBlock * d.n_rep * d.D);
    inv.resize(kRowBlock * d.n_rep);
  }
};

Scratch& scratch() {
  thread_local Scratch instance;
  return instance;
}

/// xt (D, rows) = the transpose of x (rows, D) stored with row stride ld.
void transpose_into(const Scalar* x, std::size_t rows, std::size_t D, std::size_t ld, Scalar* xt) {
  for (std::size_t j = 0; j < rows; ++j)
    for (std::size_t e = 0; e < D; ++e) xt[e * rows + j] = x[j * ld + e];
}

/// GQA stacking. In the (B, positions, heads, D) layout the n_rep query heads that share a KV
/// head sit side by side: position t of them is n_rep * D contiguous numbers. Stacked, row
/// (t - r0) * n_rep + r of the block is query head g * n_rep + r at position t, so one gemm
/// serves the n_rep heads (they read the same keys and values) and each stacked row still
/// belongs to one position (row s sees the keys 0 .. start + r0 + s / n_rep).
/// gather: dst (rows * n_rep, D) <- rows runs of width = n_rep * D numbers at src + t * ld.
void gather(const Scalar* src, std::size_t ld, std::size_t rows, std::size_t width, Scalar* dst) {
  for (std::size_t t = 0; t < rows; ++t) std::copy_n(src + t * ld, width, dst + t * width);
}

/// The reverse: dst + t * ld <- src rows (beta = 0), or += them (beta = 1).
void scatter(const Scalar* src, std::size_t rows, std::size_t width, Scalar beta, Scalar* dst,
             std::size_t ld) {
  for (std::size_t t = 0; t < rows; ++t) {
    Scalar* out = dst + t * ld;
    const Scalar* in = src + t * width;
    if (beta == 0) {
      std::copy_n(in, width, out);
    } else {
      for (std::size_t e = 0; e < width; ++e) out[e] += in[e];
    }
  }
}

/// The row work of a block, in one vectorized pass: row[j] = e^(row[j] - c) for j < a and
/// exactly 0 for a <= j < hi (the masked keys). Returns the sum of the row. The last partial
/// SIMD batch is padded with -inf (e^-inf = 0), so every entry goes through xsimd's exp.
Scalar exp_shifted(Scalar* row, std::size_t a, std::size_t hi, Scalar c) {
  using Batch = xsimd::batch<Scalar>;
  constexpr std::size_t W = Batch::size;
  const Batch shift(c);
  Batch total(Scalar(0));
  std::size_t j = 0;
  for (; j + W <= a; j += W) {
    const Batch e = xsimd::exp(Batch::load_unaligned(row + j) - shift);
    e.store_unaligned(row + j);
    total += e;
  }
  if (j < a) {
    alignas(64) Scalar tail[W];
    for (std::size_t t = 0; t < W; ++t)
      tail[t] = j + t < a ? row[j + t] : -std::numeric_limits<Scalar>::infinity();
    const Batch e = xsimd::exp(Batch::load_aligned(tail) - shift);
    e.store_aligned(tail);
    total += e;
    std::copy_n(tail, a - j, row + j);
  }
  std::fill(row + a, row + hi, Scalar(0));
  alignas(64) Scalar lanes[W];
  total.store_aligned(lanes);
  Scalar sum = 0;
  for (const Scalar lane : lanes) sum += lane;
  return sum;
}

}  // namespace

Tensor causal_attention(const Tensor& q, const Tensor& k, const Tensor& v, Scalar scale) {
  const Shape sq = q.shape(), sk = k.shape(), sv = v.shape();
  const Dims d = attention_dims(sq, sk, sv);
  const std::size_t ldq = d.H * d.D, ldk = d.H_kv * d.D;  // row strides (ldo = ldq, ldv = ldk)
  const std::size_t width = d.n_rep * d.D;               // one position of a KV head's query heads
  // Start of the query heads of KV head g (batch row b) in q / the output, of KV head g in k / v,
  // and of its stacked rows in L (saved as (B, H_kv, n, n_rep): row t * n_rep + r is head
  // g * n_rep + r at position t).
  auto q_at = [=](std::size_t b, std::size_t g) { return b * d.n * ldq + g * width; };
  auto k_at = [=](std::size_t b, std::size_t g) { return b * d.m * ldk + g * d.D; };
  auto l_at = [=](std::size_t b, std::size_t g) { return (b * d.H_kv + g) * d.n * d.n_rep; };
  // Stacked row s of the block starting at query r0 sees the keys 0 .. allowed(r0, s) - 1.
  auto allowed = [=](std::size_t r0, std::size_t s) { return d.start + r0 + s / d.n_rep + 1; };

  const Shape so = {d.B, d.n, d.H, d.D};
  Array out = d.empty() ? Array(so, Scalar(0)) : detail::empty_array(so);
  std::vector<Scalar> lse(d.B * d.H * d.n);  // L of every row, for the backward pass
  if (!d.empty()) {
    Scratch& w = scratch();
    w.reserve(d);
    for (std::size_t b = 0; b < d.B; ++b) {
      for (std::size_t g = 0; g < d.H_kv; ++g) {
        transpose_into(k.value().data() + k_at(b, g), d.m, d.D, ldk, w.kt.data());
        const Scalar* vg = v.value().data() + k_at(b, g);
        for (std::size_t r0 = 0; r0 < d.n; r0 += kRowBlock) {
          const std::size_t r1 = std::min(r0 + kRowBlock, d.n), rows = (r1 - r0) * d.n_rep;
          const std::size_t hi = d.start + r1;  // the block's last position sees keys 0 .. hi-1
          Scalar* s = w.s.data();
          // S_blk (rows, hi) = scale Q_blk K[0:hi]^T
          gather(q.value().data() + q_at(b, g) + r0 * ldq, ldq, r1 - r0, width, w.qs.data());
          blas::gemm(false, false, as_int(rows), as_int(hi), as_int(d.D), scale, w.qs.data(),
                     as_int(d.D), w.kt.data(), as_int(d.m), Scalar(0), s, as_int(hi));
          // Each row's softmax over its allowed keys, weight exactly 0 beyond; the division by
          // the row's sum is left for the (smaller) output row: E_ij = e^(S_ij - max_i), P = E / sum_i.
          for (std::size_t i = 0; i < rows; ++i) {
            Scalar* row = s + i * hi;
            const std::size_t a = allowed(r0, i);
            const Scalar mx = detail::max_n(row, a);
            const Scalar total = exp_shifted(row, a, hi, mx);  // >= 1 (the max gives e^0)
            w.inv[i] = 1 / total;
            lse[l_at(b, g) + r0 * d.n_rep + i] = mx + std::log(total);
          }
          // O_blk (rows, D) = P_blk V[0:hi] = (E V[0:hi]) / sum, then to the (B, n, H, D) layout.
          blas::gemm(false, false, as_int(rows), as_int(d.D), as_int(hi), Scalar(1), s, as_int(hi),
                     vg, as_int(ldk), Scalar(0), w.os.data(), as_int(d.D));
          for (std::size_t i = 0; i < rows; ++i)
            for (std::size_t e = 0; e < d.D; ++e) w.os[i * d.D + e] *= w.inv[i];
          scatter(w.os.data(), r1 - r0, width, Scalar(0), out.data() + q_at(b, g) + r0 * ldq, ldq);
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
        for (std::size_t g = 0; g < d.H_kv; ++g) {
          const std::size_t kv = k_at(b, g);
          const Scalar* kg = k.value().data() + kv;
          transpose_into(kg, d.m, d.D, ldk, w.kt.data());
          if (want_ds) transpose_into(v.value().data() + kv, d.m, d.D, ldk, w.vt.data());
          for (std::size_t r0 = 0; r0 < d.n; r0 += kRowBlock) {
            const std::size_t r1 = std::min(r0 + kRowBlock, d.n), rows = (r1 - r0) * d.n_rep;
            const std::size_t hi = d.start + r1;
            const std::size_t at = q_at(b, g) + r0 * ldq;  // the block in q, O, dO and dQ
            gather(q.value().data() + at, ldq, r1 - r0, width, w.qs.data());
            gather(grad.data() + at, ldq, r1 - r0, width, w.gs.data());  // dO_blk
            Scalar* p = w.s.data();
            Scalar* ds = w.dp.data();
            // P_blk = e^(S_blk - L): the forward's weights, recomputed; 0 past the allowed keys.
            blas::gemm(false, false, as_int(rows), as_int(hi), as_int(d.D), scale, w.qs.data(),
                       as_int(d.D), w.kt.data(), as_int(d.m), Scalar(0), p, as_int(hi));
            for (std::size_t i = 0; i < rows; ++i) {
              Scalar* row = p + i * hi;
              const std::size_t a = allowed(r0, i);
              exp_shifted(row, a, hi, lse[l_at(b, g) + r0 * d.n_rep + i]);
            }
            if (gv)  // dV[0:hi] += P_blk^T dO_blk
              blas::gemm(true, false, as_int(hi), as_int(d.D), as_int(rows), Scalar(1), p,
                         as_int(hi), w.gs.data(), as_int(d.D), Scalar(1), gv->data + kv, as_int(ldk));
            if (!want_ds) continue;
            // dP_blk = dO_blk V[0:hi]^T; dS = P * (dP - D_i) with D_i = dO_i . O_i (softmax's
            // backward: D_i = sum_j P_ij dP_ij); 0 where P is 0.
            blas::gemm(false, false, as_int(rows), as_int(hi), as_int(d.D), Scalar(1), w.gs.data(),
                       as_int(d.D), w.vt.data(), as_int(d.m), Scalar(0), ds, as_int(hi));
            gather(o->value.data() + at, ldq, r1 - r0, width, w.os.data());  // O_blk
            for (std::size_t i = 0; i < rows; ++i) {
              const Scalar* pr = p + i * hi;
              Scalar* row = ds + i * hi;
              const std::size_t a = allowed(r0, i);
              const Scalar di = detail::dot_n(w.gs.data() + i * d.D, w.os.data() + i * d.D, d.D);
              for (std::size_t j = 0; j < a; ++j) row[j] = pr[j] * (row[j] - di);
              std::fill(row + a, row + hi, Scalar(0));
            }
            if (gq) {  // dQ_blk = scale dS_blk K[0:hi], stacked, then into dQ's layout
              blas::gemm(false, false, as_int(rows), as_int(d.D), as_int(hi), scale, ds, as_int(hi),
                         kg, as_int(ldk), Scalar(0), w.os.data(), as_int(d.D));
              scatter(w.os.data(), r1 - r0, width, gq->beta, gq->data + at, ldq);
            }
            if (gk)  // dK[0:hi] += scale dS_blk^T Q_blk
              blas::gemm(true, false, as_int(hi), as_int(d.D), as_int(rows), scale, ds, as_int(hi),
                         w.qs.data(), as_int(d.D), Scalar(1), gk->data + kv, as_int(ldk));
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
