#pragma once
// Backward with memory release: what Tensor::backward() runs. The tape itself (tape.hpp) only
// records and replays; this walk also frees each record as soon as its backward closure has run,
// and tells the closures whose output nobody else holds that they may take its gradient buffer.

#include "autograd/tape.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

/// tape.backward(root) followed by tape.clear(), freeing memory as it goes. Each record is
/// dropped as soon as its backward has run, together with the inputs its closure saved; an
/// output that no handle outside the tape holds goes with it (value and gradient), and its
/// gradient buffer may be reused by the closure for an input's gradient (see grad_disposable).
/// Like PyTorch's default `retain_graph=False`. Every gradient the caller can still reach
/// (parameters, leaves and intermediates it holds a handle to) is the same as after
/// backward(root) and clear(): freed memory is handed to the next allocations while it is still
/// in the cache, which makes a training step ~10 % faster. The tape ends empty, also when a
/// closure throws.
void backward_and_release(Tape& tape, const Tensor& root);

/// True while a backward closure runs under backward_and_release() whose output nobody else
/// holds: its gradient is about to be freed, so the closure may take the buffer over
/// (autograd/kernels/grad_buffers.hpp, take_grad). False everywhere else.
bool grad_disposable();

}  // namespace GLASS_PRECISION
}  // namespace glass
