// Neural-network ops: embedding lookup, masked_fill, softmax / log_softmax over the last axis,
// fused cross-entropy, fused RMSNorm, rotary position embedding (RoPE), the GQA head repeat
// (repeat_kv) and the causal mask.
//
// softmax, log_softmax, rms_norm, rope and repeat_kv are written as xtensor expressions over the
// last axis (NumPy's x.max(-1, keepdims=True) is xt::amax(x, {last}, xt::keep_dims)). Their
// backward formulas are derived once for the fused function (cheaper and more stable than
// chaining the primitive ops) and each one is checked against the composed version in the
// tests. embedding (a gather and its scatter-add) and cross_entropy (one pass per row of logits,
// the training step's loss on both paths) loop over rows.

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <xtensor/xbroadcast.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xoperation.hpp>
#include <xtensor/xreducer.hpp>
#include <xtensor/xview.hpp>

#include "autograd/ops.hpp"
#include "autograd/ops_util.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

namespace {

constexpr Scalar kNegInf = -std::numeric_limits<Scalar>::infinity();

/// Splits shape (..., d) into rows x d; throws for 0-d input.
void rows_of(const Shape& s, const char* op, std::size_t& rows, std::size_t& d) {
  if (s.empty())
    throw std::invalid_argument(std::string(op) + ": needs at least one axis, got shape ()");
  d = s.back();
  rows = d == 0 ? 0 : detail::numel(s) / d;
}

/// max of a row (kNegInf for an empty row).
Scalar row_max(const Scalar* x, std::size_t d) { return detail::row_max(x, d); }

/// log(sum(exp(x))) of a row, computed as max + log(sum(exp(x - max))); kNegInf when every
/// entry is -inf.
Scalar row_logsumexp(const Scalar* x, std::size_t d) {
  const Scalar m = row_max(x, d);
  if (m == kNegInf) return kNegInf;
  Scalar total = 0;
  for (std::size_t j = 0; j < d; ++j) total += std::exp(x[j] - m);
  return m + std::log(total);
}

}  // namespace

// ---- embedding ---------------------------------------------------------------------------------
// out[s, :] = weight[ids[s], :]. Backward: each picked row of weight collects (+=) the
// gradients of every position that picked it.
Tensor embedding(const Tensor& weight, const Ids& ids) {
  if (weight.dim() != 2) {
    throw std::invalid_argument("embedding: weight must be (vocab_size, d), got " +
                                shape_str(weight.shape()));
  }
  const std::size_t vocab = weight.shape()[0], d = weight.shape()[1];
  const std::size_t n = ids.size();
  for (std::size_t i = 0; i < n; ++i) {
    const auto id = ids.data()[i];
    if (id < 0 || static_cast<std::size_t>(id) >= vocab) {
      throw std::out_of_range("embedding: id " + std::to_string(id) + " at flat position " +
                              std::to_string(i) + " is outside [0, " + std::to_string(vocab) +
                              ") for weight " + shape_str(weight.shape()));
    }
  }
  Shape out_shape = shape_of(ids);
  out_shape.push_back(d);
  Array out = detail::empty_array(out_shape);
  const Scalar* w = weight.value().data();
  for (std::size_t i = 0; i < n; ++i) {
    const Scalar* row = w + static_cast<std::size_t>(ids.data()[i]) * d;
    std::copy(row, row + d, out.data() + i * d);
  }
  const bool track = needs_grad({&weight});
  Tensor result = detail::make_output(std::move(out), track);
  if (track) {
    tape().record("embedding", result, [weight, ids, n, d](const Array& grad) {
      Array gw(weight.shape(), Scalar(0));
      for (std::size_t i = 0; i < n; ++i) {
        Scalar* row = gw.data() + static_cast<std::size_t>(ids.data()[i]) * d;
        const Scalar* g = grad.data() + i * d;
        for (std::size_t j = 0; j < d; ++j) row[j] += g[j];
      }
      accumulate_grad(weight, std::move(gw));
    });
  }
  return result;
}

// ---- masked_fill ---------------------------------------------------------------------------------

