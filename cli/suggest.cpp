// Answers to mistakes on the command line (see suggest.hpp).

#include "cli/suggest.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

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

/// The option `token` names when it is a flag spelt alone ("--prompt", "-p"), else nullptr.
const CLI::Option* option_named(const CLI::App& cmd, const std::string& token) {
  const bool is_long = token.rfind("--", 0) == 0 && token.size() > 2;
  const bool is_short = token.size() == 2 && token[0] == '-' && token[1] != '-';
  if (!is_long && !is_short) return nullptr;
  return cmd.get_option_no_throw(token);
}

/// Whether `token` is a flag spelt alone that takes a value: the next argument is its value.
bool takes_next_as_value(const CLI::App& cmd, const std::string& token) {
  const CLI::Option* opt = option_named(cmd, token);
  return opt != nullptr && opt->get_type_size_max() > 0;
}

bool is_numeric(const CLI::Option& opt) {
  const std::string type = opt.get_type_name();
  return type.rfind("INT", 0) == 0 || type.rfind("UINT", 0) == 0 || type.rfind("FLOAT", 0) == 0;
}

/// The name of `opt` as a learner types it: the short name and the first long one ("-m/--checkpoint").
std::string spelling(const CLI::Option& opt) {
  std::string names;
  for (const std::string& s : opt.get_snames()) names += (names.empty() ? "-" : "/-") + s;
  if (!opt.get_lnames().empty()) names += (names.empty() ? "--" : "/--") + opt.get_lnames().front();
  return names;
}

