#pragma once
// The tape: the list of operations recorded during a forward pass, replayed backwards.

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "autograd/tensor.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

/// The backward half of an op: receives d(loss)/d(output) and accumulates into its inputs'
/// grads (with accumulate_grad). It must not capture the output Tensor itself (the record
/// holds it), only the inputs and whatever forward values it needs. It may take its argument
/// as `const Array&` (every reference op does); one that takes `Array&` may move the buffer out,
/// but only when grad_disposable() (autograd/backward_release.hpp) says nothing can read that
/// gradient afterwards (the fast kernels do, through autograd/kernels/grad_buffers.hpp).
using BackwardFn = std::function<void(Array& grad_output)>;

/// One recorded op.
struct TapeRecord {
  std::string op;       ///< op name, e.g. "matmul"
  Tensor output;        ///< the op's result
  BackwardFn backward;  ///< how to send output.grad back to the inputs
};

/// Watches a tape, if one is set (Tape::set_observer): told of every record, every backward
/// closure it runs and every clear. Nothing in the tape depends on it; the op profiler
/// (autograd/profiler.hpp) is one.
class TapeObserver {
 public:
  virtual ~TapeObserver() = default;
  /// An op was just appended (its forward computation has run).
  virtual void recorded(const TapeRecord& record) = 0;
  /// Around one backward closure.
  virtual void backward_begins(const TapeRecord& record) = 0;
  virtual void backward_ends(const TapeRecord& record) = 0;
  /// The tape was emptied.
  virtual void cleared() = 0;
};

/// The list of recorded ops, in forward order. One tape per thread (see `tape()`).
class Tape {
 public:
  /// Appends a record. Called by ops only when `is_recording()` and the output requires grad.
  void record(std::string op, const Tensor& output, BackwardFn backward);
  /// Seeds root.grad with ones (root must have one element; std::invalid_argument otherwise) and
  /// runs every record in reverse order whose output has received a gradient. Does not clear
  /// the tape: backward can run again, and every intermediate tensor keeps its gradient until
  /// clear(). (Tensor::backward() runs backward_and_release instead, which frees memory on the
  /// way: autograd/backward_release.hpp.)
  void backward(const Tensor& root);
  /// Runs one record's backward closure on its output's gradient (telling the observer).
  void run_backward(TapeRecord& record);
  /// Drops every record (and so every intermediate tensor only the tape kept alive).
  void clear();
  /// Hands the records over to the caller and leaves the tape empty (without clear()'s notice).
  std::vector<TapeRecord> take_records() { return std::exchange(records_, {}); }
  std::size_t size() const { return records_.size(); }
  const std::vector<TapeRecord>& records() const { return records_; }
  /// Sets (or, with nullptr, removes) the observer; the tape does not own it.
  void set_observer(TapeObserver* observer) { observer_ = observer; }
  TapeObserver* observer() const { return observer_; }

 private:
  std::vector<TapeRecord> records_;
  TapeObserver* observer_ = nullptr;
};

/// The current thread's tape.
Tape& tape();
/// True unless a NoGradGuard is active on this thread.
bool is_recording();

/// While alive, ops record nothing (use for evaluation and generation), like torch.no_grad().
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// ---- helpers for writing ops ------------------------------------------------------------

/// True when recording is on and at least one input requires grad: the op's output must
/// then require grad and the op must call tape().record(...).
bool needs_grad(std::initializer_list<const Tensor*> inputs);
bool needs_grad(const std::vector<Tensor>& inputs);

/// Sets root.grad to ones, the start of a backward pass: d(root)/d(root) = 1. Throws
/// std::invalid_argument naming the shape unless root has exactly one element.
void seed_root(const Tensor& root);

/// grad(t) += g, if t requires grad (allocating the gradient on first use). `g` must have
/// t's shape; throws std::logic_error naming the shapes otherwise.
void accumulate_grad(const Tensor& t, const Array& g);
void accumulate_grad(const Tensor& t, Array&& g);

}  // namespace GLASS_PRECISION
}  // namespace glass