// out = value where mask, else a. Backward: the gradient passes where mask is false and is
// exactly zero where it is true (the output there does not depend on a).
Tensor masked_fill(const Tensor& a, const Mask& mask, Scalar value) {
  detail::check_mask_broadcasts(a.shape(), mask, "masked_fill");
  const bool track = needs_grad({&a});
  // The mask stretched to a's shape explicitly (xt::broadcast): xt::where's own broadcasting of
  // a smaller bool array reads the wrong flags in the xsimd build (xtensor 0.24).
  const Shape sa = a.shape();
  Tensor result = detail::make_output(xt::where(xt::broadcast(mask, sa), value, a.value()), track);
  if (track) {
    tape().record("masked_fill", result, [a, mask, sa](const Array& grad) {
      accumulate_grad(a, Array(xt::where(xt::broadcast(mask, sa), Scalar(0), grad)));
    });
  }
  return result;
}

// ---- softmax -----------------------------------------------------------------------------------
// y = exp(x - max) / sum(exp(x - max)) over the last axis, as NumPy:
//   m = x.max(-1, keepdims=True); e = np.exp(x - m); y = e / e.sum(-1, keepdims=True)
// Backward: dx = y * (g - sum(g * y, -1, keepdims=True)).
// A row of all -inf (every key masked) has sum 0 and gives y = 0, hence dx = 0. A NaN anywhere in
// a row makes the whole row NaN, as in PyTorch (e^(NaN - m) reaches the sum).
Tensor softmax(const Tensor& a) {
  if (a.dim() == 0) throw std::invalid_argument("softmax: needs at least one axis, got shape ()");
  const std::size_t last = a.dim() - 1;
  const Array& x = a.value();
  Array y = x;  // an empty last axis stays empty
  if (a.size() > 0) {
    Array m = xt::amax(x, {last}, xt::keep_dims);
    m = xt::where(xt::equal(m, kNegInf), Scalar(0), m);  // all -inf: any shift gives e = 0
    const Array e = xt::exp(x - m);
    const Array total = xt::sum(e, {last}, xt::keep_dims);
    y = xt::where(xt::equal(total, Scalar(0)), Scalar(0), e / total);
  }
  const bool track = needs_grad({&a});
  Tensor result = detail::make_output(std::move(y), track);
  if (track) {
    // y is read through a plain pointer, not a Tensor (the record owns the output, see unary_op).
    const TensorImpl* out = result.impl();
    tape().record("softmax", result, [a, out, last](const Array& g) {
      const Array& y = out->value;
      const Array gy = xt::sum(g * y, {last}, xt::keep_dims);  // sum_k g_k y_k per row
      accumulate_grad(a, Array(y * (g - gy)));
    });
  }
  return result;
}

// ---- log_softmax -------------------------------------------------------------------------------
// y_j = x_j - logsumexp(x). Backward: dx_j = g_j - softmax_j * sum_k g_k, softmax_j = exp(y_j).
// A row of all -inf has no distribution: its output is -inf and its gradient zero.
Tensor log_softmax(const Tensor& a) {
  if (a.dim() == 0)
    throw std::invalid_argument("log_softmax: needs at least one axis, got shape ()");
  const std::size_t last = a.dim() - 1;
  const Array& x = a.value();
  Array y = x;  // an empty tensor stays empty
  Array lse;    // (..., 1): lse = m + log(sum(exp(x - m))) per row, m the row's max (0 for a row
                // of all -inf, whose lse is then log 0 = -inf)
  if (a.size() > 0) {
    Array m = xt::amax(x, {last}, xt::keep_dims);
    m = xt::where(xt::equal(m, kNegInf), Scalar(0), m);
    lse = m + xt::log(xt::sum(xt::exp(x - m), {last}, xt::keep_dims));
    y = xt::where(xt::equal(lse, kNegInf), kNegInf, x - lse);  // a row of all -inf stays -inf
  }
  const bool track = needs_grad({&a});
  Tensor result = detail::make_output(std::move(y), track);
  if (track) {
    const TensorImpl* out = result.impl();  // y through a plain pointer (see softmax)
    tape().record("log_softmax", result, [a, out, lse, last](const Array& g) {
      if (g.size() == 0) return accumulate_grad(a, g);
      const Array& y = out->value;
      const Array g_sum = xt::sum(g, {last}, xt::keep_dims);
      // a row of all -inf has no distribution: zero gradient
      accumulate_grad(a,
                      Array(xt::where(xt::equal(lse, kNegInf), Scalar(0), g - xt::exp(y) * g_sum)));
    });
  }
  return result;
}

