#pragma once
// The tape: the list of operations recorded during a forward pass, replayed backwards.

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "autograd/tensor.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

/// The backward half of an op: receives d(loss)/d(output) and accumulates into its inputs'
/// grads (with accumulate_grad). It must not capture the output Tensor itself (the record
/// holds it), only the inputs and whatever forward values it needs. It may take its argument
/// as `const Array&` (every reference op does); one that takes `Array&` may move the buffer out,
/// but only when grad_disposable() says nothing can read that gradient afterwards (the fast
/// kernels do, through autograd/kernels/grad_buffers.hpp).
using BackwardFn = std::function<void(Array& grad_output)>;

/// One recorded op.
struct TapeRecord {
  std::string op;       ///< op name, e.g. "matmul"
  Tensor output;        ///< the op's result
  BackwardFn backward;  ///< how to send output.grad back to the inputs
};

/// Time spent by one kind of op (one op name) while profiling was on; see Tape::set_profiling.
struct OpProfile {
  double forward_ms = 0;            ///< forward time charged to this op (see set_profiling)
  std::size_t forward_calls = 0;    ///< how many times it was recorded
  double backward_ms = 0;           ///< time inside its backward closures
  std::size_t backward_calls = 0;   ///< how many backward closures ran
};

/// The list of recorded ops, in forward order. One tape per thread (see `tape()`).
class Tape {
 public:
  /// Appends a record. Called by ops only when `is_recording()` and the output requires grad.
  void record(std::string op, const Tensor& output, BackwardFn backward);
  /// Seeds root.grad with ones (root must have one element) and runs every record in reverse
  /// order whose output has received a gradient. Does not clear the tape: backward can run
  /// again, and every intermediate tensor keeps its gradient until clear().
  void backward(const Tensor& root);
  /// backward(root) followed by clear(), freeing memory as it goes (what Tensor::backward()
  /// calls). Each record is dropped as soon as its backward has run, together with the inputs
  /// its closure saved; an output that no handle outside the tape holds goes with it (value
  /// and gradient), and its gradient buffer may be reused by the closure for an input's
  /// gradient (see grad_disposable). Like PyTorch's default `retain_graph=False`. Every gradient
  /// the caller can still reach (parameters, leaves and intermediates it holds a handle to) is
  /// the same as after backward(root) and clear(): freed memory is handed to the next
  /// allocations while it is still in the cache, which makes a training step ~10 % faster.
  void backward_and_clear(const Tensor& root);
  /// True while a backward closure runs under backward_and_clear() whose output nobody else
  /// holds: its gradient is about to be freed, so the closure may take the buffer over.
  bool grad_disposable() const { return grad_disposable_; }
  /// Drops every record (and so every intermediate tensor only the tape kept alive).
  void clear();
  std::size_t size() const { return records_.size(); }
  const std::vector<TapeRecord>& records() const { return records_; }

  /// Where does a training step spend its time? With profiling on, every record() charges the
  /// wall time since the previous record (or since clear() / set_profiling(true)) to the op
  /// being recorded: its forward computation, plus any unrecorded work that ran in between
  /// (an op that needs no gradient, the caller's own code). backward() times each backward
  /// closure exactly. Off by default; the cost when on is two clock reads per op.
  void set_profiling(bool on);
  bool profiling() const { return profiling_; }
  /// Accumulated times per op name since the last reset_profile().
  const std::map<std::string, OpProfile>& profile() const { return profile_; }
  void reset_profile() { profile_.clear(); }

 private:
  void run(TapeRecord& record);
  std::vector<TapeRecord> records_;
  bool grad_disposable_ = false;
  bool profiling_ = false;
  std::map<std::string, OpProfile> profile_;
  std::chrono::steady_clock::time_point last_event_;
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

/// grad(t) += g, if t requires grad (allocating the gradient on first use). `g` must have
/// t's shape; throws std::logic_error naming the shapes otherwise.
void accumulate_grad(const Tensor& t, const Array& g);
void accumulate_grad(const Tensor& t, Array&& g);

}  // namespace GLASS_PRECISION
}  // namespace glass
