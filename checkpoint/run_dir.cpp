// The run directory of `glass train`: step directories, the `current` link, the lock. See
// checkpoint/run_dir.hpp.

#include "checkpoint/run_dir.hpp"

#include "data/json_no_duplicates.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>
#include <regex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "checkpoint/atomic_file.hpp"
#include "checkpoint/config_json.hpp"
#include "checkpoint/manifest.hpp"

namespace glass {

namespace fs = std::filesystem;

bool is_step_dir_name(const std::string& name) {
  static const std::regex pattern(R"(step-[0-9]{6,}(\.[0-9]+)?)");
  return std::regex_match(name, pattern);
}

namespace {

bool is_link(const fs::path& p) {
  std::error_code ec;
  return fs::is_symlink(fs::symlink_status(p, ec));
}

/// The target of DIR/current ("step-000250"), or "" when there is no such link.
std::string current_target(const std::string& dir) {
  const fs::path link = fs::path(dir) / kCurrentLink;
  if (!is_link(link)) return "";
  std::error_code ec;
  const fs::path target = fs::read_symlink(link, ec);
  return ec ? "" : target.string();
}

/// True when `dir` can only be a save of a run: a step directory by name, holding nothing but
/// checkpoint files and their temporary files (FILE.tmp.PID.N). A directory of the user's that
/// happens to be called "step-..." inside --out is never taken for one, so never removed.
bool is_save_dir(const fs::path& dir) {
  std::error_code ec;
  if (!is_step_dir_name(dir.filename().string()) || is_link(dir) || !fs::is_directory(dir, ec))
    return false;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file(ec) || is_link(entry.path())) return false;
    bool known = false;
    for (const std::string& file : checkpoint_file_names())
      if (name == file || name.rfind(file + ".tmp.", 0) == 0) known = true;
    // The per-step log is saved too, but not linked from DIR: DIR/steps.csv is the trainer's
    // live copy (train/trainer.hpp); so are the interpretability records and a BPE model's
    // tokenizer.json.
    for (const char* extra : {kStepsFile, kManifestFile, kInterpFile, kInterpHistoryFile,
                              kProbeHistoryFile, kBpeTokenizerFile})
      if (name == extra || name.rfind(std::string(extra) + ".tmp.", 0) == 0) known = true;
    if (!known) return false;
  }
  return !ec;
}

/// True when the save's config.json says the save has a manifest (glass train writes
/// "training": {"manifest": "manifest.json"} since saves carry one). An unreadable config.json
/// counts as saying so.
bool expects_manifest(const fs::path& dir) {
  try {
    const nlohmann::json config =
        parse_json_no_duplicate_keys(read_checkpoint_file((dir / "config.json").string()));
    const nlohmann::json training = config.value("training", nlohmann::json::object());
    return !training.is_object() || training.contains("manifest");
  } catch (const std::exception&) {
    return true;
  }
}

/// True when `dir` holds every file a save writes (best.safetensors is optional) and, last, its
/// manifest (none in a save written before saves carried one).
bool holds_every_save_file(const fs::path& dir) {
  std::error_code ec;
  for (const char* file : {"model.safetensors", "config.json", "train_state.json",
                           "train_state.safetensors", "log.csv"})
    if (!fs::is_regular_file(dir / file, ec)) return false;
  return fs::is_regular_file(dir / kManifestFile, ec) || !expects_manifest(dir);
}

/// A save dir that holds every file a save writes: complete, so never removed as the remains
/// of a save cut short.
bool is_complete_save(const fs::path& dir) {
  return is_save_dir(dir) && holds_every_save_file(dir);
}

void sync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

/// Creates the symbolic link `link` -> `target` under a temporary name, then renames it over
/// `link` (atomic: readers see the old link or the new one). Throws FileError.
void replace_with_symlink(const std::string& target, const fs::path& link, const char* what) {
  const fs::path tmp = link.parent_path() / fmt::format(".{}.tmp.{}", link.filename().string(),
                                                        static_cast<long>(::getpid()));
  ::unlink(tmp.c_str());
  int err = file_op_fault("symlink", tmp.string());
  if (err == 0 && ::symlink(target.c_str(), tmp.c_str()) != 0) err = errno;
  if (err != 0)
    throw FileError(
        fmt::format("cannot create the link '{}': {}", tmp.string(), std::strerror(err)));
  err = file_op_fault(what, link.string() + " -> " + target);
  if (err == 0 && ::rename(tmp.c_str(), link.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    throw FileError(fmt::format("cannot switch the link '{}' to '{}': {}", link.string(), target,
                                std::strerror(err)));
  }
}

}  // namespace

