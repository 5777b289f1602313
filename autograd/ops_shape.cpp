// Shape ops: reshape, transpose/permute, slice and concat along an axis.
//
// Every result is a fresh contiguous row-major array (no views kept), so later ops may read it
// as plain rows. The backward pass of each op moves the gradient elements back to where the
// forward pass took them from: reshape back, the inverse permutation (xt::transpose), write into
// a zero array of the input shape (slice), or cut the gradient into the inputs' pieces (concat).

#include <numeric>

#include <xtensor/xmanipulation.hpp>
#include <xtensor/xstrided_view.hpp>

#include "autograd/ops.hpp"
#include "autograd/ops_util.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

namespace {

/// The view x[:, ..., :, begin:end] with the range on axis `ax` (NumPy's basic slicing).
xt::xstrided_slice_vector range_on_axis(std::size_t ax, std::size_t begin, std::size_t end) {
  xt::xstrided_slice_vector slices(ax, xt::all());
  slices.push_back(xt::range(begin, end));
  return slices;
}

}  // namespace

// ---- reshape ---------------------------------------------------------------------------------
// Same elements in the same row-major order, new extents; the gradient takes the input's back.
Tensor reshape(const Tensor& a, const Shape& shape) {
  if (detail::numel(shape) != a.size()) {
    throw std::invalid_argument("reshape: cannot reshape " + shape_str(a.shape()) + " (" +
                                std::to_string(a.size()) + " elements) into " + shape_str(shape));
  }
  Array out = a.value();
  out.reshape(shape);
  const bool track = needs_grad({&a});
  Tensor result = detail::make_output(std::move(out), track);
  if (track) {
    tape().record("reshape", result, [a](const Array& grad) {
      Array ga = grad;
      ga.reshape(a.shape());
      accumulate_grad(a, std::move(ga));
    });
  }
  return result;
}

// ---- permute / transpose ---------------------------------------------------------------------
// y = x.transpose(perm) (NumPy): output axis i is input axis perm[i]. Backward: the gradient
// transposed by the inverse permutation (input axis perm[i] came from output axis i).
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
      throw std::invalid_argument("permute: " + perm_text() +
                                  " is not a permutation of the axes of " + shape_str(in));
    }
    seen[p[i]] = true;
  }
  const bool track = needs_grad({&a});
  Tensor result = detail::make_output(xt::transpose(a.value(), p), track);
  if (track) {
    tape().record("permute", result, [a, p](const Array& grad) {
      std::vector<std::size_t> inverse(p.size());
      for (std::size_t i = 0; i < p.size(); ++i) inverse[p[i]] = i;
      accumulate_grad(a, Array(xt::transpose(grad, inverse)));
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
// y = x[..., begin:end, ...] on `axis`. Backward: the gradient in the sliced places of a zero
// array (elements outside the slice do not reach the output).
Tensor slice(const Tensor& a, int axis, std::size_t begin, std::size_t end) {
  const Shape in = a.shape();
  const std::size_t ax = detail::normalize_axis(axis, in.size(), "slice", in);
  if (begin > end || end > in[ax]) {
    throw std::invalid_argument("slice: range [" + std::to_string(begin) + ", " +
                                std::to_string(end) + ") is invalid for axis " +
                                std::to_string(axis) + " of shape " + shape_str(in));
  }
  const auto slices = range_on_axis(ax, begin, end);
  const bool track = needs_grad({&a});
  Tensor result = detail::make_output(xt::strided_view(a.value(), slices), track);
  if (track) {
    tape().record("slice", result, [a, in, slices](const Array& grad) {
      Array ga(in, Scalar(0));
      xt::strided_view(ga, slices) = grad;
      accumulate_grad(a, std::move(ga));
    });
  }
  return result;
}

// ---- concat ----------------------------------------------------------------------------------
// y = np.concatenate(tensors, axis): piece k fills y[..., offset_k : offset_k + n_k, ...].
// Backward: piece k receives that same range of the gradient.
Tensor concat(const std::vector<Tensor>& tensors, int axis) {
  if (tensors.empty()) throw std::invalid_argument("concat: needs at least one tensor");
  const Shape first = tensors[0].shape();
  const std::size_t ax = detail::normalize_axis(axis, first.size(), "concat", first);
  Shape out_shape = first;
  out_shape[ax] = 0;
  std::vector<std::size_t> offsets;  // where each piece starts along the axis
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
    offsets.push_back(out_shape[ax]);
    out_shape[ax] += s[ax];
  }
  Array out = detail::empty_array(out_shape);
  for (std::size_t k = 0; k < tensors.size(); ++k) {
    const std::size_t begin = offsets[k], end = begin + tensors[k].shape()[ax];
    xt::strided_view(out, range_on_axis(ax, begin, end)) = tensors[k].value();
  }
  const bool track = needs_grad(tensors);
  Tensor result = detail::make_output(std::move(out), track);
  if (track) {
    tape().record("concat", result, [tensors, offsets, ax](const Array& grad) {
      for (std::size_t k = 0; k < tensors.size(); ++k) {
        if (!tensors[k].requires_grad()) continue;
        const std::size_t begin = offsets[k], end = begin + tensors[k].shape()[ax];
        accumulate_grad(tensors[k], Array(xt::strided_view(grad, range_on_axis(ax, begin, end))));
      }
    });
  }
  return result;
}

}  // namespace GLASS_PRECISION
}  // namespace glass
