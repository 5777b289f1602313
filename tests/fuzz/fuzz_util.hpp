#pragma once
// Helpers shared by the libFuzzer harnesses.

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace glass::fuzz {

/// Stops the run (libFuzzer saves the input as a crash) when a property of the reader fails.
#define GLASS_FUZZ_CHECK(cond)                                                         \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                    \
    }                                                                                  \
  } while (0)

/// A directory for the files a harness writes, private to this process, in memory when /dev/shm
/// exists (a file round trip there costs microseconds). libFuzzer may end the process without
/// running destructors, so the directories of processes that no longer exist are removed here.
inline const std::string& scratch_dir() {
  static const std::string dir = [] {
    namespace fs = std::filesystem;
    const fs::path base =
        fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    const std::string prefix = "glass_fuzz_";
    std::error_code ec;
    for (const fs::directory_entry& e : fs::directory_iterator(base, ec)) {
      const std::string name = e.path().filename().string();
      if (name.rfind(prefix, 0) != 0) continue;
      const long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
      if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
        fs::remove_all(e.path(), ec);
    }
    const fs::path d = base / (prefix + std::to_string(::getpid()));
    fs::create_directories(d);
    return d.string();
  }();
  return dir;
}

/// Writes `bytes` to `path` (plain write, no fsync: the file lives only for this input).
inline void write_plain(const std::string& path, const std::string& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  GLASS_FUZZ_CHECK(f != nullptr);
  GLASS_FUZZ_CHECK(std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size());
  GLASS_FUZZ_CHECK(std::fclose(f) == 0);
}

}  // namespace glass::fuzz