const std::vector<std::string>& checkpoint_file_names() {
  static const std::vector<std::string> names = {
      "model.safetensors", "best.safetensors",        "config.json",
      "train_state.json",  "train_state.safetensors", "log.csv"};
  return names;
}

std::string checkpoint_files_dir(const std::string& dir) {
  const std::string target = current_target(dir);
  if (target.empty()) return dir;
  return (fs::path(dir) / target).string();
}

bool holds_checkpoint(const std::string& dir) {
  std::error_code ec;
  if (!current_target(dir).empty()) return true;
  return fs::exists(fs::path(dir) / "config.json", ec) ||
         fs::exists(fs::path(dir) / "model.safetensors", ec);
}

void check_run_layout(const std::string& dir) {
  const fs::path link = fs::path(dir) / kCurrentLink;
  std::error_code ec;
  if (fs::exists(fs::symlink_status(link, ec)) && !is_link(link))
    throw FileError(fmt::format(
        "'{}' is not a symbolic link (a run directory copied with cp -L or to a file system "
        "without links?): glass train could not switch it to its next save. Copy the run with "
        "links kept (cp -a), or train into a fresh --out",
        link.string()));
}

// ---- lock -------------------------------------------------------------------------------------

namespace {

/// The pid a trainer wrote into `lock_path`, "" when unknown.
std::string lock_holder_pid(const std::string& lock_path) {
  const int fd = ::open(lock_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  ::close(fd);
  std::string pid = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "";
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  return pid;
}

}  // namespace

RunLock::RunLock(const std::string& dir) {
  const std::string path = (fs::path(dir) / kLockFile).string();
  auto busy = [&] {
    const std::string pid = lock_holder_pid(path);
    return FileError(fmt::format(
        "another glass train ({}) is using '{}' (it holds {}); wait for it to end or stop it{}, "
        "or train into another --out directory",
        pid.empty() ? "pid unknown" : "pid " + pid, dir, path,
        pid.empty() ? "" : " (kill " + pid + ")"));
  };
  // The lock is on the directory itself, which no one deletes while a run uses it (a deleted
  // run.lock let a second trainer in); run.lock holds the pid to name, and is locked too for
  // older versions of glass that lock only it.
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) {
    const int err = errno;
    throw FileError(fmt::format("cannot open the run directory '{}': {}", dir, std::strerror(err)));
  }
  if (::flock(dir_fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(dir_fd);
    if (err == EWOULDBLOCK) throw busy();
    warning_ = fmt::format("cannot lock '{}' ({}); nothing stops a second trainer from using it",
                           dir, std::strerror(err));
    return;
  }
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    ::close(dir_fd);
    throw FileError(fmt::format("cannot open the lock file '{}': {}", path, std::strerror(err)));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    ::close(dir_fd);
    if (err == EWOULDBLOCK) throw busy();
    warning_ = fmt::format("cannot lock '{}' ({}); nothing stops a second trainer from using '{}'",
                           path, std::strerror(err), dir);
    return;
  }
  const std::string pid = std::to_string(static_cast<long>(::getpid())) + "\n";
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    // The lock holds anyway; only the pid shown to a second trainer is missing.
  }
  fd_ = fd;
  dir_fd_ = dir_fd;
}

RunLock::~RunLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

std::string new_run_id() {
  std::random_device device;
  std::mt19937_64 engine((static_cast<std::uint64_t>(device()) << 32) ^ device() ^
                         static_cast<std::uint64_t>(::getpid()));
  return fmt::format("{:016x}", engine());
}

// ---- saves ------------------------------------------------------------------------------------

