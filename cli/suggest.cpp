// Answers to mistakes on the command line (see suggest.hpp).

#include "cli/suggest.hpp"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

namespace glass::cli {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  // d[i][j]: distance between the first i characters of a and the first j of b.
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t substitute = d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, substitute});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);  // two neighbours swapped
    }
  return d[a.size()][b.size()];
}

std::optional<std::string> nearest(const std::string& word,
                                   const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  std::size_t best_distance = 0;
  for (const std::string& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (!best || d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  if (!best || best_distance > 2 || 2 * best_distance >= word.size()) return std::nullopt;
  return best;
}

namespace {

/// Every spelling of cmd's flags, with their dashes ("--iters", "-t", "--help").
std::vector<std::string> flag_names(const CLI::App& cmd) {
  std::vector<std::string> names;
  for (const CLI::Option* opt : cmd.get_options()) {
    for (const std::string& l : opt->get_lnames()) names.push_back("--" + l);
    for (const std::string& s : opt->get_snames()) names.push_back("-" + s);
  }
  return names;
}

bool is_number(const std::string& text) {
  char* end = nullptr;
  std::strtod(text.c_str(), &end);
  return !text.empty() && *end == '\0';
}

}  // namespace

std::string usage_line(const CLI::App& cmd) {
  std::string line = "usage: glass " + cmd.get_name();
  for (const CLI::Option* opt : cmd.get_options()) {
    if (!opt->get_required() || opt->get_lnames().empty()) continue;
    line += " --" + opt->get_lnames().front() + " " + opt->get_type_name();
  }
  return line + " [OPTIONS]";
}

std::string unknown_flag(const CLI::App& cmd, int argc, char** argv, int first) {
  const std::vector<std::string> known = flag_names(cmd);
  for (int i = first; i < argc; ++i) {
    const std::string token = argv[i];
    if (token == "--") break;
    if (token.size() < 2 || token[0] != '-' || is_number(token)) continue;
    const std::string name = token.substr(0, token.find('='));
    // "-n5" is -n with the value 5: only a lone short flag ("-x") is checked among the short ones.
    if (name[1] != '-' && name.size() > 2) continue;
    if (std::find(known.begin(), known.end(), name) == known.end()) return name;
  }
  return "";
}

std::string unknown_flag_message(const CLI::App& cmd, const std::string& flag) {
  const std::optional<std::string> guess = nearest(flag, flag_names(cmd));
  return fmt::format("glass {}: unknown flag {}{}\n{}\nRun glass {} --help for every flag of {}.",
                     cmd.get_name(), flag, guess ? "; did you mean " + *guess + "?" : std::string(),
                     usage_line(cmd), cmd.get_name(), cmd.get_name());
}

std::string gpu_flag_message(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string token = argv[i];
    if (token == "--") break;
    const std::string name = token.substr(0, token.find('='));
    if (name == "-ngl" || name == "--n-gpu-layers" || name == "--gpu-layers" || name == "--ngl")
      return name + ": GlassLLM runs on the CPU, with no layers to offload to a GPU; drop " + name +
             " (-t/--threads chooses how many CPU cores it uses)";
  }
  return "";
}

}  // namespace glass::cli
