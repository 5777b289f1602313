#pragma once
// A training step on several cores: data parallelism over threads inside one process.

#include <cstddef>
#include <memory>
#include <vector>

#include "nn/decoder.hpp"

namespace glass {

/// How many of `targets` are counted by cross_entropy: those not equal to `ignore_index`.
std::size_t counted_targets(const Ids& targets, int ignore_index = -1);

/// Forward, cross-entropy and backward of one batch on `threads` threads, as data parallelism
/// (the threads' counterpart of distributed data-parallel training, e.g. PyTorch's DDP): the
/// batch's B rows are split into min(threads, B) parts of consecutive rows, as equal in size as
/// possible. Thread i runs part i on replica i of the model (replica 0 is the model itself; the
/// others are copies owned here, whose weights are copied from the model at the start of every
/// call), recording on its own tape (the tape is per thread). Part i's mean loss is weighted by
/// its share of the counted targets, N_i / N (those not equal to cross_entropy's ignore index -1;
/// without ignored targets B_i / B), so the parts add up to the mean over all N counted targets
/// however the ignored ones fall among the parts (a chat fine-tune's loss mask); the
/// replicas' gradients are then summed into the model's. The loss and the gradients are those
/// of one thread to rounding, and the same bits for the same thread count on every run (each
/// part and the sum are computed in a fixed order).
///
/// Every thread runs the whole model on its part, small ops included, so all the work of a
/// step is shared out, not only the matrix products. While a DataParallel with more than one
/// thread exists, the BLAS library runs single-threaded (set_blas_threads(1), restored to
/// num_threads() when the last such object is destroyed), so that its own thread pool never
/// competes with these threads. With one thread everything runs in the calling thread on the model itself, exactly
/// as forward + backward without this class.
class DataParallel {
 public:
  /// `model` must outlive this object; threads >= 1 (0 is taken as 1).
  DataParallel(Decoder& model, std::size_t threads);
  ~DataParallel();
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  /// Zeroes the model's gradients, then computes the mean cross-entropy of the model's logits
  /// for x against y (both (B, T); targets -1 are ignored, and a batch of none counted has loss
  /// 0 and zero gradients) and, when it is finite, its gradients into the model's
  /// parameters. Returns the loss. A non-finite loss is returned with the model's gradients left
  /// at zero (a part whose own loss is non-finite runs no backward and clears its tape; the
  /// finite parts' gradients are dropped). Errors of the forward or backward pass (e.g.
  /// std::invalid_argument for bad ids) are rethrown here, after every thread has stopped.
  double loss_and_grad(const Ids& x, const Ids& y);
  /// The same loss without gradients (evaluation): no tape is recorded in any thread.
  double loss(const Ids& x, const Ids& y);
  std::size_t threads() const { return threads_; }

 private:
  double run(const Ids& x, const Ids& y, bool with_grad);
  Decoder& model_;
  std::size_t threads_;
  std::vector<std::unique_ptr<Decoder>> replicas_;  // replicas 1 .. threads-1
};

}  // namespace glass