// ---- cross_entropy -------------------------------------------------------------------------------
// loss = (1/N) sum over counted rows r of (logsumexp(x_r) - x_r[t_r]), N = number of rows whose
// target is not ignore_index (loss 0 when N = 0).
// Backward: dx_r = (softmax(x_r) - onehot(t_r)) * g / N for counted rows, 0 for ignored rows.
Tensor cross_entropy(const Tensor& logits, const Ids& targets, int ignore_index) {
  const Shape sl = logits.shape(), st = shape_of(targets);
  if (sl.empty() || Shape(sl.begin(), sl.end() - 1) != st) {
    throw std::invalid_argument("cross_entropy: logits " + shape_str(sl) +
                                " must be (..., V) with targets of shape (...), got targets " +
                                shape_str(st));
  }
  std::size_t rows, V;
  rows_of(sl, "cross_entropy", rows, V);
  rows = targets.size();
  std::vector<Scalar> lse(rows, 0);  // per-row logsumexp, reused by the backward pass
  double total = 0;
  std::size_t count = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    const int t = targets.data()[r];
    if (t == ignore_index) continue;
    if (t < 0 || static_cast<std::size_t>(t) >= V) {
      throw std::out_of_range("cross_entropy: target " + std::to_string(t) + " at flat position " +
                              std::to_string(r) + " is outside [0, " + std::to_string(V) +
                              ") (logits " + shape_str(sl) + ", ignore_index " +
                              std::to_string(ignore_index) + ")");
    }
    const Scalar* x = logits.value().data() + r * V;
    lse[r] = row_logsumexp(x, V);
    total += static_cast<double>(lse[r]) - static_cast<double>(x[t]);
    ++count;
  }
  const Scalar loss = count ? static_cast<Scalar>(total / static_cast<double>(count)) : Scalar(0);
  const bool track = needs_grad({&logits});
  Tensor result = detail::make_output(Array(Shape{}, loss), track);
  if (track) {
    tape().record(
        "cross_entropy", result,
        [logits, targets, ignore_index, lse = std::move(lse), rows, V, count](const Array& grad) {
          Array gx(logits.shape(), Scalar(0));
          if (count > 0) {
            const Scalar scale = grad.data()[0] / static_cast<Scalar>(count);
            for (std::size_t r = 0; r < rows; ++r) {
              const int t = targets.data()[r];
              if (t == ignore_index) continue;
              const Scalar* x = logits.value().data() + r * V;
              Scalar* dx = gx.data() + r * V;
              for (std::size_t j = 0; j < V; ++j) dx[j] = std::exp(x[j] - lse[r]) * scale;
              dx[t] -= scale;
            }
          }
          accumulate_grad(logits, std::move(gx));
        });
  }
  return result;
}

// ---- rms_norm ------------------------------------------------------------------------------------
// y = x * r * gain with r = 1 / sqrt(mean(x^2, -1) + eps) per row (Zhang & Sennrich 2019), as NumPy:
//   r = 1 / np.sqrt((x * x).mean(-1, keepdims=True) + eps); y = x * r * gain
// Backward, with xh = x * r and dxh = g * gain:
//   dgain = sum over rows of g * xh
//   dx    = r * (dxh - xh * mean(dxh * xh, -1, keepdims=True))
// (The fast path's fast_rms_norm, autograd/kernels/rms_norm.cpp, adds dx straight into x's
// gradient.)
Tensor rms_norm(const Tensor& x, const Tensor& gain, Scalar eps) {
  const Shape sx = x.shape(), sg = gain.shape();
  if (sx.empty() || sg.size() != 1 || sg[0] != sx.back()) {
    throw std::invalid_argument("rms_norm: x must be (..., d) and gain (d), got x " +
                                shape_str(sx) + " and gain " + shape_str(sg));
  }
  std::size_t rows, d;
  rows_of(sx, "rms_norm", rows, d);
  const std::size_t last = sx.size() - 1;
  const Array& X = x.value();
  const Array r = 1 / xt::sqrt(xt::mean(X * X, {last}, xt::keep_dims) + eps);  // (..., 1)
  Array y = X * r * gain.value();
  const bool track = needs_grad({&x, &gain});
  Tensor result = detail::make_output(std::move(y), track);
  if (track) {
    tape().record("rms_norm", result, [x, gain, r, last, rows, d](const Array& g) {
      const Array xh = x.value() * r;
      const Array dxh = g * gain.value();
      Array g_xh = g * xh;
      g_xh.reshape({rows, d});
      accumulate_grad(gain, Array(xt::sum(g_xh, {0})));
      const Array mean_dxh_xh = xt::mean(dxh * xh, {last}, xt::keep_dims);  // (..., 1)
      accumulate_grad(x, Array(r * (dxh - xh * mean_dxh_xh)));
    });
  }
  return result;
}

