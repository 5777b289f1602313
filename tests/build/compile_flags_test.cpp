// The build targets one fixed instruction set on every machine (docs/en/build.md): every
// compilation of the project carries -march=GLASS_ARCH (x86-64-v3 by default) and nothing that
// depends on the CPU of the machine that built it (-march=native, -mtune=native, -mavx512*).
// Checked on the build's own compile_commands.json (CMAKE_EXPORT_COMPILE_COMMANDS), and, for
// the default baseline, on what this very file was compiled for (the compiler's predefined
// macros and the SIMD architecture xsimd picked for the row kernels).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <xsimd/xsimd.hpp>

#include <fstream>
#include <regex>
#include <string>

#include "test_paths.hpp"

namespace {

const std::string kArch = GLASS_ARCH;  // the configured -DGLASS_ARCH (CMake cache)

nlohmann::json compile_commands() {
  const std::string path = std::string(glass_test::binary_dir()) + "/compile_commands.json";
  std::ifstream in(path);
  if (!in) {
    ADD_FAILURE() << "cannot read " << path;
    return nlohmann::json::array();
  }
  return nlohmann::json::parse(in);
}

// The command line of one entry (CMake writes "command"; other generators "arguments").
std::string command_of(const nlohmann::json& entry) {
  if (entry.contains("command")) return entry["command"].get<std::string>();
  std::string joined;
  for (const auto& a : entry["arguments"]) joined += a.get<std::string>() + " ";
  return joined;
}

TEST(BuildFlags, EveryCompilationTargetsTheConfiguredInstructionSet) {
  const nlohmann::json commands = compile_commands();
  ASSERT_GT(commands.size(), 50u) << "compile_commands.json lists too few files to be this build's";
  const std::regex march(R"(-march=(\S+))");
  const std::regex cpu_dependent(R"((-march=native|-mtune=native|-mcpu=native|-mavx512\w*))");
  for (const auto& entry : commands) {
    const std::string cmd = command_of(entry);
    const std::string file = entry["file"].get<std::string>();
    if (kArch != "native") {
      std::smatch m;
      EXPECT_FALSE(std::regex_search(cmd, m, cpu_dependent))
          << file << " is compiled with " << m.str() << ", which depends on the building machine";
    }
    int seen = 0;
    for (auto it = std::sregex_iterator(cmd.begin(), cmd.end(), march);
         it != std::sregex_iterator(); ++it) {
      ++seen;
      EXPECT_EQ((*it)[1].str(), kArch) << file << " is compiled with " << (*it)[0].str();
    }
    if (kArch == "default") {
      EXPECT_EQ(seen, 0) << file << " carries a -march although GLASS_ARCH=default";
    } else {
      EXPECT_GE(seen, 1) << file << " is compiled without -march=" << kArch;
    }
  }
}

// With the default baseline, x86-64-v3 means AVX2 + FMA and no AVX-512: the macros GCC and clang
// define for the target say what the compiler may emit, and xsimd's default architecture (the one
// the SIMD row kernels of autograd/kernels/ are instantiated for) follows them.
TEST(BuildFlags, TheBaselineIsAvx2AndFmaWithoutAvx512) {
  if (kArch != "x86-64-v3") GTEST_SKIP() << "built for -march=" << kArch << ", not the baseline";
#if defined(__AVX512F__)
  const bool avx512 = true;
#else
  const bool avx512 = false;
#endif
#if defined(__AVX2__) && defined(__FMA__)
  const bool avx2_fma = true;
#else
  const bool avx2_fma = false;
#endif
  EXPECT_FALSE(avx512) << "this file was compiled with AVX-512 enabled";
  EXPECT_TRUE(avx2_fma) << "this file was compiled without AVX2 + FMA";
  EXPECT_EQ(std::string(xsimd::default_arch::name()), "fma3+avx2");
}

}  // namespace
