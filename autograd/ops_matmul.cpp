// Matrix products through BLAS (cblas_sgemm / cblas_dgemm, see blas.hpp): matmul (2-D and
// batched), matmul_nt (a @ b^T, used for attention scores Q K^T) and linear (x @ W^T).
//
// For Y = A @ B the backward pass is  dA = dY @ B^T  and  dB = A^T @ dY;
// for Y = A @ B^T it is               dA = dY @ B    and  dB = dY^T @ A.
// When B is one 2-D matrix shared by all the rows of A (linear layers, or a batched A times a
// 2-D B), all leading axes of A are folded into one tall matrix so that the whole product is a
// single gemm, and dB sums the contributions of every row in that same gemm.
// attention_scores and attention_mix are the two products of attention, reading q, k, v in their
// (B, positions, heads, head_dim) layout through BLAS leading dimensions (see below).

#include "autograd/blas.hpp"
#include "autograd/ops.hpp"
#include "autograd/ops_util.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

namespace {

int as_int(std::size_t n) { return static_cast<int>(n); }

/// Where a product's backward writes the gradient of tensor t: into t's existing grad (beta = 1,
/// the gemm adds to it) or, for the first contribution, into a fresh array (beta = 0) that
/// finish() hands to accumulate_grad.
struct GradTarget {
  explicit GradTarget(const Tensor& t) : tensor(t) {
    if (tensor.has_grad()) {
      data = tensor.grad().data();
      beta = 1;
    } else {
      fresh = detail::empty_array(tensor.shape());
      data = fresh.data();
      beta = 0;
    }
  }
  void finish() {
    if (beta == 0) accumulate_grad(tensor, std::move(fresh));
  }
  Tensor tensor;
  Array fresh;
  Scalar* data;
  Scalar beta;
};

/// The common core. a (..., n, k); b is either 2-D, shared by all rows of a, or has a's
/// leading (batch) axes. trans_b = false: b (..., k, m); trans_b = true: b (..., m, k).
/// `min_a_dim` is 2 for matmul and 1 for linear. The product is scaled by `alpha` (the gemm's
/// own factor, so a scale such as 1/sqrt(d_k) costs no extra pass); its gradients too.
Tensor product(const char* name, const Tensor& a, const Tensor& b, bool trans_b,
               std::size_t min_a_dim, Scalar alpha = 1) {
  const Shape sa = a.shape(), sb = b.shape();
  auto fail = [&](const std::string& why) {
    return std::invalid_argument(std::string(name) + ": " + why + ": " + shape_str(sa) +
                                 (trans_b ? " @ T" : " @ ") + shape_str(sb));
  };
  if (sa.size() < min_a_dim || sb.size() < 2) throw fail("too few axes");
  const bool shared_b = sb.size() == 2;
  if (!shared_b) {
    if (sa.size() != sb.size() || !std::equal(sa.begin(), sa.end() - 2, sb.begin()))
      throw fail("batch (leading) dimensions differ");
  }
  const std::size_t k = sa.back();
  const std::size_t kb = trans_b ? sb[sb.size() - 1] : sb[sb.size() - 2];
  const std::size_t m = trans_b ? sb[sb.size() - 2] : sb[sb.size() - 1];
  if (k != kb) throw fail("inner dimensions differ");

  // Shared b: every leading axis of a is a row. Batched: `batch` products of (n, k) @ (k, m).
  const std::size_t rows_total = detail::numel(sa) / std::max<std::size_t>(k, 1);
  const std::size_t batch = shared_b ? 1 : detail::numel(Shape(sa.begin(), sa.end() - 2));
  const std::size_t n = rows_total / std::max<std::size_t>(batch, 1);
  Shape so = sa;
  so.back() = m;
  // Every element is written by the gemm (beta = 0); only an empty inner dimension (k = 0)
  // leaves the product as zeros.
  Array out = k > 0 ? detail::empty_array(so) : Array(so, Scalar(0));
  const std::size_t a_step = n * k, b_step = shared_b ? 0 : k * m, y_step = n * m;
  // ld = row length as stored: b is (k, m) normally, (m, k) when transposed.
  const int ldb = as_int(trans_b ? k : m);
  if (k > 0 && n > 0 && m > 0) {
    for (std::size_t i = 0; i < batch; ++i) {
      const Scalar* ai = a.value().data() + i * a_step;
      const Scalar* bi = b.value().data() + i * b_step;
      if (n == 1) {  // one row (generating one token): y = op(B)^T a as a matrix-vector product
        blas::gemv(!trans_b, as_int(trans_b ? m : k), as_int(trans_b ? k : m), alpha, bi, ldb,
                   ai, Scalar(0), out.data() + i * y_step);
      } else {
        blas::gemm(false, trans_b, as_int(n), as_int(m), as_int(k), alpha, ai, as_int(k), bi,
                   ldb, Scalar(0), out.data() + i * y_step, as_int(m));
      }
    }
  }
  const bool track = needs_grad({&a, &b});
  Tensor result = detail::make_output(std::move(out), track);
  if (track) {
    tape().record(name, result, [=](const Array& grad) {
      if (k == 0 || n == 0 || m == 0) {
        accumulate_grad(a, Array(sa, Scalar(0)));
        accumulate_grad(b, Array(sb, Scalar(0)));
        return;
      }
      const Scalar* g = grad.data();
      // Each gradient is written by the gemm itself: with beta = 1 straight into the tensor's
      // existing grad (a weight after zero_grad, an input used twice), which saves a temporary
      // and the `+=` pass of accumulate_grad; with beta = 0 into a fresh array otherwise.
      if (a.requires_grad()) {
        GradTarget ga(a);
        for (std::size_t i = 0; i < batch; ++i) {
          // dA (n, k) = alpha dY (n, m) @ op(B)^T
          blas::gemm(false, !trans_b, as_int(n), as_int(k), as_int(m), alpha, g + i * y_step,
                     as_int(m), b.value().data() + i * b_step, ldb, ga.beta,
                     ga.data + i * a_step, as_int(k));
        }
        ga.finish();
      }
      if (b.requires_grad()) {
        GradTarget gb(b);
        for (std::size_t i = 0; i < batch; ++i) {
          const Scalar* ai = a.value().data() + i * a_step;
          if (!trans_b) {  // dB (k, m) = alpha A^T (k, n) @ dY (n, m)
            blas::gemm(true, false, as_int(k), as_int(m), as_int(n), alpha, ai, as_int(k),
                       g + i * y_step, as_int(m), gb.beta, gb.data + i * b_step, as_int(m));
          } else {  // dB (m, k) = alpha dY^T (m, n) @ A (n, k)
            blas::gemm(true, false, as_int(m), as_int(k), as_int(n), alpha, g + i * y_step,
                       as_int(m), ai, as_int(k), gb.beta, gb.data + i * b_step, as_int(k));
          }
        }
        gb.finish();
      }
    });
  }
  return result;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) { return product("matmul", a, b, false, 2); }

Tensor matmul_nt(const Tensor& a, const Tensor& b, Scalar alpha) {
  return product("matmul_nt", a, b, true, 2, alpha);
}

// ---- attention products on (B, positions, heads, head_dim) ---------------------------------
//
// q, k, v stay in the layout the projections produce, (B, positions, heads, head_dim): row t of
// head h is D numbers at offset (t * heads + h) * D, so one head's (positions, D) matrix is every
// heads*D-th row, which BLAS reads directly with leading dimension heads * D. No transposed copy
// to heads-first and no repeat_kv copy: query head h reads KV head h / n_rep by pointer.

namespace {

/// Shapes of one attention product: B batch, H query heads, H_kv key/value heads, n queries,
/// m keys, D head_dim; n_rep = H / H_kv query heads share one KV head.
struct AttentionDims {
  std::size_t B, H, H_kv, n, m, D, n_rep;
  bool empty() const { return B == 0 || H == 0 || n == 0 || m == 0 || D == 0; }
};

/// Checks that H is a positive multiple of H_kv (GQA), else throws with `fail`.
template <class Fail>
void check_heads(std::size_t H, std::size_t H_kv, const Fail& fail) {
  if (H_kv == 0 || H % H_kv != 0) {
    throw fail(std::to_string(H) + " query heads are not a multiple of " + std::to_string(H_kv) +
               " key/value heads");
  }
}

}  // namespace

Tensor attention_scores(const Tensor& q, const Tensor& k, Scalar scale) {
  const Shape sq = q.shape(), sk = k.shape();
  auto fail = [&](const std::string& why) {
    return std::invalid_argument("attention_scores: " + why + ": q " + shape_str(sq) + ", k " +
                                 shape_str(sk) + " (expected q (B, n, H, D), k (B, m, H_kv, D))");
  };
  if (sq.size() != 4 || sk.size() != 4) throw fail("q and k must be 4-D");
  if (sq[0] != sk[0]) throw fail("batch sizes differ");
  if (sq[3] != sk[3]) throw fail("head_dim differs");
  check_heads(sq[2], sk[2], fail);
  const AttentionDims d{sq[0], sq[2], sk[2], sq[1], sk[1], sq[3], sq[2] / sk[2]};
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
        GradTarget gq(q);
        for (std::size_t b = 0; b < d.B; ++b)
          for (std::size_t h = 0; h < d.H; ++h)
            blas::gemm(false, false, as_int(d.n), as_int(d.D), as_int(d.m), scale, g + s_at(b, h),
                       as_int(d.m), k.value().data() + k_at(b, h / d.n_rep), as_int(ldk), gq.beta,
                       gq.data + q_at(b, h), as_int(ldq));
        gq.finish();
      }
      if (k.requires_grad()) {  // dK_g (m, D) = sum over the n_rep heads h of g: scale dS_h^T Q_h
        GradTarget gk(k);
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
  auto fail = [&](const std::string& why) {
    return std::invalid_argument("attention_mix: " + why + ": weights " + shape_str(sw) + ", v " +
                                 shape_str(sv) + " (expected weights (B, H, n, m), v (B, m, H_kv, D))");
  };
  if (sw.size() != 4 || sv.size() != 4) throw fail("weights and v must be 4-D");
  if (sw[0] != sv[0]) throw fail("batch sizes differ");
  if (sw[3] != sv[1]) throw fail("weights' keys and v's positions differ");
  check_heads(sw[1], sv[2], fail);
  const AttentionDims d{sw[0], sw[1], sv[2], sw[2], sw[3], sv[3], sw[1] / sv[2]};
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
        GradTarget gw(weights);
        for (std::size_t b = 0; b < d.B; ++b)
          for (std::size_t h = 0; h < d.H; ++h)
            blas::gemm(false, true, as_int(d.n), as_int(d.m), as_int(d.D), Scalar(1), g + o_at(b, h),
                       as_int(ldo), v.value().data() + v_at(b, h / d.n_rep), as_int(ldv), gw.beta,
                       gw.data + w_at(b, h), as_int(d.m));
        gw.finish();
      }
      if (v.requires_grad()) {  // dV_g (m, D) = sum over the n_rep heads h of g: W_h^T dO_h
        GradTarget gv(v);
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

Tensor linear(const Tensor& x, const Tensor& weight) {
  if (weight.dim() != 2) {
    throw std::invalid_argument("linear: weight must be (out_features, in_features), got " +
                                shape_str(weight.shape()) + " for input " + shape_str(x.shape()));
  }
  return product("linear", x, weight, true, 1);
}

}  // namespace GLASS_PRECISION
}  // namespace glass
