// The interpretability record of each save (train/trainer.hpp, interp/record.hpp): the head
// scores and the per-head ablation Δloss of a fixed validation probe, written into the save
// before its manifest, so the manifest covers it. It reads the model and the validation ids
// only: no weight, optimizer moment, batch position or random generator of the run changes.

#include "train/trainer.hpp"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "checkpoint/atomic_file.hpp"
#include "checkpoint/manifest.hpp"
#include "interp/record.hpp"

namespace glass {

namespace fs = std::filesystem;

namespace {

/// The records of `previous`'s interp_history.json (verified against its manifest) that belong
/// to run `run_id` and come before `step`; none when there is no such file. Throws on a file
/// that is there but bad.
std::vector<nlohmann::json> earlier_records(const std::string& previous, const std::string& run_id,
                                            long step) {
  std::vector<nlohmann::json> records;
  const fs::path path = fs::path(previous) / kInterpHistoryFile;
  if (!fs::exists(path)) return records;
  const std::string text = read_file(path.string());
  check_against_manifest(read_manifest(previous), previous, kInterpHistoryFile, text);
  const nlohmann::json doc = nlohmann::json::parse(text);
  if (doc.value("format", std::string()) != kInterpHistoryFormat ||
      doc.value("run_id", std::string()) != run_id || !doc.contains("records") ||
      !doc["records"].is_array())
    return records;  // another run's (or an unknown) history: this run starts its own
  for (const nlohmann::json& r : doc["records"]) {
    parse_interp_record(r.dump());  // each one as interp.json would be read
    if (r["step"].get<long>() < step) records.push_back(r);
  }
  return records;
}

}  // namespace

std::optional<std::string> Trainer::measure_interp_record() {
  // The probe: the first tokens of the validation split, the same at every save of the run.
  // Under mpirun each rank measures the ablations of its share of the heads; the sum of the
  // shares is the whole table (the others' entries are 0), the same bits as one process.
  const Communicator& comm = options_.comm;
  const ProbeSpec spec;
  std::optional<InterpRecord> record;
  std::string problem;
  try {
    const InterpProbe probe =
        make_probe(validation_ids(spec.tokens + 1), options_.context, model_->config(), spec);
    record = record_interp(
        *model_, probe, step_,
        {static_cast<std::size_t>(comm.rank()), static_cast<std::size_t>(comm.size())});
  } catch (const std::invalid_argument& e) {
    problem = e.what();
  }
  // A measurement that cannot be made (a validation split too short, a non-finite score)
  // leaves this save without a record; readers show nothing for it. Every rank agrees.
  if (comm.any(!record)) {
    out_ << "warning: no interpretability record in this save: "
         << (problem.empty() ? "a head's ablation was not finite on another process" : problem)
         << "\n";
    return std::nullopt;
  }
  if (comm.size() > 1) {
    Array& table = record->ablation_delta_loss;
    std::vector<double> shares(table.begin(), table.end());
    comm.all_reduce_sum(shares);
    std::copy(shares.begin(), shares.end(), table.begin());
  }
  return interp_record_json(*record);
}

void Trainer::write_interp_record(const std::string& step_dir, const std::string& previous,
                                  const std::string& record_text) {
  std::vector<nlohmann::json> records;
  try {
    records = earlier_records(previous, run_id_, step_);
  } catch (const std::exception& e) {
    out_ << "warning: the interpretability history of the previous save is unreadable (" << e.what()
         << "); it starts again at step " << step_ << "\n";
    records.clear();
  }
  records.push_back(nlohmann::json::parse(record_text));
  const nlohmann::json history = {
      {"format", kInterpHistoryFormat}, {"run_id", run_id_}, {"records", records}};
  write_file_atomic((fs::path(step_dir) / kInterpFile).string(), record_text);
  write_file_atomic((fs::path(step_dir) / kInterpHistoryFile).string(), history.dump() + "\n");
}

}  // namespace glass