std::string begin_save(const std::string& dir, long step) {
  const std::string current = current_target(dir);
  const std::string base = fmt::format("step-{:06d}", step);
  std::string name = base;
  std::error_code ec;
  // Not the current save, not another complete one (e.g. a copy the user keeps, or a save whose
  // switch a kill prevented), and not a folder of the user's that happens to have this name.
  auto taken = [&](const std::string& candidate) {
    const fs::path p = fs::path(dir) / candidate;
    return candidate == current ||
           (fs::exists(fs::symlink_status(p, ec)) && (!is_save_dir(p) || is_complete_save(p)));
  };
  for (int k = 1; taken(name); ++k) name = fmt::format("{}.{}", base, k);
  const fs::path path = fs::path(dir) / name;
  if (fs::exists(fs::symlink_status(path, ec))) {  // a save that did not complete
    ec.clear();
    if (file_op_fault("remove", path.string()) == 0) fs::remove_all(path, ec);
    if (ec || fs::exists(fs::symlink_status(path, ec)))
      throw FileError(fmt::format("cannot remove '{}', left by a save that did not complete: {}",
                                  path.string(), ec.message()));
  }
  int err = file_op_fault("mkdir", path.string());
  if (err == 0 && ::mkdir(path.c_str(), 0755) != 0) err = errno;
  if (err != 0)
    throw FileError(
        fmt::format("cannot create directory '{}': {}", path.string(), std::strerror(err)));
  return path.string();
}

void commit_save(const std::string& dir, const std::string& step_dir) {
  sync_directory(step_dir);
  replace_with_symlink(fs::path(step_dir).filename().string(), fs::path(dir) / kCurrentLink,
                       "switch");
  sync_directory(dir);
}

std::string finish_save(const std::string& dir, const std::string& previous_save) {
  std::string warning;
  for (const std::string& file : checkpoint_file_names()) {
    const fs::path link = fs::path(dir) / file;
    const std::string target = (fs::path(kCurrentLink) / file).string();
    std::error_code ec;
    if (is_link(link) && fs::read_symlink(link, ec) == target) continue;
    try {
      replace_with_symlink(target, link, "link");
    } catch (const FileError& e) {
      warning += (warning.empty() ? "" : "; ") + std::string(e.what());
    }
  }
  sync_directory(dir);
  const fs::path previous = fs::path(dir) / previous_save;
  if (previous_save.empty() || previous_save == current_target(dir) || !is_save_dir(previous))
    return warning;
  try {
    // A save a reader still uses stays until a later save (remove_unused_saves).
    remove_save_unless_pinned(previous.string());
  } catch (const FileError& e) {
    warning += (warning.empty() ? "" : "; ") + std::string(e.what());
  }
  return warning;
}

// ---- readers' pins ----------------------------------------------------------------------------

SavePin::SavePin(const std::string& run_dir) {
  // The trainer removes a save only while it holds the exclusive lock, so once the shared lock
  // is ours the directory either still holds the whole save or was removed before (its link
  // count is then 0): in that case `current` has moved on, and is read again.
  for (int attempt = 0; attempt < 1000; ++attempt) {
    dir_ = checkpoint_files_dir(run_dir);
    // Only a save is pinned: a checkpoint directory without `current` is never removed (and a
    // run directory is what a trainer locks for itself, RunLock).
    fs::path named = fs::path(run_dir).lexically_normal();
    if (named.filename().empty()) named = named.parent_path();  // "run/step-000030/"
    if (dir_ == run_dir && !is_step_dir_name(named.filename().string())) return;
    const int fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT && dir_ != run_dir) continue;  // removed after `current` was read
      return;
    }
    struct stat st {};
    if (::flock(fd, LOCK_SH) != 0) {  // no flock here (some network file systems): unpinned
      fd_ = fd;
      return;
    }
    if (::fstat(fd, &st) == 0 && st.st_nlink == 0) {
      ::close(fd);
      continue;
    }
    fd_ = fd;
    return;
  }
}

SavePin::~SavePin() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

bool remove_save_unless_pinned(const std::string& save) {
  const int fd = ::open(save.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
    ::close(fd);
    return false;
  }
  std::error_code ec;
  const int err = file_op_fault("remove", save);
  if (err == 0) fs::remove_all(save, ec);
  if (fd >= 0) ::close(fd);
  if (err != 0 || ec)
    throw FileError(fmt::format("cannot remove the previous save '{}': {}", save,
                                err != 0 ? std::strerror(err) : ec.message()));
  return true;
}

