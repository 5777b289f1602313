#pragma once
// The probe's attention at every save (inspect/probe_history.hpp), as an observer of the loop
// (train/observer.hpp): at each save it runs the model on the run's probe prompt and writes the
// save's probe_history.json — the previous save's records of this run, then this save's — before
// the manifest, which then covers it. It reads the model only: no weight, optimizer moment,
// batch position or random generator of the run changes (its sample has its own generator).

#include <iosfwd>
#include <optional>
#include <string>

#include "data/text_tokenizer.hpp"
#include "inspect/probe_history.hpp"
#include "nn/decoder.hpp"
#include "train/observer.hpp"

namespace glass {

/// Writes probe_history.json into every save of a run (rank 0: on_save is called there alone).
class ProbeRecorder : public TrainObserver {
 public:
  /// `probe`: the prompt (default_probe of the training text), read with windows of `window`
  /// tokens; `run_id` names the history and picks the earlier records of this run. Warnings go
  /// to `out`. The model and tokenizer must outlive the recorder. std::invalid_argument for an
  /// empty probe.
  ProbeRecorder(const Decoder& model, const TextTokenizer& tokenizer, const std::u32string& probe,
                std::size_t window, std::string run_id, std::ostream& out);
  /// Keeps the evaluation's losses for the record of the save that follows it.
  void on_eval(const LogRow& row) override;
  /// Measures this save's record and writes the run's history into the save.
  void on_save(const SaveSite& site) override;

 private:
  const Decoder& model_;
  const TextTokenizer& tokenizer_;
  ProbeTokens probe_;
  std::size_t window_;
  std::string run_id_;
  std::ostream& out_;
  std::optional<LogRow> last_eval_;
};

}  // namespace glass
