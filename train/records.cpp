// log.csv and steps.csv as observers of the loop. See train/records.hpp.

#include "train/records.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <ostream>

#include <fmt/format.h>

#include "checkpoint/atomic_file.hpp"
#include "checkpoint/run_dir.hpp"

namespace glass {

namespace fs = std::filesystem;

void LogRecord::on_save(const SaveSite& site) {
  write_file_atomic((fs::path(site.step_dir) / "log.csv").string(), log_csv(rows_));
}

StepsRecord::~StepsRecord() {
  if (live_fd_ >= 0) ::close(live_fd_);
}

void StepsRecord::restore(const std::string& save_dir, long step) {
  std::vector<StepRow> saved = read_steps_csv((fs::path(save_dir) / kStepsFile).string());
  const bool from_zero =
      std::any_of(saved.begin(), saved.end(), [](const StepRow& r) { return r.step == 0; });
  rows_.clear();
  for (StepRow& r : saved) {
    if (from_zero) ++r.step;
    if (r.step <= step) rows_.push_back(r);
  }
  csv_ = steps_csv(rows_);
}

// The live steps.csv starts from the rows of the last save (all of them on resume, none for a
// new run), so it never holds steps that were not saved; each step then appends one whole line
// with one write(2), so a reader following the file sees complete lines.
void StepsRecord::open_live(const std::string& out_dir) {
  const std::string path = (fs::path(out_dir) / kStepsFile).string();
  live_path_ = out_dir + "/" + kStepsFile;  // as messages and fault injection name it
  write_file_atomic(path, csv_);
  live_fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (live_fd_ < 0)
    throw FileError(
        fmt::format("cannot open '{}' to append the per-step log: {}", path, std::strerror(errno)));
}

void StepsRecord::on_step(const StepRow& row) {
  rows_.push_back(row);
  const std::string line = step_csv_line(row);
  csv_ += line;
  if (live_fd_ < 0) return;
  // A full disk may take part of the line (a short write, errno untouched): the rest is written
  // again, and that write's errno (ENOSPC) is the one reported.
  int err = file_op_fault("append", live_path_);
  for (std::size_t done = 0; err == 0 && done < line.size();) {
    const ssize_t n = ::write(live_fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      err = n < 0 ? errno : EIO;
    else
      done += static_cast<std::size_t>(n);
  }
  if (err != 0) {
    // The live copy is for watching; the saves keep the complete log. Say so once and go on.
    out_ << "\nwarning: cannot append to " << live_path_ << " (" << std::strerror(err)
         << "); the per-step log is still written at every save\n";
    ::close(live_fd_);
    live_fd_ = -1;
  }
}

// Each row is formatted once, when its step is taken: a save writes the text kept (formatting
// every row again at every save made the saves of a long run of a small model its slowest part).
void StepsRecord::on_save(const SaveSite& site) {
  write_file_atomic((fs::path(site.step_dir) / kStepsFile).string(), csv_);
}

}  // namespace glass
