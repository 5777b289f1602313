// The probe's attention at every save. See train/probe_recorder.hpp.

#include "train/probe_recorder.hpp"

#include <filesystem>
#include <ostream>

#include "checkpoint/atomic_file.hpp"
#include "checkpoint/checkpoint.hpp"
#include "checkpoint/manifest.hpp"

namespace glass {

namespace fs = std::filesystem;

ProbeRecorder::ProbeRecorder(const Decoder& model, const TextTokenizer& tokenizer,
                             const std::u32string& probe, std::size_t window, std::string run_id,
                             std::ostream& out)
    : model_(model),
      tokenizer_(tokenizer),
      probe_(probe_tokens(tokenizer, probe, window)),
      window_(window),
      run_id_(std::move(run_id)),
      out_(out) {}

void ProbeRecorder::on_eval(const LogRow& row) { last_eval_ = row; }

void ProbeRecorder::on_save(const SaveSite& site) {
  ProbeHistory history;
  // The records of this run before this step, from the previous save (verified like every file
  // of it: its manifest, its run, the model's shape); none for the first save, or another run's.
  if (site.previous != site.step_dir) {
    try {
      std::optional<ProbeHistory> earlier;
      if (fs::exists(fs::path(site.previous) / kProbeHistoryFile) &&
          save_run_id(site.previous) == run_id_)
        earlier = read_probe_history(site.previous, model_.config());
      if (earlier && earlier->probe.tokens == probe_.tokens) history = std::move(*earlier);
    } catch (const std::exception& e) {
      out_ << "warning: the probe's attention history of the previous save is unreadable ("
           << e.what() << "); it starts again at step " << site.step << "\n";
    }
  }
  history.run_id = run_id_;
  history.probe = probe_;
  history.n_layers = model_.config().n_layers;
  history.n_heads = model_.config().n_heads;
  ProbeRecord record = look_at_probe(model_, tokenizer_, probe_, window_, site.step);
  if (last_eval_ && last_eval_->step == site.step) {
    record.train_loss = last_eval_->train_loss;
    record.val_loss = last_eval_->val_loss;
  }
  append_probe_record(history, std::move(record));
  write_file_atomic((fs::path(site.step_dir) / kProbeHistoryFile).string(),
                    probe_history_json(history));
}

}  // namespace glass
