// Atomic file writes (temp file + fsync + rename) and clear I/O errors. See atomic_file.hpp.

#include "checkpoint/atomic_file.hpp"

#include "data/file_limits.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

namespace fs = std::filesystem;

namespace glass {

namespace {

/// A temporary name next to `path`, unique within this process and across processes.
std::string temp_name_for(const std::string& path) {
  static std::atomic<unsigned long> counter{0};
  return fmt::format("{}.tmp.{}.{}", path, static_cast<long>(::getpid()), counter++);
}

std::string os_reason(int err) { return std::strerror(err); }

/// Writes all of `bytes` to `fd`, retrying short writes and EINTR. Returns 0 or an errno.
int write_all(int fd, const std::string& bytes) {
  const char* p = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return 0;
}

/// fsync of the directory holding `path`, so that the rename itself survives a crash.
/// Best effort: some file systems refuse fsync on directories.
void sync_parent_directory(const std::string& path) {
  fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) parent = ".";
  const int dfd = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace

int file_op_fault(const char* what, const std::string& path) {
  static std::atomic<long> count{0};
  static const long kill_after = [] {
    const char* v = std::getenv("GLASS_FAULT_AFTER_FILE_OPS");
    return v != nullptr && *v != '\0' ? std::atol(v) : -1L;
  }();
  static const long fail_at = [] {
    const char* v = std::getenv("GLASS_FAULT_FAIL_FILE_OP");
    return v != nullptr && *v != '\0' ? std::atol(v) : -1L;
  }();
  static const bool trace = [] {
    const char* v = std::getenv("GLASS_FAULT_TRACE");
    return v != nullptr && *v != '\0' && std::string(v) != "0";
  }();
  const long n = ++count;
  if (kill_after >= 0 && n == kill_after + 1) {
    std::fprintf(stderr,
                 "GLASS_FAULT_AFTER_FILE_OPS=%ld: killing the process before file op %ld "
                 "(%s %s)\n",
                 kill_after, n, what, path.c_str());
    std::fflush(stderr);
    ::raise(SIGKILL);
  }
  if (trace) std::fprintf(stderr, "file op %ld: %s %s\n", n, what, path.c_str());
  if (n == fail_at) return ENOSPC;
  return 0;
}

namespace {

/// Writes `bytes` straight into an existing character device or FIFO (never replaced).
void write_in_place(const std::string& path, const std::string& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    throw FileError(fmt::format("cannot write file '{}': {}", path, os_reason(err)));
  }
  int err = file_op_fault("write", path);
  if (err == 0) err = write_all(fd, bytes);
  if (::close(fd) != 0 && err == 0 && errno != EINVAL) err = errno;
  if (err != 0) throw FileError(fmt::format("cannot write file '{}': {}", path, os_reason(err)));
}

}  // namespace

void write_file_atomic(const std::string& path_in, const std::string& bytes) {
  std::string path = path_in;
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    // Follow the link: the file it names is replaced, the link itself stays.
    std::error_code ec;
    const fs::path target = fs::canonical(path, ec);
    if (ec)
      throw FileError(
          fmt::format("cannot write file '{}': it is a symbolic link to '{}', which "
                      "does not exist; remove the link or write elsewhere",
                      path, fs::read_symlink(path, ec).string()));
    path = target.string();
  }
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return write_in_place(path, bytes);
    const char* kind = S_ISDIR(st.st_mode)    ? "a directory"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a regular file";
    throw FileError(
        fmt::format("cannot write file '{}': it is {}; name a regular file", path_in, kind));
  }
  const std::string tmp = temp_name_for(path);
  int fault = file_op_fault("create", tmp);
  const int fd =
      fault != 0 ? -1 : ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = fault != 0 ? fault : errno;
    throw FileError(fmt::format("cannot write file '{}': {} (creating the temporary file '{}')",
                                path, os_reason(err), tmp));
  }
  auto fail = [&](int err, const char* step) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw FileError(fmt::format("cannot write file '{}': {} ({})", path, os_reason(err), step));
  };
  if (int err = file_op_fault("write", tmp)) fail(err, "writing the temporary file");
  if (int err = write_all(fd, bytes)) fail(err, "writing the temporary file");
  if (::fsync(fd) != 0) fail(errno, "flushing the temporary file to disk");
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw FileError(fmt::format("cannot write file '{}': {} (closing the temporary file)", path,
                                os_reason(err)));
  }
  fault = file_op_fault("rename", path);
  if (fault != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = fault != 0 ? fault : errno;
    ::unlink(tmp.c_str());
    throw FileError(
        fmt::format("cannot write file '{}': {} (renaming the temporary file into place)", path,
                    os_reason(err)));
  }
  sync_parent_directory(path);
}

std::size_t remove_stale_temp_files(const std::string& dir, const std::vector<std::string>& files) {
  std::size_t removed = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (!entry.is_regular_file(ec)) continue;
    // "<file>.tmp.<pid>.<n>": the last two dot-separated fields are numbers.
    const std::string name = entry.path().filename().string();
    const std::size_t last = name.rfind('.');
    if (last == std::string::npos || last == 0) continue;
    const std::size_t before = name.rfind('.', last - 1);
    if (before == std::string::npos || before < 4 || name.compare(before - 4, 4, ".tmp") != 0)
      continue;
    const std::string base = name.substr(0, before - 4);  // the file being written
    if (std::find(files.begin(), files.end(), base) == files.end()) continue;
    const std::string pid_text = name.substr(before + 1, last - before - 1);
    const std::string counter = name.substr(last + 1);
    auto all_digits = [](const std::string& t) {
      return !t.empty() && t.size() < 12 &&
             std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    if (!all_digits(pid_text) || !all_digits(counter)) continue;
    const long pid = std::stol(pid_text);
    if (pid <= 0 || pid == static_cast<long>(::getpid())) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // still running
    if (fs::remove(entry.path(), ec)) ++removed;
  }
  return removed;
}

void ensure_directory(const std::string& path) {
  if (path.empty()) throw FileError("cannot create directory '': the path is empty");
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (fs::exists(st)) {
    if (!fs::is_directory(st)) {
      throw FileError(
          fmt::format("cannot use '{}' as a directory: it exists and is not a directory", path));
    }
    return;
  }
  fs::create_directories(path, ec);
  if (ec) {
    throw FileError(fmt::format("cannot create directory '{}': {}", path, ec.message()));
  }
}

void ensure_writable_directory(const std::string& path) {
  ensure_directory(path);
  const std::string probe = temp_name_for((fs::path(path) / ".glass_write_test").string());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    throw FileError(fmt::format("cannot write to directory '{}': {}", path, os_reason(err)));
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

std::string read_file(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    throw FileError(fmt::format("cannot read file '{}': it is a directory", path));
  }
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    throw FileError(fmt::format("cannot read file '{}': {}", path,
                                err ? os_reason(err) : std::string("cannot open")));
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw FileError(fmt::format("cannot read file '{}': read error", path));
  return buffer.str();
}

std::string read_checkpoint_file(const std::string& path) {
  const std::string name = fs::path(path).filename().string();
  const std::uint64_t limit = max_file_bytes(name);
  std::error_code ec;
  const std::uint64_t size = fs::is_regular_file(path, ec) ? fs::file_size(path, ec) : 0;
  if (!ec && size > limit)
    throw FileError(
        fmt::format("'{}' has {} bytes, more than the {} glass reads for a {}: is the "
                    "file corrupt?",
                    path, size, limit, name));
  return read_file(path);
}

}  // namespace glass
