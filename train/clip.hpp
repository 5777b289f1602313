#pragma once
// Gradient clipping by the global norm (Pascanu et al. 2013), as torch.nn.utils.clip_grad_norm_.

#include <vector>

#include "autograd/tensor.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

/// The L2 norm of all gradients taken together: sqrt(sum over parameters of sum(g^2)),
/// accumulated in double (over SIMD partial sums of 1024 squares; blocks whose float sum would
/// overflow or vanish are summed in double directly). Parameters without a gradient count as zero.
/// The parameters are shared out among num_threads() threads; the sums are added in parameter
/// order, so the result is the same for any thread count.
double global_grad_norm(const std::vector<Tensor>& params);

/// Scales every gradient by min(1, max_norm / (norm + 1e-6)) where norm = global_grad_norm,
/// as PyTorch does, and returns the norm measured BEFORE clipping. max_norm <= 0 turns clipping
/// off (the norm is still returned). A non-finite norm (NaN/inf) is returned without touching
/// the gradients, so the caller can stop with a clear message.
double clip_grad_norm(const std::vector<Tensor>& params, double max_norm);

}  // namespace GLASS_PRECISION
}  // namespace glass
