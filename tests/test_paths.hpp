#pragma once
// Where the tests find the checkout and the build: the directories this test binary was built
// from and into. They are compiled into one small file (tests/test_paths.cpp) rather than into
// every test, so that the test objects do not change with the checkout's path (ccache reuses
// them from another clone).

#include <string>

namespace glass_test {

/// The checkout's directory (absolute, as CMake saw it), followed by `rest` (e.g.
/// "/data/corpora/domcasmurro.txt").
std::string source_dir(const std::string& rest = "");

/// The build directory (absolute; `glass` and the tutorial programs are built there), followed
/// by `rest` (e.g. "/glass").
std::string binary_dir(const std::string& rest = "");

}  // namespace glass_test
