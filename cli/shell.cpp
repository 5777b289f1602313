// Command lines the program prints: its own path and shell quoting. See cli/shell.hpp.

#include "cli/shell.hpp"

#include <filesystem>
#include <system_error>

namespace glass::cli {

namespace fs = std::filesystem;

std::string program_name() {
  std::error_code ec;
  std::string target = fs::read_symlink("/proc/self/exe", ec).string();
  if (ec) return "glass";
  // Linux appends " (deleted)" to the link when the binary was replaced while it ran (a rebuild
  // during a long training run); the command to print is the path, which holds the new binary.
  const std::string deleted = " (deleted)";
  if (target.size() > deleted.size() &&
      target.compare(target.size() - deleted.size(), deleted.size(), deleted) == 0)
    target.resize(target.size() - deleted.size());
  const fs::path exe(target);
  const fs::path rel = fs::relative(exe, fs::current_path(ec), ec);
  if (!ec && !rel.empty() && rel.native().rfind("..", 0) != 0) return "./" + rel.string();
  return exe.string();
}

std::string shell_quote(const std::string& s) {
  if (s.find_first_of(" \t\"'$\\`!*?&;|<>()") == std::string::npos) return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace glass::cli