// ---- rope ----------------------------------------------------------------------------------------
// For position p = start + t and pair i = (x[2i], x[2i+1]), angle = p * base^(-2i/D):
//   y[2i]   = x[2i] cos - x[2i+1] sin
//   y[2i+1] = x[2i] sin + x[2i+1] cos
// A rotation is orthogonal, so the backward pass rotates the gradient by -angle.
// (The fast path's fast_rope, autograd/kernels/rope.cpp, keeps the cos/sin in a table.)
namespace {

/// Every pair (x[..., 2i], x[..., 2i+1]) of x (B, T, H, D) turned by the angle whose cos and sin
/// are cos_t[t, i] and sin_t[t, i], both (T, D/2).
Array rotate_pairs(const Array& x, const Array& cos_t, const Array& sin_t) {
  const Shape s = shape_of(x);
  const std::size_t half = s[3] / 2;
  Array pairs = x;
  pairs.reshape({s[0], s[1], s[2], half, 2});
  const auto x0 = xt::view(pairs, xt::all(), xt::all(), xt::all(), xt::all(), 0);  // (B, T, H, D/2)
  const auto x1 = xt::view(pairs, xt::all(), xt::all(), xt::all(), xt::all(), 1);
  // (T, 1, D/2): one angle per position and pair, the same for every head.
  const auto c = xt::view(cos_t, xt::all(), xt::newaxis(), xt::all());
  const auto sn = xt::view(sin_t, xt::all(), xt::newaxis(), xt::all());
  Array y = Array::from_shape(pairs.shape());
  xt::view(y, xt::all(), xt::all(), xt::all(), xt::all(), 0) = x0 * c - x1 * sn;
  xt::view(y, xt::all(), xt::all(), xt::all(), xt::all(), 1) = x0 * sn + x1 * c;
  y.reshape(s);
  return y;
}

}  // namespace

Tensor rope(const Tensor& x, std::size_t start, Scalar base) {
  const Shape s = x.shape();
  if (s.size() != 4 || s[3] % 2 != 0) {
    throw std::invalid_argument("rope: x must be (B, T, H, D) with D even, got " + shape_str(s));
  }
  const std::size_t T = s[1], D = s[3], half = D / 2;
  // cos and sin of angle[t, i] = (start + t) * base^(-2i/D), in double for accuracy at large
  // positions: (T, D/2).
  std::vector<double> theta(half);  // pair i turns by base^(-2i/D) per position
  for (std::size_t i = 0; i < half; ++i)
    theta[i] =
        std::pow(static_cast<double>(base), -2.0 * static_cast<double>(i) / static_cast<double>(D));
  Array cos_t = Array::from_shape({T, half}), sin_t = Array::from_shape({T, half});
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(start + t) * theta[i];
      cos_t(t, i) = static_cast<Scalar>(std::cos(angle));
      sin_t(t, i) = static_cast<Scalar>(std::sin(angle));
    }
  const bool empty = x.size() == 0;
  Array y = empty ? x.value() : rotate_pairs(x.value(), cos_t, sin_t);
  const bool track = needs_grad({&x});
  Tensor result = detail::make_output(std::move(y), track);
  if (track) {
    tape().record("rope", result, [x, cos_t, sin_t, empty](const Array& g) {
      if (empty) return accumulate_grad(x, g);
      accumulate_grad(x, rotate_pairs(g, cos_t, Array(-sin_t)));  // turned back by -angle
    });
  }
  return result;
}

