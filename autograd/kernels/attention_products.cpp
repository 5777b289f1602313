// Fast kernels: the two products of attention read in the projections' layout.
//   attention_scores(q, k, scale)        replaces matmul(transpose(q, 1, 2),
//                                          transpose(repeat_kv(transpose(k, 1, 2), n_rep), -2, -1)) * scale
//   attention_mix(weights, v)            replaces transpose(matmul(weights,
//                                          repeat_kv(transpose(v, 1, 2), n_rep)), 1, 2)
//   ... with a mask                      replaces masked_fill(..., mask, -inf) / masked_fill(weights, mask, 0)
// tests/autograd/fused_vs_composed_f64_test.cpp checks values and gradients against those.

#include "autograd/blas.hpp"
#include "autograd/kernels/attention_util.hpp"
#include "autograd/kernels/kernels.hpp"
#include "autograd/ops.hpp"
#include "autograd/kernels/grad_buffers.hpp"
#include "autograd/ops_util.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <vector>

namespace glass {
inline namespace GLASS_PRECISION {

using blas::as_int;

// ---- attention products on (B, positions, heads, head_dim) ---------------------------------
//
// q, k, v stay in the layout the projections produce, (B, positions, heads, head_dim): row t of
// head h is D numbers at offset (t * heads + h) * D, so one head's (positions, D) matrix is every
// heads*D-th row, which BLAS reads directly with leading dimension heads * D. No transposed copy
// to heads-first and no repeat_kv copy: query head h reads KV head h / n_rep by pointer.

namespace {

using detail::AttentionDims;
using detail::check_heads;
using detail::kRowBlock;
using detail::transpose_into;

/// The shapes of attention_scores(q, k, ...) with q (B, n, H, D), k (B, m, H_kv, D); throws
/// std::invalid_argument naming the op and both shapes when they do not fit.
AttentionDims scores_dims(const Shape& sq, const Shape& sk) {
  auto fail = [&](const std::string& why) {
    return std::invalid_argument("attention_scores: " + why + ": q " + shape_str(sq) + ", k " +
                                 shape_str(sk) + " (expected q (B, n, H, D), k (B, m, H_kv, D))");
  };
  if (sq.size() != 4 || sk.size() != 4) throw fail("q and k must be 4-D");
  if (sq[0] != sk[0]) throw fail("batch sizes differ");
  if (sq[3] != sk[3]) throw fail("head_dim differs");
  check_heads(sq[2], sk[2], fail);
  return AttentionDims{sq[0], sq[2], sk[2], sq[1], sk[1], sq[3], sq[2] / sk[2]};
}

/// The shapes of attention_mix(weights, v) with weights (B, H, n, m), v (B, m, H_kv, D); throws
/// std::invalid_argument naming the op and both shapes when they do not fit.
AttentionDims mix_dims(const Shape& sw, const Shape& sv) {
  auto fail = [&](const std::string& why) {
    return std::invalid_argument("attention_mix: " + why + ": weights " + shape_str(sw) + ", v " +
                                 shape_str(sv) + " (expected weights (B, H, n, m), v (B, m, H_kv, D))");
  };
  if (sw.size() != 4 || sv.size() != 4) throw fail("weights and v must be 4-D");
  if (sw[0] != sv[0]) throw fail("batch sizes differ");
  if (sw[3] != sv[1]) throw fail("weights' keys and v's positions differ");
  check_heads(sw[1], sv[2], fail);
  return AttentionDims{sw[0], sw[1], sv[2], sw[2], sw[3], sv[3], sw[1] / sv[2]};
}

}  // namespace

Tensor attention_scores(const Tensor& q, const Tensor& k, Scalar scale) {
  const Shape sq = q.shape(), sk = k.shape();
  const AttentionDims d = scores_dims(sq, sk);
  const std::size_t ldq = d.H * d.D, ldk = d.H_kv * d.D;  // row strides of one head's matrix
  // Start of head h of batch b in q, of KV head g in k, and of the (n, m) block (b, h) of scores.
  auto q_at = [=](std::size_t b, std::size_t h) { return b * d.n * ldq + h * d.D; };
  auto k_at = [=](std::size_t b, std::size_t g) { return b * d.m * ldk + g * d.D; };
  auto s_at = [=](std::size_t b, std::size_t h) { return (b * d.H + h) * d.n * d.m; };

  const Shape so = {d.B, d.H, d.n, d.m};
  Array out = d.empty() ? Array(so, Scalar(0)) : detail::empty_array(so);
  if (!d.empty()) {
    const Scalar* qd = q.value().data();
    const Scalar* kd = k.value().data();
    for (std::size_t b = 0; b < d.B; ++b) {
      for (std::size_t h = 0; h < d.H; ++h) {
        const Scalar* qh = qd + q_at(b, h);
        const Scalar* kg = kd + k_at(b, h / d.n_rep);  // GQA: KV head h / n_rep
        if (d.n == 1) {  // one query (generation): scores (m) = scale * K (m, D) @ q (D)
          blas::gemv(false, as_int(d.m), as_int(d.D), scale, kg, as_int(ldk), qh, Scalar(0),
                     out.data() + s_at(b, h));
        } else {  // S (n, m) = scale * Q (n, D) @ K^T (D, m)
          blas::gemm(false, true, as_int(d.n), as_int(d.m), as_int(d.D), scale, qh, as_int(ldq),
                     kg, as_int(ldk), Scalar(0), out.data() + s_at(b, h), as_int(d.m));
        }
      }
    }
  }
  const bool track = needs_grad({&q, &k});
  Tensor result = detail::make_output(std::move(out), track);
  if (track) {
    tape().record("attention_scores", result, [=](const Array& grad) {
      if (d.empty()) {
        accumulate_grad(q, Array(sq, Scalar(0)));
        accumulate_grad(k, Array(sk, Scalar(0)));
        return;
      }
      const Scalar* g = grad.data();
      if (q.requires_grad()) {  // dQ_h (n, D) = scale * dS_h (n, m) @ K_g (m, D), each block once
        detail::GradTarget gq(q);
        for (std::size_t b = 0; b < d.B; ++b)
          for (std::size_t h = 0; h < d.H; ++h)
            blas::gemm(false, false, as_int(d.n), as_int(d.D), as_int(d.m), scale, g + s_at(b, h),
                       as_int(d.m), k.value().data() + k_at(b, h / d.n_rep), as_int(ldk), gq.beta,
                       gq.data + q_at(b, h), as_int(ldq));
        gq.finish();
      }
      if (k.requires_grad()) {  // dK_g (m, D) = sum over the n_rep heads h of g: scale dS_h^T Q_h
        detail::GradTarget gk(k);
        for (std::size_t b = 0; b < d.B; ++b)
          for (std::size_t h = 0; h < d.H; ++h) {
            const Scalar beta = h % d.n_rep == 0 ? gk.beta : Scalar(1);  // first head of the group
            blas::gemm(true, false, as_int(d.m), as_int(d.D), as_int(d.n), scale, g + s_at(b, h),
                       as_int(d.m), q.value().data() + q_at(b, h), as_int(ldq), beta,
                       gk.data + k_at(b, h / d.n_rep), as_int(ldk));
          }
        gk.finish();
      }
    });
  }
  return result;
}

Tensor attention_mix(const Tensor& weights, const Tensor& v) {
  const Shape sw = weights.shape(), sv = v.shape();
  const AttentionDims d = mix_dims(sw, sv);
  const std::size_t ldo = d.H * d.D, ldv = d.H_kv * d.D;  // row strides of one head's matrix
  // Start of the (n, m) block (b, h) of weights, of KV head g in v, of head h in the output.
  auto w_at = [=](std::size_t b, std::size_t h) { return (b * d.H + h) * d.n * d.m; };
  auto v_at = [=](std::size_t b, std::size_t g) { return b * d.m * ldv + g * d.D; };
  auto o_at = [=](std::size_t b, std::size_t h) { return b * d.n * ldo + h * d.D; };

  const Shape so = {d.B, d.n, d.H, d.D};
  Array out = d.empty() ? Array(so, Scalar(0)) : detail::empty_array(so);
  if (!d.empty()) {
    const Scalar* wd = weights.value().data();
    const Scalar* vd = v.value().data();
    for (std::size_t b = 0; b < d.B; ++b) {
      for (std::size_t h = 0; h < d.H; ++h) {
        const Scalar* vg = vd + v_at(b, h / d.n_rep);  // GQA: KV head h / n_rep
        if (d.n == 1) {  // one query (generation): out (D) = V^T (D, m) @ weights (m)
          blas::gemv(true, as_int(d.m), as_int(d.D), Scalar(1), vg, as_int(ldv), wd + w_at(b, h),
                     Scalar(0), out.data() + o_at(b, h));
        } else {  // O_h (n, D) = W_h (n, m) @ V_g (m, D), written in place with row stride H * D
          blas::gemm(false, false, as_int(d.n), as_int(d.D), as_int(d.m), Scalar(1),
                     wd + w_at(b, h), as_int(d.m), vg, as_int(ldv), Scalar(0),
                     out.data() + o_at(b, h), as_int(ldo));
        }
      }
    }
  }
  const bool track = needs_grad({&weights, &v});
  Tensor result = detail::make_output(std::move(out), track);
  if (track) {
    tape().record("attention_mix", result, [=](const Array& grad) {
      if (d.empty()) {
        accumulate_grad(weights, Array(sw, Scalar(0)));
        accumulate_grad(v, Array(sv, Scalar(0)));
        return;
      }
      const Scalar* g = grad.data();
      if (weights.requires_grad()) {  // dW_h (n, m) = dO_h (n, D) @ V_g^T (D, m), each block once
        detail::GradTarget gw(weights);
        for (std::size_t b = 0; b < d.B; ++b)
          for (std::size_t h = 0; h < d.H; ++h)
            blas::gemm(false, true, as_int(d.n), as_int(d.m), as_int(d.D), Scalar(1), g + o_at(b, h),
                       as_int(ldo), v.value().data() + v_at(b, h / d.n_rep), as_int(ldv), gw.beta,
                       gw.data + w_at(b, h), as_int(d.m));
        gw.finish();
      }
      if (v.requires_grad()) {  // dV_g (m, D) = sum over the n_rep heads h of g: W_h^T dO_h
        detail::GradTarget gv(v);
        for (std::size_t b = 0; b < d.B; ++b)
          for (std::size_t h = 0; h < d.H; ++h) {
            const Scalar beta = h % d.n_rep == 0 ? gv.beta : Scalar(1);  // first head of the group
            blas::gemm(true, false, as_int(d.m), as_int(d.D), as_int(d.n), Scalar(1),
                       weights.value().data() + w_at(b, h), as_int(d.m), g + o_at(b, h),
                       as_int(ldo), beta, gv.data + v_at(b, h / d.n_rep), as_int(ldv));
          }
        gv.finish();
      }
    });
  }
  return result;
}

// ---- attention products under a mask (e.g. causal) ----------------------------------------
//
//   attention_scores(q, k, scale, mask) = masked_fill(attention_scores(q, k, scale), mask, -inf)
//   attention_mix(weights, v, mask)     = attention_mix(masked_fill(weights, mask, 0), v)
//
// Under a causal mask about half of every (n, m) block is masked: those scores are thrown away
// by the softmax and those weights are 0. When every mask row is a prefix (row i allows keys
// 0 .. k_i - 1 and masks the rest, as every row of causal_mask does), the n query rows are cut
// into blocks of kRowBlock rows, and each block's products run only over the key columns that
// some row of the block allows:
//
//                 keys:  0 ............ lo ........... hi ................ m
//   rows r0 .. r1-1:    [ allowed for all | "diagonal" | masked for all     ]
//
// lo is the smallest k_i of the block, hi the largest. BLAS reads columns [0, lo) in place. The
// diagonal columns [lo, hi) mix allowed and masked places; where the masked ones must count as 0
// (attention_mix's weights, the scores' incoming gradient) a scratch copy of only this small
// region is made with them zeroed. Columns [hi, m) are never computed. Any other mask takes the
// definition itself: the full product, then masked_fill.

namespace {

/// Query rows [r0, r1) and their key columns: [0, lo) allowed for every row of the block,
/// [lo, hi) the diagonal region, [hi, m) masked for every row.
struct RowBlock {
  std::size_t r0, r1, lo, hi;
};

/// A mask (n, m) read as prefix rows: row i allows keys 0 .. allowed[i] - 1.
struct PrefixMask {
  std::vector<std::size_t> allowed;
  std::vector<RowBlock> blocks;
  std::size_t max_width = 0;  ///< the widest diagonal region, hi - lo
  bool masks_nothing = true;  ///< every allowed[i] == m
};

/// Checks that mask has shape (n, m), else throws std::invalid_argument naming `op`. Returns
/// false when some row is not a prefix; otherwise fills `out`.
bool read_prefix_mask(const Mask& mask, std::size_t n, std::size_t m, const char* op,
                      PrefixMask& out) {
  const Shape sm = shape_of(mask);
  if (sm != Shape{n, m}) {
    throw std::invalid_argument(std::string(op) + ": mask of shape " + shape_str(sm) +
                                " must be (n, m) = " + shape_str({n, m}) +
                                ", one row per query and one column per key (as causal_mask(n, m, "
                                "start) gives), broadcast over the batch and the heads");
  }
  out.allowed.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const bool* row = mask.data() + i * m;
    const bool* first_masked = std::find(row, row + m, true);
    if (std::find(first_masked, row + m, false) != row + m) return false;  // a hole: not a prefix
    out.allowed[i] = static_cast<std::size_t>(first_masked - row);
    if (out.allowed[i] != m) out.masks_nothing = false;
  }
  if (out.masks_nothing) return true;  // the caller takes the plain product (no blocks needed)
  for (std::size_t r0 = 0; r0 < n; r0 += kRowBlock) {
    const std::size_t r1 = std::min(r0 + kRowBlock, n);
    const auto [lo, hi] = std::minmax_element(out.allowed.begin() + r0, out.allowed.begin() + r1);
    out.blocks.push_back({r0, r1, *lo, *hi});
    out.max_width = std::max(out.max_width, *hi - *lo);
  }
  return true;
}

/// z (r1 - r0, hi - lo) = the block's diagonal region of src (row stride ld), with its masked
/// places (column j >= allowed[i]) set to 0.
void copy_allowed(const Scalar* src, std::size_t ld, const RowBlock& block,
                  const std::vector<std::size_t>& allowed, Scalar* z) {
  const std::size_t width = block.hi - block.lo;
  for (std::size_t i = block.r0; i < block.r1; ++i) {
    const std::size_t keep = allowed[i] - block.lo;
    Scalar* out = z + (i - block.r0) * width;
    std::copy_n(src + i * ld + block.lo, keep, out);
    std::fill(out + keep, out + width, Scalar(0));
  }
}

/// rows [r0, r1) x columns [0, cols) of a matrix with row stride ld set to 0.
void zero_rows(Scalar* x, std::size_t ld, std::size_t r0, std::size_t r1, std::size_t cols) {
  for (std::size_t i = r0; i < r1; ++i) std::fill(x + i * ld, x + i * ld + cols, Scalar(0));
}

}  // namespace

Tensor attention_scores(const Tensor& q, const Tensor& k, Scalar scale, const Mask& mask) {
  const Shape sq = q.shape(), sk = k.shape();
  const AttentionDims d = scores_dims(sq, sk);
  PrefixMask pm;
  const bool prefix = read_prefix_mask(mask, d.n, d.m, "attention_scores", pm);
  if (!prefix || d.empty())  // the definition itself
    return masked_fill(attention_scores(q, k, scale), mask, -std::numeric_limits<Scalar>::infinity());
  if (pm.masks_nothing) return attention_scores(q, k, scale);  // e.g. one generated token

  const std::size_t ldq = d.H * d.D, ldk = d.H_kv * d.D;  // row strides of one head's matrix
  auto q_at = [=](std::size_t b, std::size_t h) { return b * d.n * ldq + h * d.D; };
  auto k_at = [=](std::size_t b, std::size_t g) { return b * d.m * ldk + g * d.D; };
  auto s_at = [=](std::size_t b, std::size_t h) { return (b * d.H + h) * d.n * d.m; };

  Array out = detail::empty_array({d.B, d.H, d.n, d.m});
  std::vector<Scalar> kt(d.D * d.m);  // K_g^T (D, m) of the current KV head
  for (std::size_t b = 0; b < d.B; ++b) {
    for (std::size_t h = 0; h < d.H; ++h) {
      const Scalar* qh = q.value().data() + q_at(b, h);
      if (h % d.n_rep == 0)  // GQA: KV head h / n_rep, transposed once for its n_rep query heads
        transpose_into(k.value().data() + k_at(b, h / d.n_rep), d.m, d.D, ldk, kt.data());
      Scalar* s = out.data() + s_at(b, h);
      for (const RowBlock& block : pm.blocks) {
        // S[r0:r1, 0:hi] = scale * Q[r0:r1] K^T[:, 0:hi]; then -inf from key allowed[i] on.
        if (block.hi > 0)
          blas::gemm(false, false, as_int(block.r1 - block.r0), as_int(block.hi), as_int(d.D),
                     scale, qh + block.r0 * ldq, as_int(ldq), kt.data(), as_int(d.m), Scalar(0),
                     s + block.r0 * d.m, as_int(d.m));
        for (std::size_t i = block.r0; i < block.r1; ++i)
          std::fill(s + i * d.m + pm.allowed[i], s + (i + 1) * d.m,
                    -std::numeric_limits<Scalar>::infinity());
      }
    }
  }
  const bool track = needs_grad({&q, &k});
  Tensor result = detail::make_output(std::move(out), track);
  if (track) {
    tape().record("attention_scores", result, [=](const Array& grad) {
      // As the full op's backward with dS = 0 at the masked places: dQ_h = scale dS_h K_g and
      // dK_g += scale dS_h^T Q_h, block by block over the allowed columns only.
      std::optional<detail::GradTarget> gq, gk;
      if (q.requires_grad()) gq.emplace(q);
      if (k.requires_grad()) gk.emplace(k, true);  // zeros: blocks add their columns
      std::vector<Scalar> z(kRowBlock * pm.max_width);  // dS's diagonal region, masked places 0
      for (std::size_t b = 0; b < d.B; ++b) {
        for (std::size_t h = 0; h < d.H; ++h) {
          const Scalar* gs = grad.data() + s_at(b, h);
          const Scalar* qh = q.value().data() + q_at(b, h);
          const Scalar* kg = k.value().data() + k_at(b, h / d.n_rep);
          for (const RowBlock& block : pm.blocks) {
            const int rows = as_int(block.r1 - block.r0), lo = as_int(block.lo);
            const int width = as_int(block.hi - block.lo);
            const Scalar* g_block = gs + block.r0 * d.m;  // dS[r0:r1, 0:lo], row stride m
            if (width > 0) copy_allowed(gs, d.m, block, pm.allowed, z.data());
            if (gq) {  // dQ[r0:r1] = scale (dS[r0:r1, 0:lo] K[0:lo] + Z K[lo:hi])
              Scalar* dq = gq->data + q_at(b, h);
              Scalar beta = gq->beta;
              if (lo > 0) {
                blas::gemm(false, false, rows, as_int(d.D), lo, scale, g_block, as_int(d.m), kg,
                           as_int(ldk), beta, dq + block.r0 * ldq, as_int(ldq));
                beta = 1;
              }
              if (width > 0) {
                blas::gemm(false, false, rows, as_int(d.D), width, scale, z.data(), width,
                           kg + block.lo * ldk, as_int(ldk), beta, dq + block.r0 * ldq, as_int(ldq));
                beta = 1;
              }
              if (beta == 0) zero_rows(dq, ldq, block.r0, block.r1, d.D);  // rows fully masked
            }
            if (gk) {  // dK[0:lo] += scale dS[r0:r1, 0:lo]^T Q[r0:r1]; dK[lo:hi] += scale Z^T Q[r0:r1]
              Scalar* dk = gk->data + k_at(b, h / d.n_rep);
              const Scalar* q_block = qh + block.r0 * ldq;
              if (lo > 0)
                blas::gemm(true, false, lo, as_int(d.D), rows, scale, g_block, as_int(d.m), q_block,
                           as_int(ldq), Scalar(1), dk, as_int(ldk));
              if (width > 0)
                blas::gemm(true, false, width, as_int(d.D), rows, scale, z.data(), width, q_block,
                           as_int(ldq), Scalar(1), dk + block.lo * ldk, as_int(ldk));
            }
          }
        }
      }
      if (gq) gq->finish();
      if (gk) gk->finish();
    });
  }
  return result;
}

Tensor attention_mix(const Tensor& weights, const Tensor& v, const Mask& mask) {
  const Shape sw = weights.shape(), sv = v.shape();
  const AttentionDims d = mix_dims(sw, sv);
  PrefixMask pm;
  const bool prefix = read_prefix_mask(mask, d.n, d.m, "attention_mix", pm);
  if (!prefix || d.empty()) return attention_mix(masked_fill(weights, mask, Scalar(0)), v);
  if (pm.masks_nothing) return attention_mix(weights, v);  // e.g. one generated token

  const std::size_t ldo = d.H * d.D, ldv = d.H_kv * d.D;  // row strides of one head's matrix
  auto w_at = [=](std::size_t b, std::size_t h) { return (b * d.H + h) * d.n * d.m; };
  auto v_at = [=](std::size_t b, std::size_t g) { return b * d.m * ldv + g * d.D; };
  auto o_at = [=](std::size_t b, std::size_t h) { return b * d.n * ldo + h * d.D; };

  Array out = detail::empty_array({d.B, d.n, d.H, d.D});
  std::vector<Scalar> z(kRowBlock * pm.max_width);  // weights' diagonal region, masked places 0
  for (std::size_t b = 0; b < d.B; ++b) {
    for (std::size_t h = 0; h < d.H; ++h) {
      const Scalar* wh = weights.value().data() + w_at(b, h);
      const Scalar* vg = v.value().data() + v_at(b, h / d.n_rep);  // GQA: KV head h / n_rep
      Scalar* oh = out.data() + o_at(b, h);
      for (const RowBlock& block : pm.blocks) {
        // O[r0:r1] = W[r0:r1, 0:lo] V[0:lo] + Z V[lo:hi]
        const int rows = as_int(block.r1 - block.r0), lo = as_int(block.lo);
        const int width = as_int(block.hi - block.lo);
        Scalar beta = 0;
        if (lo > 0) {
          blas::gemm(false, false, rows, as_int(d.D), lo, Scalar(1), wh + block.r0 * d.m,
                     as_int(d.m), vg, as_int(ldv), beta, oh + block.r0 * ldo, as_int(ldo));
          beta = 1;
        }
        if (width > 0) {
          copy_allowed(wh, d.m, block, pm.allowed, z.data());
          blas::gemm(false, false, rows, as_int(d.D), width, Scalar(1), z.data(), width,
                     vg + block.lo * ldv, as_int(ldv), beta, oh + block.r0 * ldo, as_int(ldo));
          beta = 1;
        }
        if (beta == 0) zero_rows(oh, ldo, block.r0, block.r1, d.D);  // rows fully masked
      }
    }
  }
  const bool track = needs_grad({&weights, &v});
  Tensor result = detail::make_output(std::move(out), track);
  if (track) {
    tape().record("attention_mix", result, [=](const Array& grad) {
      // As the full op's backward with the masked weights taken as 0: dW_h = dO_h V_g^T at the
      // allowed places and exactly 0 at the masked ones; dV_g += W_h^T dO_h over allowed places.
      std::optional<detail::GradTarget> gw, gv;
      if (weights.requires_grad()) gw.emplace(weights);
      if (v.requires_grad()) gv.emplace(v, true);  // zeros: blocks add their rows
      std::vector<Scalar> z(kRowBlock * pm.max_width);
      std::vector<Scalar> vt(gw ? d.D * d.m : 0);  // V_g^T (D, m) of the current KV head
      for (std::size_t b = 0; b < d.B; ++b) {
        for (std::size_t h = 0; h < d.H; ++h) {
          const Scalar* go = grad.data() + o_at(b, h);
          const Scalar* wh = weights.value().data() + w_at(b, h);
          const Scalar* vg = v.value().data() + v_at(b, h / d.n_rep);
          if (gw && h % d.n_rep == 0) transpose_into(vg, d.m, d.D, ldv, vt.data());
          for (const RowBlock& block : pm.blocks) {
            const int rows = as_int(block.r1 - block.r0), lo = as_int(block.lo);
            const int width = as_int(block.hi - block.lo);
            const Scalar* go_block = go + block.r0 * ldo;  // dO[r0:r1], row stride H * D
            if (gw) {
              Scalar* dw = gw->data + w_at(b, h);
              if (gw->beta == 0) {
                // A fresh gradient: dW[r0:r1, 0:hi] = dO[r0:r1] V^T[:, 0:hi] in one gemm, then 0
                // from key allowed[i] on (overwriting the diagonal region's masked places).
                if (block.hi > 0)
                  blas::gemm(false, false, rows, as_int(block.hi), as_int(d.D), Scalar(1), go_block,
                             as_int(ldo), vt.data(), as_int(d.m), Scalar(0), dw + block.r0 * d.m,
                             as_int(d.m));
                for (std::size_t i = block.r0; i < block.r1; ++i)
                  std::fill(dw + i * d.m + pm.allowed[i], dw + (i + 1) * d.m, Scalar(0));
              } else {
                // Adding to an existing gradient: columns [0, lo) straight in (beta = 1); the
                // diagonal region into z, of which only the allowed places are added.
                if (lo > 0)
                  blas::gemm(false, false, rows, lo, as_int(d.D), Scalar(1), go_block, as_int(ldo),
                             vt.data(), as_int(d.m), Scalar(1), dw + block.r0 * d.m, as_int(d.m));
                if (width > 0)
                  blas::gemm(false, false, rows, width, as_int(d.D), Scalar(1), go_block,
                             as_int(ldo), vt.data() + block.lo, as_int(d.m), Scalar(0), z.data(),
                             width);
                for (std::size_t i = block.r0; i < block.r1; ++i) {
                  Scalar* row = dw + i * d.m;
                  const Scalar* zi = z.data() + (i - block.r0) * width;
                  for (std::size_t j = block.lo; j < pm.allowed[i]; ++j) row[j] += zi[j - block.lo];
                }
              }
            }
            if (gv) {  // dV[0:lo] += W[r0:r1, 0:lo]^T dO[r0:r1]; dV[lo:hi] += Z^T dO[r0:r1]
              Scalar* dv = gv->data + v_at(b, h / d.n_rep);
              if (lo > 0)
                blas::gemm(true, false, lo, as_int(d.D), rows, Scalar(1), wh + block.r0 * d.m,
                           as_int(d.m), go_block, as_int(ldo), Scalar(1), dv, as_int(ldv));
              if (width > 0) {
                copy_allowed(wh, d.m, block, pm.allowed, z.data());
                blas::gemm(true, false, width, as_int(d.D), rows, Scalar(1), z.data(), width,
                           go_block, as_int(ldo), Scalar(1), dv + block.lo * ldv, as_int(ldv));
              }
            }
          }
        }
      }
      if (gw) gw->finish();
      if (gv) gv->finish();
    });
  }
  return result;
}

}  // namespace GLASS_PRECISION
}  // namespace glass
