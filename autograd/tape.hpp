#pragma once
// The tape: the list of operations recorded during a forward pass, replayed backwards.

#include <functional>
#include <string>
#include <vector>

#include "autograd/tensor.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

/// The backward half of an op: receives d(loss)/d(output) and accumulates into its inputs'
/// grads (with accumulate_grad). It must not capture the output Tensor itself (the record
/// holds it), only the inputs and whatever forward values it needs.
using BackwardFn = std::function<void(const Array& grad_output)>;

/// One recorded op.
struct TapeRecord {
  std::string op;       ///< op name, e.g. "matmul"
  Tensor output;        ///< the op's result
  BackwardFn backward;  ///< how to send output.grad back to the inputs
};

/// The list of recorded ops, in forward order. One tape per thread (see `tape()`).
class Tape {
 public:
  /// Appends a record. Called by ops only when `is_recording()` and the output requires grad.
  void record(std::string op, const Tensor& output, BackwardFn backward);
  /// Seeds root.grad with ones (root must have one element) and runs every record in reverse
  /// order whose output has received a gradient. Does not clear the tape.
  void backward(const Tensor& root);
  /// Drops every record (and so every intermediate tensor only the tape kept alive).
  void clear();
  std::size_t size() const { return records_.size(); }
  const std::vector<TapeRecord>& records() const { return records_; }

 private:
  std::vector<TapeRecord> records_;
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
