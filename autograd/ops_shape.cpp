// Shape ops: reshape, transpose/permute, slice and concat along an axis.
//
// Every result is a fresh contiguous row-major array (no views), so later ops can loop over
// `.data()` directly. The backward pass of each op moves the gradient elements back to where
// the forward pass took them from: reshape back, the inverse permutation, scatter into a zero
// array of the input shape (slice), or cut the gradient into the inputs' pieces (concat).

#include <numeric>

#include "autograd/ops.hpp"
#include "autograd/ops_util.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

namespace {

/// Copies x (shape `in`) into a new array whose axis i is input axis perm[i].
Array permute_array(const Array& x, const Shape& in, const std::vector<std::size_t>& perm) {
  const std::size_t nd = in.size();
  Shape out_shape(nd);
  std::vector<std::size_t> in_strides(nd, 1), stride(nd);  // stride: input step per output axis
  for (std::size_t d = nd; d-- > 1;) in_strides[d - 1] = in_strides[d] * in[d];
  for (std::size_t d = 0; d < nd; ++d) {
    out_shape[d] = in[perm[d]];
    stride[d] = in_strides[perm[d]];
  }
  Array out = detail::empty_array(out_shape);
  const std::size_t n = out.size();
  const Scalar* src = x.data();
  Scalar* dst = out.data();
  if (n == 0) return out;
  // When the last axis stays last (e.g. swapping heads and positions of (B, T, H, D)), whole
  // rows of `run` elements are contiguous on both sides: copy row by row, walking the other axes.
  const bool last_axis_kept = nd > 0 && perm[nd - 1] == nd - 1;
  const std::size_t run = last_axis_kept ? in[nd - 1] : 1;
  const std::size_t walk_axes = last_axis_kept ? nd - 1 : nd;  // axes of the odometer
  std::vector<std::size_t> index(nd, 0);
  std::size_t from = 0;
  for (std::size_t i = 0; i < n; i += run) {  // odometer over the output
    std::copy(src + from, src + from + run, dst + i);
    for (std::size_t d = walk_axes; d-- > 0;) {
      ++index[d];
      from += stride[d];
      if (index[d] < out_shape[d]) break;
      from -= stride[d] * out_shape[d];
      index[d] = 0;
    }
  }
  return out;
}

/// (outer, n, inner) view of `shape` around axis `ax`.
void split_at_axis(const Shape& shape, std::size_t ax, std::size_t& outer, std::size_t& inner) {
  outer = 1;
  inner = 1;
  for (std::size_t d = 0; d < ax; ++d) outer *= shape[d];
  for (std::size_t d = ax + 1; d < shape.size(); ++d) inner *= shape[d];
}

}  // namespace

// ---- reshape ---------------------------------------------------------------------------------
Tensor reshape(const Tensor& a, const Shape& shape) {
  if (detail::numel(shape) != a.size()) {
    throw std::invalid_argument("reshape: cannot reshape " + shape_str(a.shape()) + " (" +
                                std::to_string(a.size()) + " elements) into " + shape_str(shape));
  }
  Array out = detail::empty_array(shape);
  std::copy(a.value().data(), a.value().data() + a.size(), out.data());
  const bool track = needs_grad({&a});
  Tensor result = detail::make_output(std::move(out), track);
  if (track) {
    tape().record("reshape", result, [a](const Array& grad) {
      // Row-major order is unchanged: the gradient just takes the input's shape back.
      Array ga = grad;
      ga.reshape(a.shape());
      accumulate_grad(a, std::move(ga));
    });
  }
  return result;
}

// ---- permute / transpose ---------------------------------------------------------------------
Tensor permute(const Tensor& a, const std::vector<int>& perm) {
  const Shape in = a.shape();
  auto perm_text = [&perm] {  // only for the error messages
    std::string text = "(";
    for (std::size_t i = 0; i < perm.size(); ++i) text += (i ? ", " : "") + std::to_string(perm[i]);
    return text + ")";
  };
  if (perm.size() != in.size()) {
    throw std::invalid_argument("permute: permutation " + perm_text() + " does not match shape " +
                                shape_str(in));
  }
  std::vector<std::size_t> p(perm.size());
  std::vector<bool> seen(perm.size(), false);
  for (std::size_t i = 0; i < perm.size(); ++i) {
    p[i] = detail::normalize_axis(perm[i], in.size(), "permute", in);
    if (seen[p[i]]) {
      throw std::invalid_argument("permute: " + perm_text() + " is not a permutation of the axes of " +
                                  shape_str(in));
    }
    seen[p[i]] = true;
  }
  const bool track = needs_grad({&a});
  Tensor result = detail::make_output(permute_array(a.value(), in, p), track);
  if (track) {
    tape().record("permute", result, [a, p](const Array& grad) {
      // Undo the permutation: input axis p[i] came from output axis i.
      std::vector<std::size_t> inverse(p.size());
      for (std::size_t i = 0; i < p.size(); ++i) inverse[p[i]] = i;
      accumulate_grad(a, permute_array(grad, shape_of(grad), inverse));
    });
  }
  return result;
}

