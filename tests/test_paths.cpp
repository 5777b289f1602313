// The directories of test_paths.hpp, given by CMake as GLASS_SOURCE_DIR and GLASS_BINARY_DIR.
#include "test_paths.hpp"

namespace glass_test {

std::string source_dir(const std::string& rest) { return GLASS_SOURCE_DIR + rest; }

std::string binary_dir(const std::string& rest) { return GLASS_BINARY_DIR + rest; }

}  // namespace glass_test
