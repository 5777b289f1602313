#pragma once
// GlassLLM's own parallel loops: the row and elementwise kernels (SwiGLU's gate, the masked
// softmax, RMSNorm, RoPE, the elementwise ops, AdamW, ...) split their work over a small pool of
// threads. Matrix products are OpenBLAS's business (it has its own threads); the two never run
// at the same time, and the pool's workers sleep between loops instead of spinning, so they do
// not take the cores away from OpenBLAS's threads.

#include <cstddef>
#include <functional>

#include "autograd/scalar.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

/// Sets how many threads parallel_for uses (1 = every loop runs on the calling thread, the
/// default). `glass train --threads N` sets it together with OpenBLAS's thread count.
/// Throws std::invalid_argument for 0.
void set_num_threads(std::size_t n);
/// The current thread count of parallel_for.
std::size_t num_threads();

/// Calls body(begin, end) on chunks that together cover [0, n) exactly once. With T threads,
/// chunk i is [n*i/T, n*(i+1)/T): the calling thread runs chunk 0 and the pool's workers the
/// others, and parallel_for returns when all are done. Runs body(0, n) on the calling thread
/// when T == 1, when n < 2 * min_per_thread (too little work to be worth waking a thread), or
/// when called from inside another parallel_for. The body must not depend on where the chunks
/// start: kernels whose result could depend on it (a SIMD main loop and a scalar tail, a sum)
/// split their work into fixed blocks first and hand parallel_for the block count. An
/// exception thrown by the body is rethrown here (the first one, after every chunk finished).
void parallel_for(std::size_t n, std::size_t min_per_thread,
                  const std::function<void(std::size_t begin, std::size_t end)>& body);

}  // namespace GLASS_PRECISION
}  // namespace glass
