// The interpretability record of each save. See train/interp_recorder.hpp.

#include "train/interp_recorder.hpp"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "checkpoint/atomic_file.hpp"
#include "checkpoint/manifest.hpp"
#include "checkpoint/run_dir.hpp"
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

InterpRecorder::InterpRecorder(const Decoder& model, std::vector<std::int32_t> probe_ids,
                               std::size_t context, Communicator comm, std::string run_id,
                               std::ostream& out)
    : model_(model),
      probe_ids_(std::move(probe_ids)),
      context_(context),
      comm_(comm),
      run_id_(std::move(run_id)),
      out_(out) {}

void InterpRecorder::before_save(long step) {
  // The probe: the first tokens of the validation split, the same at every save of the run.
  // Under mpirun each rank measures the ablations of its share of the heads; the sum of the
  // shares is the whole table (the others' entries are 0), the same bits as one process.
  record_.reset();
  const ProbeSpec spec;
  std::optional<InterpRecord> record;
  std::string problem;
  try {
    const InterpProbe probe = make_probe(probe_ids_, context_, model_.config(), spec);
    record = record_interp(
        model_, probe, step,
        {static_cast<std::size_t>(comm_.rank()), static_cast<std::size_t>(comm_.size())});
  } catch (const std::invalid_argument& e) {
    problem = e.what();
  }
  // A measurement that cannot be made (a validation split too short, a non-finite score)
  // leaves this save without a record; readers show nothing for it. Every rank agrees.
  if (comm_.any(!record)) {
    out_ << "warning: no interpretability record in this save: "
         << (problem.empty() ? "a head's ablation was not finite on another process" : problem)
         << "\n";
    return;
  }
  if (comm_.size() > 1) {
    Array& table = record->ablation_delta_loss;
    std::vector<double> shares(table.begin(), table.end());
    comm_.all_reduce_sum(shares);
    std::copy(shares.begin(), shares.end(), table.begin());
  }
  record_ = interp_record_json(*record);
}

void InterpRecorder::on_save(const SaveSite& site) {
  if (!record_) return;
  std::vector<nlohmann::json> records;
  try {
    records = earlier_records(site.previous, run_id_, site.step);
  } catch (const std::exception& e) {
    out_ << "warning: the interpretability history of the previous save is unreadable (" << e.what()
         << "); it starts again at step " << site.step << "\n";
    records.clear();
  }
  records.push_back(nlohmann::json::parse(*record_));
  const nlohmann::json history = {
      {"format", kInterpHistoryFormat}, {"run_id", run_id_}, {"records", records}};
  write_file_atomic((fs::path(site.step_dir) / kInterpFile).string(), *record_);
  write_file_atomic((fs::path(site.step_dir) / kInterpHistoryFile).string(), history.dump() + "\n");
}

}  // namespace glass
