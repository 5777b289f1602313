#include "autograd/tape.hpp"

#include <stdexcept>

namespace glass {
inline namespace GLASS_PRECISION {

namespace {
thread_local Tape g_tape;
thread_local bool g_recording = true;
}  // namespace

Tape& tape() { return g_tape; }
bool is_recording() { return g_recording; }

NoGradGuard::NoGradGuard() : previous_(g_recording) { g_recording = false; }
NoGradGuard::~NoGradGuard() { g_recording = previous_; }

void Tape::record(std::string op, const Tensor& output, BackwardFn backward) {
  records_.push_back(TapeRecord{std::move(op), output, std::move(backward)});
  if (observer_) observer_->recorded(records_.back());
}

void Tape::run_backward(TapeRecord& record) {
  if (observer_) observer_->backward_begins(record);
  record.backward(record.output.grad());
  if (observer_) observer_->backward_ends(record);
}

void seed_root(const Tensor& root) {
  if (root.size() != 1) {
    throw std::invalid_argument("Tape::backward: root must have one element, got shape " +
                                shape_str(root.shape()));
  }
  Tensor r = root;
  r.grad().fill(Scalar(1));
}

void Tape::backward(const Tensor& root) {
  seed_root(root);
  for (auto it = records_.rbegin(); it != records_.rend(); ++it) {
    if (!it->output.has_grad()) continue;  // no gradient reached this op's output
    run_backward(*it);
  }
}

void Tape::clear() {
  records_.clear();
  if (observer_) observer_->cleared();
}

bool needs_grad(std::initializer_list<const Tensor*> inputs) {
  if (!g_recording) return false;
  for (const Tensor* t : inputs)
    if (t->defined() && t->requires_grad()) return true;
  return false;
}

bool needs_grad(const std::vector<Tensor>& inputs) {
  if (!g_recording) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

static void check_grad_shape(const Tensor& t, const Array& g) {
  if (g.dimension() != t.dim() ||
      !std::equal(g.shape().begin(), g.shape().end(), t.value().shape().begin())) {
    throw std::logic_error("accumulate_grad: gradient of shape " + shape_str(shape_of(g)) +
                           " for a tensor of shape " + shape_str(t.shape()) +
                           (t.name().empty() ? "" : " ('" + t.name() + "')"));
  }
}

void accumulate_grad(const Tensor& t, const Array& g) {
  if (!t.requires_grad()) return;
  check_grad_shape(t, g);
  Tensor h = t;
  if (!h.has_grad()) {
    h.impl()->grad = g;
    h.impl()->has_grad = true;
  } else {
    Array& acc = h.grad();
    Scalar* a = acc.data();
    const Scalar* b = g.data();
    const std::size_t n = acc.size();
    for (std::size_t i = 0; i < n; ++i) a[i] += b[i];
  }
}

void accumulate_grad(const Tensor& t, Array&& g) {
  if (!t.requires_grad()) return;
  check_grad_shape(t, g);
  Tensor h = t;
  if (!h.has_grad()) {
    h.impl()->grad = std::move(g);
    h.impl()->has_grad = true;
  } else {
    accumulate_grad(t, static_cast<const Array&>(g));
  }
}

}  // namespace GLASS_PRECISION
}  // namespace glass
