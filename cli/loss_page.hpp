#pragma once
// The loss page of `glass train`: DIR/loss.html, written when a run ends (through the trainer's
// end-of-run hook, TrainOptions::on_run_end). The trainer itself writes no page.

#include "train/trainer.hpp"

namespace glass::cli {

/// Writes out_dir/loss.html of `trainer`'s run atomically (inspect/loss_plot.hpp): the curve of
/// the whole run, including before a resume — its evaluations, the batch loss and learning rate
/// of every step, and ln V. Throws FileError when the file cannot be written.
void write_loss_page(const Trainer& trainer);

}  // namespace glass::cli
