#pragma once
// Tensor: a value, its gradient, and whether the tape should track it.

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <xtensor/xarray.hpp>

#include "autograd/scalar.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

/// Dense N-d array of Scalar, row-major (C order). Values and gradients are stored as this.
using Array = xt::xarray<Scalar, xt::layout_type::row_major>;
/// Token ids, e.g. shape (B, T). Ids are 0 .. vocab_size-1.
using Ids = xt::xarray<std::int32_t, xt::layout_type::row_major>;
/// Boolean mask; true marks a forbidden (masked) place, as in PyTorch's masked_fill.
using Mask = xt::xarray<bool, xt::layout_type::row_major>;
/// A shape: one extent per axis.
using Shape = std::vector<std::size_t>;
/// The random generator used by every seeded initializer (reproducible for a given seed).
using Rng = std::mt19937_64;

/// Shape as text, e.g. "(2, 3, 4)"; used in error messages.
std::string shape_str(const Shape& shape);
/// Shape of an array as a Shape.
template <class A>
Shape shape_of(const A& a) {
  return Shape(a.shape().begin(), a.shape().end());
}

/// The storage behind a Tensor handle. Shared by every copy of the handle.
struct TensorImpl {
  Array value;                 ///< the forward value
  Array grad;                  ///< d(loss)/d(value); meaningful only when has_grad
  bool has_grad = false;       ///< set once a gradient was accumulated or grad() allocated it
  bool requires_grad = false;  ///< whether ops on this tensor are recorded on the tape
  std::string name;            ///< optional, for printing (e.g. "layers.0.attention.wq.weight")
};

/// A handle to a value and its gradient (like torch.Tensor). Copies share the same storage:
/// `Tensor b = a;` makes b another name for a. Use `detach()` for a new tensor (a copy).
///
/// A default-constructed Tensor is "undefined" (`defined() == false`).
class Tensor {
 public:
  Tensor() = default;
  /// Wraps `value`. `requires_grad = true` makes it a leaf whose gradient backward() fills.
  explicit Tensor(Array value, bool requires_grad = false, std::string name = "");

  /// Factories. Shapes are explicit; `randn` draws N(0, std^2) from `rng` (reproducible).
  static Tensor zeros(const Shape& shape, bool requires_grad = false);
  static Tensor ones(const Shape& shape, bool requires_grad = false);
  static Tensor full(const Shape& shape, Scalar value, bool requires_grad = false);
  static Tensor randn(const Shape& shape, Scalar std, Rng& rng, bool requires_grad = false);
  /// From a flat list of values in row-major order; throws std::invalid_argument when the
  /// number of values does not match the shape.
  static Tensor from_vector(const std::vector<Scalar>& values, const Shape& shape,
                            bool requires_grad = false);
  /// A 0-d tensor holding one number.
  static Tensor scalar(Scalar value, bool requires_grad = false);

  /// The accessors below throw std::logic_error on an undefined tensor.
  bool defined() const { return impl_ != nullptr; }
  /// The value; writing through it changes every copy of this handle (no tape record).
  const Array& value() const;
  Array& value();
  /// The gradient, allocated as zeros of the value's shape on first access.
  Array& grad();
  const Array& grad() const;
  /// True once a gradient has been accumulated (or grad() was accessed).
  bool has_grad() const;
  /// Sets the gradient to zeros (keeps the allocation when there is one).
  void zero_grad();

  /// Whether backward() computes a gradient for this tensor.
  bool requires_grad() const;
  void set_requires_grad(bool requires_grad);
  /// A label for messages and tracing, e.g. "layers.0.attention.wq.weight" ("" by default).
  const std::string& name() const;
  void set_name(std::string name);

  Shape shape() const;       ///< the value's shape
  std::size_t dim() const;   ///< number of axes
  std::size_t size() const;  ///< number of elements
  /// The single value of a one-element tensor; throws std::invalid_argument otherwise.
  Scalar item() const;

  /// Reverse-mode autodiff from this scalar: sets d(this)/d(this) = 1, walks the tape
  /// backwards accumulating (+=) into every tracked tensor's grad, then clears the tape
  /// (backward_and_release, autograd/backward_release.hpp: memory is freed during the walk). If an op's backward throws,
  /// the tape is cleared all the same; gradients accumulated before the throw stay.
  /// Throws std::invalid_argument when this tensor has more than one element or does not
  /// require grad.
  void backward() const;

  /// A new leaf holding the same value (shared storage of the value is NOT kept: it is copied),
  /// not tracked by the tape.
  Tensor detach() const;

  /// Identity of the storage (two handles are the same tensor iff their impls are equal).
  TensorImpl* impl() const { return impl_.get(); }
  /// How many handles (including the tape's records and backward closures) share this
  /// storage; 0 for an undefined tensor. backward_and_release reads it (1 = only the tape
  /// holds an op's output); also for tests and debugging (e.g. "clearing the tape frees the
  /// intermediates").
  long use_count() const { return impl_.use_count(); }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

}  // namespace GLASS_PRECISION
}  // namespace glass