// ---- repeat_kv -----------------------------------------------------------------------------------
// out[b, h] = x[b, h / n_rep]. Backward: input head k receives the sum of the gradients of its
// n_rep copies.
Tensor repeat_kv(const Tensor& x, std::size_t n_rep) {
  const Shape s = x.shape();
  if (s.size() != 4 || n_rep == 0) {
    throw std::invalid_argument("repeat_kv: x must be (B, H_kv, T, D) and n_rep >= 1, got " +
                                shape_str(s) + " and n_rep " + std::to_string(n_rep));
  }
  // x as (B, H_kv, 1, T, D), broadcast along the new axis to n_rep copies of each head, and
  // (B, H_kv, n_rep, T, D) read as (B, H_kv * n_rep, T, D): head h is copy h % n_rep of h / n_rep.
  const std::size_t B = s[0], Hkv = s[1], T = s[2], D = s[3];
  Array x5 = x.value();
  x5.reshape({B, Hkv, 1, T, D});
  Array out = xt::broadcast(x5, std::vector<std::size_t>{B, Hkv, n_rep, T, D});
  out.reshape({B, Hkv * n_rep, T, D});
  const bool track = needs_grad({&x});
  Tensor result = detail::make_output(std::move(out), track);
  if (track) {
    tape().record("repeat_kv", result, [x, B, Hkv, T, D, n_rep](const Array& grad) {
      Array g5 = grad;
      g5.reshape({B, Hkv, n_rep, T, D});
      Array gx = xt::sum(g5, {2}, xt::evaluation_strategy::immediate);  // the copies' sum
      gx.reshape(x.shape());
      accumulate_grad(x, std::move(gx));
    });
  }
  return result;
}

// ---- topk_relu -----------------------------------------------------------------------------------
// Per row x (n) of the last axis: keep_j = 1 when x_j is among the k largest and x_j > 0, else 0;
//   y = x * keep.   Backward: dx = g * keep (the mask is a constant, as ReLU's).
// The order is total (value, then the lower index first; a NaN above every number), so
// nth_element picks the same k entries every time and a NaN row stays NaN.
Tensor topk_relu(const Tensor& a, std::size_t k) {
  if (a.dim() == 0 || k == 0 || k > a.shape().back()) {
    throw std::invalid_argument("topk_relu: k = " + std::to_string(k) +
                                " must be in [1, n] for the last axis of shape " +
                                shape_str(a.shape()));
  }
  const std::size_t n = a.shape().back(), rows = a.size() / n;
  const Scalar* x = a.value().data();
  Array keep = xt::zeros<Scalar>(a.shape());  // (..., n) 1 where the entry goes on
  std::vector<std::size_t> order(n);
  for (std::size_t r = 0; r < rows; ++r) {
    const Scalar* row = x + r * n;
    const auto larger = [row](std::size_t i, std::size_t j) {
      const bool nan_i = std::isnan(row[i]), nan_j = std::isnan(row[j]);
      if (nan_i != nan_j) return nan_i;
      if (!nan_i && row[i] != row[j]) return row[i] > row[j];
      return i < j;
    };
    for (std::size_t j = 0; j < n; ++j) order[j] = j;
    std::nth_element(order.begin(), order.begin() + (k - 1), order.end(), larger);
    for (std::size_t j = 0; j < k; ++j)
      if (!(row[order[j]] <= 0)) keep.data()[r * n + order[j]] = 1;  // > 0, or NaN
  }
  Array y = xt::where(keep > 0, a.value(), Scalar(0));  // not x * keep: -inf * 0 is NaN
  const bool track = needs_grad({&a});
  Tensor result = detail::make_output(std::move(y), track);
  if (track) {
    tape().record("topk_relu", result, [a, keep = std::move(keep)](const Array& g) {
      accumulate_grad(a, Array(g * keep));
    });
  }
  return result;
}

// ---- causal_mask ---------------------------------------------------------------------------------
Mask causal_mask(std::size_t n, std::size_t m, std::size_t start) {
  Mask mask = Mask::from_shape({n, m});
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < m; ++j) mask(i, j) = j > start + i;  // key j is in query i's future
  return mask;
}

}  // namespace GLASS_PRECISION
}  // namespace glass
