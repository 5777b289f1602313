#pragma once
// Learning-rate schedule: linear warmup then cosine decay, exactly as nanoGPT's get_lr.

namespace glass {

/// nanoGPT's warmup + cosine schedule (Loshchilov & Hutter 2017, SGDR, without restarts).
///
///   it <  warmup:              lr(it) = lr_max * (it + 1) / (warmup + 1)
///   warmup <= it < decay_iters: ratio = (it - warmup) / (decay_iters - warmup)
///                              lr(it) = min_lr + 0.5 * (1 + cos(pi * ratio)) * (lr_max - min_lr)
///   it >= decay_iters:         lr(it) = min_lr
///
/// `it` is the 0-based optimizer step about to be taken. decay_iters is nanoGPT's
/// lr_decay_iters (the horizon of the cosine; the CLI defaults it to --iters).
struct LrSchedule {
  double lr_max = 1e-3;     ///< peak learning rate, reached at it = warmup
  double min_lr = 1e-4;     ///< floor, reached at it = decay_iters (nanoGPT: lr_max / 10)
  long warmup = 100;        ///< number of warmup steps
  long decay_iters = 2000;  ///< step at which the cosine reaches min_lr

  /// The learning rate for step `it` (>= 0).
  double at(long it) const;
};

}  // namespace glass
