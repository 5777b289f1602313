// Helpers shared by the test suites that work with files and with the real `glass` binary:
// temporary directories removed at exit, reading/writing whole files, quoting shell arguments,
// and running `glass` with its stdout, stderr and exit code captured. Header-only; tests
// include it as "test_util.hpp".
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "test_paths.hpp"

namespace glass_test {

/// Removes `dir` and everything in it when the test process exits (errors are ignored).
inline void remove_at_exit(const std::filesystem::path& dir) {
  struct Registry {
    std::vector<std::filesystem::path> dirs;
    ~Registry() {
      for (const auto& d : dirs) {
        std::error_code ec;
        std::filesystem::remove_all(d, ec);
      }
    }
  };
  static Registry registry;
  registry.dirs.push_back(dir);
}

/// A fresh, empty directory <system temp dir>/<name>_<pid>, removed when the test process exits.
/// A second call with the same name empties it again.
inline std::filesystem::path temp_dir(const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / (name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  remove_at_exit(dir);
  return dir;
}

/// The whole file as bytes ("" if it cannot be opened).
inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Writes `bytes` to `path` (binary, truncating any existing file).
inline void write_file(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

/// Single-quotes one argument for /bin/sh, e.g. it's -> 'it'\''s'.
inline std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// What one run of `glass` produced.
struct GlassRun {
  int exit_code;    // the program's exit status; -1 if it did not exit normally (e.g. a signal)
  std::string out;  // everything written to stdout
  std::string err;  // everything written to stderr
};

/// Runs `GLASS_BINARY_DIR/glass ARGS` through the shell with stdin closed (</dev/null), its
/// stdout and stderr captured via the files stdout.txt and stderr.txt in `capture_dir` (which
/// must exist; the files are overwritten). `prefix` goes before the binary, e.g. "timeout 60 ".
/// ARGS is passed to the shell as is: quote paths with quote().
inline GlassRun run_glass(const std::string& args, const std::filesystem::path& capture_dir,
                          const std::string& prefix = "") {
  const std::filesystem::path out = capture_dir / "stdout.txt", err = capture_dir / "stderr.txt";
  const std::string cmd = prefix + glass_test::binary_dir("/glass ") + args + " </dev/null >" +
                          quote(out.string()) + " 2>" + quote(err.string());
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_file(out), read_file(err)};
}

}  // namespace glass_test
