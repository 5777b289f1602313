// The loss page of `glass train` (DIR/loss.html). See cli/loss_page.hpp.

#include "cli/loss_page.hpp"

#include <filesystem>

#include "checkpoint/atomic_file.hpp"
#include "inspect/loss_plot.hpp"

namespace glass::cli {

void write_loss_page(const Trainer& trainer) {
  namespace fs = std::filesystem;
  const TrainOptions& o = trainer.options();
  LossCurve curve;
  curve.title = "GlassLLM training loss: " + fs::path(o.data_path).filename().string();
  for (const LogRow& r : trainer.log())
    curve.evals.push_back({static_cast<double>(r.step), r.train_loss, r.val_loss});
  for (const StepRow& r : trainer.steps())
    curve.steps.push_back({static_cast<double>(r.step), r.loss, r.lr});
  curve.vocab_size = trainer.vocab_size();
  // The Trainer holds its two tokenizers apart: a BPE run predicts tokens.
  curve.unit = trainer.bpe_tokenizer() != nullptr ? "token" : "character";
  write_file_atomic((fs::path(o.out_dir) / "loss.html").string(), loss_plot_html(curve));
}

}  // namespace glass::cli
