#pragma once
// The interpretability record of each save (interp/record.hpp), as an observer of the loop
// (train/observer.hpp): the head scores and the per-head ablation Δloss of a fixed validation
// probe, measured before each save and written into it before its manifest, so the manifest
// covers it. It reads the model and the validation ids only: no weight, optimizer moment, batch
// position or random generator of the run changes.

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "nn/decoder.hpp"
#include "train/distributed.hpp"
#include "train/observer.hpp"

namespace glass {

/// Writes interp.json and interp_history.json into every save of a run.
class InterpRecorder : public TrainObserver {
 public:
  /// `probe_ids`: the first ProbeSpec::tokens + 1 ids of the validation split (the probe, the
  /// same at every save),
  /// read with windows of `context`; `run_id` picks the history records of this run; every
  /// process of `comm` measures its share of the heads. Warnings go to `out`. The model must
  /// outlive the recorder.
  InterpRecorder(const Decoder& model, std::vector<std::int32_t> probe_ids, std::size_t context,
                 Communicator comm, std::string run_id, std::ostream& out);
  /// Measures the record of `step` (every process together); none, with a warning, when it
  /// cannot be measured.
  void before_save(long step) override;
  /// Writes the record measured and the run's history into the save.
  void on_save(const SaveSite& site) override;

 private:
  const Decoder& model_;
  std::vector<std::int32_t> probe_ids_;
  std::size_t context_;
  Communicator comm_;
  std::string run_id_;
  std::ostream& out_;
  std::optional<std::string> record_;  // interp.json of the save being written
};

}  // namespace glass
