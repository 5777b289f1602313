// Reading the growing logs of a run directory. See live_log.hpp.

#include "serve/live_log.hpp"

#include <sys/stat.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

namespace glass {

namespace {

std::vector<std::string> split_fields(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, ',')) fields.push_back(field);
  if (!line.empty() && line.back() == ',') fields.emplace_back();
  return fields;
}

double to_number(const std::string& field) {
  if (field.empty()) return std::numeric_limits<double>::quiet_NaN();
  char* end = nullptr;
  const double v = std::strtod(field.c_str(), &end);
  return end != nullptr && *end == '\0' ? v : std::numeric_limits<double>::quiet_NaN();
}

/// Adds one whole line (without its '\n') to `table`: the header if it has none yet, else a row.
void add_line(CsvTable& table, bool& have_header, std::string line) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line.empty()) return;
  std::vector<std::string> fields = split_fields(line);
  if (!have_header) {
    table.columns = std::move(fields);
    have_header = true;
    return;
  }
  if (fields.size() != table.columns.size()) return;
  std::vector<double> row;
  row.reserve(fields.size());
  for (const std::string& f : fields) row.push_back(to_number(f));
  table.rows.push_back(std::move(row));
}

}  // namespace

int CsvTable::column(const std::string& name) const {
  for (std::size_t i = 0; i < columns.size(); ++i)
    if (columns[i] == name) return static_cast<int>(i);
  return -1;
}

CsvTable parse_csv_numbers(const std::string& text) {
  CsvTable table;
  bool have_header = false;
  std::size_t start = 0;
  for (std::size_t end = text.find('\n'); end != std::string::npos; end = text.find('\n', start)) {
    add_line(table, have_header, text.substr(start, end - start));
    start = end + 1;
  }
  return table;
}

void StepLog::refresh() {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) {  // not there (yet, or any more)
    table_ = {};
    offset_ = 0;
    inode_ = 0;
    have_header_ = false;
    refused_ = 0;
    return;
  }
  const auto size = static_cast<std::uintmax_t>(st.st_size);
  const auto inode = static_cast<std::uintmax_t>(st.st_ino);
  if (inode != inode_ || size < offset_) {  // another file: a new run
    table_ = {};
    offset_ = 0;
    inode_ = inode;
    have_header_ = false;
    refused_ = 0;
  }
  if (size == offset_) return;
  std::ifstream in(path_, std::ios::binary);
  if (!in) return;
  in.seekg(static_cast<std::streamoff>(offset_));
  std::string chunk(static_cast<std::size_t>(size - offset_), '\0');
  in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
  chunk.resize(static_cast<std::size_t>(in.gcount()));
  std::size_t start = 0;
  for (std::size_t end = chunk.find('\n'); end != std::string::npos;
       end = chunk.find('\n', start)) {
    const std::size_t rows = table_.rows.size();
    add_line(table_, have_header_, chunk.substr(start, end - start));
    start = end + 1;
    const int step = table_.column("step");
    if (table_.rows.size() == rows || step < 0) continue;
    const double v = table_.rows.back()[static_cast<std::size_t>(step)];
    if (!(v >= 0 && v <= kMaxStep && v == std::floor(v))) {  // NaN fails every comparison
      table_.rows.pop_back();
      ++refused_;
    }
  }
  offset_ += start;  // a line still being written is read again next time, whole
}

}  // namespace glass