std::size_t remove_unused_saves(const std::string& dir, const std::string& run_id) {
  const std::string current = current_target(dir);
  if (current.empty() || run_id.empty()) return 0;
  static const std::regex name_pattern(R"(step-([0-9]{6,})(\.[0-9]+)?)");
  std::vector<fs::path> unused;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    std::smatch m;
    if (name == current || !std::regex_match(name, m, name_pattern) ||
        !is_complete_save(entry.path()))
      continue;
    try {
      const Manifest manifest = read_manifest(entry.path().string());
      if (manifest.present && manifest.run_id == run_id && std::stol(m[1].str()) == manifest.step)
        unused.push_back(entry.path());
    } catch (const std::exception&) {
      // Not a manifest this run wrote: never taken for one of its saves.
    }
  }
  std::size_t removed = 0;
  for (const fs::path& p : unused) {
    try {
      if (remove_save_unless_pinned(p.string())) ++removed;
    } catch (const FileError&) {
      // Tried again at the next save.
    }
  }
  return removed;
}

std::size_t remove_stale_saves(const std::string& dir) {
  const std::string current = current_target(dir);
  std::size_t removed = 0;
  std::error_code ec;
  std::vector<fs::path> stale;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name != current && is_save_dir(entry.path()) && !is_complete_save(entry.path()))
      stale.push_back(entry.path());
  }
  for (const fs::path& p : stale) {
    std::error_code rm;
    fs::remove_all(p, rm);
    if (!rm) ++removed;
  }
  // Temporary links of a commit that was cut short.
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 1 && name[0] == '.' && name.find(".tmp.") != std::string::npos &&
        is_link(entry.path())) {
      std::error_code rm;
      fs::remove(entry.path(), rm);
    }
  }
  return removed;
}

std::string newest_complete_save(const std::string& dir) {
  static const std::regex name_pattern(R"(step-([0-9]{6,})(\.([0-9]+))?)");
  std::string best;
  std::pair<long, long> best_key{-1, -1};  // (step, copy number k of "step-N.k")
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    std::smatch m;
    if (!std::regex_match(name, m, name_pattern) || !is_complete_save(entry.path())) continue;
    long step = -1;
    try {
      step = std::stol(m[1].str());
      const Manifest manifest = read_manifest(entry.path().string());
      if (manifest.present) step = manifest.step;
    } catch (const std::exception&) {
      continue;  // a save whose manifest is unreadable is not one to resume from
    }
    const std::pair<long, long> key{step, m[3].matched ? std::stol(m[3].str()) : 0};
    if (key > best_key) best_key = key, best = name;
  }
  return best;
}

SaveToRead save_to_read(const std::string& dir) {
  SaveToRead read{dir, "", ""};
  std::error_code ec;
  const fs::path link = fs::path(dir) / kCurrentLink;
  if (!fs::is_directory(dir, ec)) return read;
  std::string problem;
  if (is_link(link)) {
    const std::string target = fs::read_symlink(link, ec).string();
    const fs::path save = fs::path(dir) / target;
    if (!fs::exists(save, ec))
      problem = fmt::format("points to {}, which is gone", target);
    else if (!fs::is_directory(save, ec))
      problem = fmt::format("points to {}, which is a file, not a save", target);
    else if (!holds_every_save_file(save))
      problem = fmt::format("points to {}, a save that did not complete", target);
  } else if (fs::is_regular_file(fs::symlink_status(link, ec))) {
    problem = "is a file, not a link to a save";
  } else if (!fs::exists(fs::symlink_status(link, ec)) &&
             !fs::exists(fs::path(dir) / "config.json", ec)) {
    problem = "is missing";
  }
  // Otherwise DIR reads as the save: `current` leads to a complete one, or is a directory of
  // its own (a run copied with cp -L: check_run_layout), or DIR is a checkpoint of the flat
  // layout.
  if (problem.empty()) return read;
  const std::string newest = newest_complete_save(dir);
  if (newest.empty()) return read;
  read.dir = (fs::path(dir) / newest).string();
  read.fallback = newest;
  read.reason =
      fmt::format("{}/{} (the link to the last complete save) {}", dir, kCurrentLink, problem);
  return read;
}

void link_or_copy(const std::string& from, const std::string& to) {
  int err = file_op_fault("link", to);
  if (err == 0 && ::link(from.c_str(), to.c_str()) == 0) return;
  if (err == 0) err = errno;
  if (err == EXDEV || err == EPERM || err == EMLINK || err == ENOTSUP) {
    write_file_atomic(to, read_file(from));
    return;
  }
  throw FileError(
      fmt::format("cannot write file '{}': {} (linking it to '{}')", to, std::strerror(err), from));
}

}  // namespace glass