/// The arguments of argv[first, argc) that are neither flags nor a flag's value.
std::vector<std::string> positionals(const CLI::App& cmd, int argc, char** argv, int first) {
  std::vector<std::string> found;
  for (int i = first; i < argc; ++i) {
    const std::string token = argv[i];
    if (token == "--") break;
    if (i > first && takes_next_as_value(cmd, argv[i - 1])) continue;
    if (token.empty() || token[0] != '-' || token == "-") found.push_back(token);
  }
  return found;
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

std::string single_dash_word_message(const CLI::App& cmd, int argc, char** argv, int first) {
  std::vector<std::string> long_names;
  for (const std::string& name : flag_names(cmd))
    if (name.rfind("--", 0) == 0) long_names.push_back(name);
  for (int i = first; i < argc; ++i) {
    const std::string token = argv[i];
    if (token == "--") break;
    if (i > first && takes_next_as_value(cmd, argv[i - 1])) continue;
    if (token.size() < 3 || token[0] != '-' || token[1] == '-' || is_number(token)) continue;
    const std::string word = token.substr(1, token.find('=') - 1);
    const std::string as_long = "--" + word;
    const bool is_long_flag =
        std::find(long_names.begin(), long_names.end(), as_long) != long_names.end();
    const std::optional<std::string> guess =
        is_long_flag ? std::optional<std::string>(as_long) : nearest(as_long, long_names);
    const CLI::Option* first_letter = cmd.get_option_no_throw("-" + word.substr(0, 1));
    bool misread = false;
    if (first_letter == nullptr) {
      misread = true;  // CLI11 would report the whole word as an unexpected argument
    } else if (first_letter->get_type_size_max() == 0) {
      // A cluster of short flags ("-ab") is fine; anything else is a long flag with one dash.
      for (const char letter : word) {
        const CLI::Option* opt = cmd.get_option_no_throw(std::string("-") + letter);
        if (opt == nullptr || opt->get_type_size_max() > 0) misread = true;
      }
      misread = misread || is_long_flag;
    } else {
      // A short flag with its value attached ("-n5", "-pOnce") unless the word is a long flag,
      // or a numeric flag's value is no number but the word is near a long flag ("-tmep").
      misread = is_long_flag || (is_numeric(*first_letter) && !is_number(word.substr(1)) && guess);
    }
    if (!misread) continue;
    return fmt::format(
        "glass {}: unknown flag -{}{}\n{}\nRun glass {} --help for every flag of {}.",
        cmd.get_name(), word,
        guess ? "; did you mean " + *guess + "? (a long flag takes two dashes)" : std::string(),
        usage_line(cmd), cmd.get_name(), cmd.get_name());
  }
  return "";
}

std::string repeated_option_message(const CLI::App& cmd, int argc, char** argv, int first) {
  std::map<const CLI::Option*, std::string> seen;  // each option's first use, as typed
  for (int i = first; i < argc; ++i) {
    const std::string token = argv[i];
    if (token == "--") break;
    if (i > first && takes_next_as_value(cmd, argv[i - 1])) continue;
    if (token.size() < 2 || token[0] != '-' || is_number(token)) continue;
    const std::size_t eq = token.find('=');
    std::string name = token.substr(0, eq), value;
    if (eq != std::string::npos) value = token.substr(eq + 1);  // "--context=64"
    if (name[1] != '-' && name.size() > 2) {                    // "-n5": -n with the value 5
      value = name.substr(2);
      name = name.substr(0, 2);
    } else if (eq == std::string::npos && i + 1 < argc) {
      value = argv[i + 1];
    }
    const CLI::Option* opt = cmd.get_option_no_throw(name);
    if (opt == nullptr || opt->get_type_size_max() == 0 || opt->get_items_expected_max() > 1 ||
        opt->get_multi_option_policy() != CLI::MultiOptionPolicy::Throw)
      continue;
    const std::string use = name + " " + value;
    const auto [at, first_use] = seen.emplace(opt, use);
    if (first_use) continue;
    const std::string names = spelling(*opt);
    return fmt::format("glass {}: {} given twice ({}, then {}); give it once", cmd.get_name(),
                       at->second.substr(0, at->second.find(' ')) == name ? name : names,
                       at->second, use);
  }
  return "";
}

std::string missing_option_message(const CLI::App& cmd, int argc, char** argv, int first) {
  const CLI::Option* missing = nullptr;
  for (const CLI::Option* opt : cmd.get_options())
    if (opt->get_required() && opt->count() == 0) {
      missing = opt;
      break;
    }
  if (missing == nullptr) return "";
  std::string hint;
  const std::string flag = !missing->get_snames().empty()   ? "-" + missing->get_snames().front()
                           : !missing->get_lnames().empty() ? "--" + missing->get_lnames().front()
                                                            : missing->get_name();
  // A checkpoint is a directory, a text a file: an argument of that kind is probably the value.
  const bool wants_dir = missing->check_lname("checkpoint");
  const bool wants_file = missing->check_lname("data");
  for (const std::string& arg : positionals(cmd, argc, argv, first)) {
    std::error_code ec;
    if ((wants_dir && std::filesystem::is_directory(arg, ec)) ||
        (wants_file && std::filesystem::is_regular_file(arg, ec))) {
      hint = fmt::format("; '{}' is a {}: did you mean {} {}?", arg,
                         wants_dir ? "directory" : "file", flag, arg);
      break;
    }
  }
  const std::string help = missing->get_description();
  const std::string names = spelling(*missing);
  return fmt::format("glass {}: {} is required{}{}\n{}\nRun glass {} --help for every flag of {}.",
                     cmd.get_name(), names.empty() ? missing->get_name() : names,
                     help.empty() ? "" : ": " + help, hint, usage_line(cmd), cmd.get_name(),
                     cmd.get_name());
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

CLI::Validator one_of(std::vector<std::string> choices, const std::string& what) {
  return CLI::Validator(
      [choices, what](std::string& text) -> std::string {
        const std::string lower = CLI::detail::to_lower(text);
        for (const std::string& choice : choices)
          if (lower == CLI::detail::to_lower(choice)) {
            text = choice;
            return "";
          }
        const std::optional<std::string> guess = nearest(lower, choices);
        return fmt::format("unknown {} '{}'{} (the {}s: {})", what, text,
                           guess ? "; did you mean " + *guess + "?" : std::string(), what,
                           fmt::join(choices, ", "));
      },
      fmt::format("{}", fmt::join(choices, "|")));
}

}  // namespace glass::cli
