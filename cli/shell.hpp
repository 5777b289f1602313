#pragma once
// Command lines the program prints for the user to run next: the program's own path and
// shell quoting.

#include <string>

namespace glass::cli {

/// How to run this program again from the current directory ("./build/glass" or an absolute
/// path; "glass" when /proc/self/exe cannot be read).
std::string program_name();

/// `s` as one word of a POSIX shell: as it is when it holds no character the shell treats
/// specially, else in single quotes (each ' written as '\'').
std::string shell_quote(const std::string& s);

}  // namespace glass::cli
