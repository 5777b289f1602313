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

namespace {
double ms_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}
}  // namespace

void Tape::record(std::string op, const Tensor& output, BackwardFn backward) {
  if (profiling_) {
    const auto now = std::chrono::steady_clock::now();
    OpProfile& p = profile_[op];
    p.forward_ms += ms_between(last_event_, now);
    ++p.forward_calls;
    records_.push_back(TapeRecord{std::move(op), output, std::move(backward)});
    last_event_ = std::chrono::steady_clock::now();  // the bookkeeping above is not charged
    return;
  }
  records_.push_back(TapeRecord{std::move(op), output, std::move(backward)});
}

void Tape::set_profiling(bool on) {
  profiling_ = on;
  last_event_ = std::chrono::steady_clock::now();
}

namespace {
void seed_root(const Tensor& root) {
  if (root.size() != 1) {
    throw std::invalid_argument("Tape::backward: root must have one element, got shape " +
                                shape_str(root.shape()));
  }
  Tensor r = root;
  r.grad().fill(Scalar(1));
}
}  // namespace

// Runs one record's backward closure (timed when profiling).
void Tape::run(TapeRecord& record) {
  if (!profiling_) {
    record.backward(record.output.grad());
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  record.backward(record.output.grad());
  OpProfile& p = profile_[record.op];
  p.backward_ms += ms_between(start, std::chrono::steady_clock::now());
  ++p.backward_calls;
}

void Tape::backward(const Tensor& root) {
  seed_root(root);
  for (auto it = records_.rbegin(); it != records_.rend(); ++it) {
    if (!it->output.has_grad()) continue;  // no gradient reached this op's output
    run(*it);
  }
}

void Tape::backward_and_clear(const Tensor& root) {
  seed_root(root);
  // Records later on the tape hold the earlier outputs they used; walking backwards and dropping
  // each record once it has run leaves an output held by its own record only, unless the caller
  // (or a tensor that outlives the step) holds it too: use_count() == 1 means nobody can read
  // its gradient after this closure.
  struct ClearAtExit {  // also when a closure throws: the tape ends empty either way
    Tape& tape;
    ~ClearAtExit() {
      tape.grad_disposable_ = false;
      tape.clear();
    }
  } clear_at_exit{*this};
  for (auto it = records_.rbegin(); it != records_.rend(); ++it) {
    if (it->output.has_grad()) {
      grad_disposable_ = it->output.use_count() == 1;
      run(*it);
      grad_disposable_ = false;
    }
    *it = TapeRecord{};  // frees the closure's saved inputs, and the output if only we held it
  }
}

void Tape::clear() {
  records_.clear();
  if (profiling_) last_event_ = std::chrono::steady_clock::now();
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
  if (g.dimension() != t.dim() || !std::equal(g.shape().begin(), g.shape().end(), t.value().shape().begin())) {
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
