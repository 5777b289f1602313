#include "autograd/tensor.hpp"

#include <sstream>
#include <stdexcept>

#include "autograd/backward_release.hpp"
#include "autograd/tape.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

std::string shape_str(const Shape& shape) {
  std::ostringstream os;
  os << "(";
  for (std::size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  if (shape.size() == 1) os << ",";
  os << ")";
  return os.str();
}

Tensor::Tensor(Array value, bool requires_grad, std::string name)
    : impl_(std::make_shared<TensorImpl>()) {
  impl_->value = std::move(value);
  impl_->requires_grad = requires_grad;
  impl_->name = std::move(name);
}

Tensor Tensor::zeros(const Shape& shape, bool requires_grad) {
  return Tensor(Array(shape, Scalar(0)), requires_grad);
}

Tensor Tensor::ones(const Shape& shape, bool requires_grad) {
  return Tensor(Array(shape, Scalar(1)), requires_grad);
}

Tensor Tensor::full(const Shape& shape, Scalar value, bool requires_grad) {
  return Tensor(Array(shape, value), requires_grad);
}

Tensor Tensor::randn(const Shape& shape, Scalar std, Rng& rng, bool requires_grad) {
  Array a(shape);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (auto& x : a) x = static_cast<Scalar>(normal(rng) * std);
  return Tensor(std::move(a), requires_grad);
}

Tensor Tensor::from_vector(const std::vector<Scalar>& values, const Shape& shape,
                           bool requires_grad) {
  std::size_t n = 1;
  for (auto s : shape) n *= s;
  if (n != values.size()) {
    throw std::invalid_argument("Tensor::from_vector: " + std::to_string(values.size()) +
                                " values do not fill shape " + shape_str(shape));
  }
  Array a(shape);
  std::copy(values.begin(), values.end(), a.begin());
  return Tensor(std::move(a), requires_grad);
}

Tensor Tensor::scalar(Scalar value, bool requires_grad) {
  Array a(Shape{}, value);
  return Tensor(std::move(a), requires_grad);
}

static void check_defined(const std::shared_ptr<TensorImpl>& impl) {
  if (!impl) throw std::logic_error("use of an undefined Tensor");
}

const Array& Tensor::value() const {
  check_defined(impl_);
  return impl_->value;
}

Array& Tensor::value() {
  check_defined(impl_);
  return impl_->value;
}

Array& Tensor::grad() {
  check_defined(impl_);
  if (!impl_->has_grad) {
    impl_->grad = Array(impl_->value.shape(), Scalar(0));
    impl_->has_grad = true;
  }
  return impl_->grad;
}

const Array& Tensor::grad() const { return const_cast<Tensor*>(this)->grad(); }

bool Tensor::has_grad() const {
  check_defined(impl_);
  return impl_->has_grad;
}

void Tensor::zero_grad() {
  check_defined(impl_);
  if (has_grad()) {
    std::fill(impl_->grad.begin(), impl_->grad.end(), Scalar(0));
  } else {
    impl_->grad = Array(impl_->value.shape(), Scalar(0));
    impl_->has_grad = true;
  }
}

bool Tensor::requires_grad() const {
  check_defined(impl_);
  return impl_->requires_grad;
}

void Tensor::set_requires_grad(bool requires_grad) {
  check_defined(impl_);
  impl_->requires_grad = requires_grad;
}

const std::string& Tensor::name() const {
  check_defined(impl_);
  return impl_->name;
}

void Tensor::set_name(std::string name) {
  check_defined(impl_);
  impl_->name = std::move(name);
}

Shape Tensor::shape() const { return shape_of(value()); }
std::size_t Tensor::dim() const { return value().dimension(); }
std::size_t Tensor::size() const { return value().size(); }

Scalar Tensor::item() const {
  if (size() != 1) {
    throw std::invalid_argument("Tensor::item: tensor of shape " + shape_str(shape()) + " has " +
                                std::to_string(size()) + " elements, expected 1");
  }
  return *value().data();
}

void Tensor::backward() const {
  if (size() != 1) {
    throw std::invalid_argument(
        "Tensor::backward: needs a one-element (scalar) tensor, got shape " + shape_str(shape()));
  }
  if (!requires_grad()) {
    throw std::invalid_argument(
        "Tensor::backward: this tensor does not require grad (no input of the computation "
        "required grad, or it was computed under NoGradGuard)");
  }
  backward_and_release(tape(), *this);
}

Tensor Tensor::detach() const { return Tensor(value(), false, name()); }

}  // namespace GLASS_PRECISION
}  // namespace glass
