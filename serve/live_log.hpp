#pragma once
// The logs a run directory holds while a trainer writes into it, read as they grow:
//   RUN/steps.csv   one line per optimizer step, appended and flushed by the trainer:
//                   step,loss,lr,grad_norm,tokens_per_s,elapsed_s
//   SAVE/log.csv    the evaluations of the run up to that save (written with every save):
//                   step,lr,train_loss,val_loss,tokens_per_s,elapsed_s
// Only whole lines are read, so a line the trainer is writing is never half-read.

#include <cstdint>
#include <string>
#include <vector>

namespace glass {

/// A table of numbers with named columns, as in a CSV file with a header line. A field that is
/// empty or not a number is NaN (log.csv leaves val_loss empty between evaluations).
struct CsvTable {
  std::vector<std::string> columns;
  std::vector<std::vector<double>> rows;  ///< each row has columns.size() values

  /// The index of column `name`, or -1.
  int column(const std::string& name) const;
};

/// Parses CSV text: the first line names the columns, each further whole line is a row (a last
/// line without '\n' is left out: it may still be being written). Rows with a different number
/// of fields are skipped. Empty text gives an empty table.
CsvTable parse_csv_numbers(const std::string& text);

/// RUN/steps.csv, read as it grows: each refresh() reads only the bytes appended since the last
/// one and adds their whole lines. When the file disappears, shrinks or is replaced (a new run
/// in the same directory), the table is read again from the start. A file that does not exist
/// yet is an empty table.
class StepLog {
 public:
  explicit StepLog(std::string path) : path_(std::move(path)) {}
  /// Reads what was appended; never throws (an unreadable file leaves the table as it was).
  /// A row whose step is not an integer from 0 to kMaxStep (a hand-edited or hostile file:
  /// "1e+23", "-4", "2.5") is left out and counted in refused().
  void refresh();
  const CsvTable& table() const { return table_; }
  /// Rows left out of the table since the file was last read from its start.
  std::size_t refused() const { return refused_; }
  /// The largest step kept: 2^53, the largest integer a double (and JavaScript) holds exactly.
  static constexpr double kMaxStep = 9007199254740992.0;

 private:
  std::string path_;
  std::uintmax_t offset_ = 0;  // bytes of the file read so far (whole lines only)
  std::uintmax_t inode_ = 0;   // the file read so far (a new file means a new run)
  bool have_header_ = false;
  std::size_t refused_ = 0;
  CsvTable table_;
};

}  // namespace glass