Tensor transpose(const Tensor& a, int axis0, int axis1) {
  const Shape in = a.shape();
  const std::size_t d0 = detail::normalize_axis(axis0, in.size(), "transpose", in);
  const std::size_t d1 = detail::normalize_axis(axis1, in.size(), "transpose", in);
  std::vector<int> perm(in.size());
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[d0], perm[d1]);
  return permute(a, perm);
}

// ---- slice -----------------------------------------------------------------------------------
Tensor slice(const Tensor& a, int axis, std::size_t begin, std::size_t end) {
  const Shape in = a.shape();
  const std::size_t ax = detail::normalize_axis(axis, in.size(), "slice", in);
  if (begin > end || end > in[ax]) {
    throw std::invalid_argument("slice: range [" + std::to_string(begin) + ", " +
                                std::to_string(end) + ") is invalid for axis " +
                                std::to_string(axis) + " of shape " + shape_str(in));
  }
  std::size_t outer, inner;
  split_at_axis(in, ax, outer, inner);
  const std::size_t n = in[ax], len = end - begin;
  Shape out_shape = in;
  out_shape[ax] = len;
  Array out = detail::empty_array(out_shape);
  // Each outer index holds one contiguous block of len*inner elements.
  for (std::size_t o = 0; o < outer; ++o) {
    const Scalar* src = a.value().data() + (o * n + begin) * inner;
    std::copy(src, src + len * inner, out.data() + o * len * inner);
  }
  const bool track = needs_grad({&a});
  Tensor result = detail::make_output(std::move(out), track);
  if (track) {
    tape().record("slice", result, [a, in, outer, inner, n, begin, len](const Array& grad) {
      Array ga(in, Scalar(0));  // elements outside the slice get zero gradient
      for (std::size_t o = 0; o < outer; ++o) {
        const Scalar* src = grad.data() + o * len * inner;
        std::copy(src, src + len * inner, ga.data() + (o * n + begin) * inner);
      }
      accumulate_grad(a, std::move(ga));
    });
  }
  return result;
}

// ---- concat ----------------------------------------------------------------------------------
Tensor concat(const std::vector<Tensor>& tensors, int axis) {
  if (tensors.empty()) throw std::invalid_argument("concat: needs at least one tensor");
  const Shape first = tensors[0].shape();
  const std::size_t ax = detail::normalize_axis(axis, first.size(), "concat", first);
  Shape out_shape = first;
  out_shape[ax] = 0;
  std::vector<std::size_t> extents;
  for (const Tensor& t : tensors) {
    Shape s = t.shape();
    Shape s_rest = s, f_rest = first;
    if (s.size() == first.size()) {
      s_rest[ax] = 0;
      f_rest[ax] = 0;
    }
    if (s_rest != f_rest) {
      throw std::invalid_argument("concat: shapes " + shape_str(first) + " and " + shape_str(s) +
                                  " differ outside axis " + std::to_string(axis));
    }
    extents.push_back(s[ax]);
    out_shape[ax] += s[ax];
  }
  std::size_t outer, inner;
  split_at_axis(first, ax, outer, inner);
  const std::size_t total = out_shape[ax];
  Array out = detail::empty_array(out_shape);
  std::size_t offset = 0;  // position along the axis where the current piece starts
  for (std::size_t k = 0; k < tensors.size(); ++k) {
    const std::size_t len = extents[k];
    for (std::size_t o = 0; o < outer; ++o) {
      const Scalar* src = tensors[k].value().data() + o * len * inner;
      std::copy(src, src + len * inner, out.data() + (o * total + offset) * inner);
    }
    offset += len;
  }
  const bool track = needs_grad(tensors);
  Tensor result = detail::make_output(std::move(out), track);
  if (track) {
    tape().record("concat", result, [tensors, extents, outer, inner, total](const Array& grad) {
      std::size_t offset = 0;
      for (std::size_t k = 0; k < tensors.size(); ++k) {
        const std::size_t len = extents[k];
        if (tensors[k].requires_grad()) {
          Array gk = detail::empty_array(tensors[k].shape());
          for (std::size_t o = 0; o < outer; ++o) {
            const Scalar* src = grad.data() + (o * total + offset) * inner;
            std::copy(src, src + len * inner, gk.data() + o * len * inner);
          }
          accumulate_grad(tensors[k], std::move(gk));
        }
        offset += len;
      }
    });
  }
  return result;
}

}  // namespace GLASS_PRECISION
}  // namespace glass
