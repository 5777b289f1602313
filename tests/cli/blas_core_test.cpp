// The OpenBLAS core choice (autograd/blas_core.hpp) in the real programs: `glass`, a test
// program and a tutorial program, started with GLASS_BLAS_CORE_ASSUME=Prescott (the test hook
// that makes them take OpenBLAS's answer for Prescott, the fallback of an OpenBLAS that does not
// know the CPU), restart once on the core the rule picks, say so in one line on stderr, and
// leave stdout as it was. The rule itself is tested in tests/autograd/blas_core_test.cpp.

#include "autograd/blas_core.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "cli_test_util.hpp"

namespace {

using glass_test::CliRun;
using glass_test::count;

// The variables of the choice, unset (the test program itself may have been started again).
const std::string kClean =
    "env -u OPENBLAS_CORETYPE -u GLASS_BLAS_CORE -u GLASS_BLAS_CORE_CHOSEN "
    "-u GLASS_BLAS_CORE_ASSUME ";

// What the rule says for a Prescott report on this CPU: "Haswell" on an AVX2 + FMA machine.
std::string core_for_prescott() {
  return glass::blas_core::decide("Prescott", glass::blas_core::cpu_features(), {}).core;
}

// The core `glass --version` names ("OpenBLAS 0.3.21, core Haswell" -> "Haswell").
std::string reported_core(const std::string& version_out) {
  const std::size_t at = version_out.find(", core ");
  if (at == std::string::npos) return "";
  const std::size_t from = at + 7;
  return version_out.substr(from, version_out.find('\n', from) - from);
}

class BlasCoreCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() / ("glass_blas_core_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  CliRun glass(const std::string& env, const std::string& args) {
    return glass_test::run_glass(args, dir_, kClean + env + " ");
  }
  // Runs `command` through the shell, its stdout and stderr captured.
  CliRun run(const std::string& command) {
    const std::filesystem::path out = dir_ / "out.txt", err = dir_ / "err.txt";
    const int status = std::system((command + " </dev/null >" + glass_test::q(out.string()) +
                                    " 2>" + glass_test::q(err.string()))
                                       .c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, glass_test::read_file(out),
            glass_test::read_file(err)};
  }
  std::filesystem::path dir_;
};

TEST_F(BlasCoreCli, AnOpenBlasFallbackIsReplacedOnceAndVersionNamesTheCore) {
  const CliRun r = glass("GLASS_BLAS_CORE_ASSUME=Prescott", "--version");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("glass ", 0), 0u) << r.out;
  const std::string chosen = core_for_prescott();
  if (chosen.empty()) {  // a CPU without AVX2 + FMA: nothing to do
    EXPECT_EQ(r.err, "");
    return;
  }
  EXPECT_EQ(count(r.err, "\n"), 1u) << "one line:\n" << r.err;
  EXPECT_EQ(r.err.rfind("note: OpenBLAS ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("chose its Prescott kernels; running with its " + chosen), std::string::npos)
      << r.err;
  EXPECT_EQ(reported_core(r.out), chosen) << r.out;  // OpenBLAS read it after the restart
}

TEST_F(BlasCoreCli, TheUsersCoreAndTheOptOutAreKept) {
  const CliRun own = glass("OPENBLAS_CORETYPE=Nehalem GLASS_BLAS_CORE_ASSUME=Prescott", "-V");
  ASSERT_EQ(own.exit_code, 0) << own.err;
  EXPECT_EQ(own.err, "");
  EXPECT_EQ(reported_core(own.out), "Nehalem") << own.out;

  const CliRun plain = glass("", "-V");
  const CliRun keep = glass("GLASS_BLAS_CORE=keep GLASS_BLAS_CORE_ASSUME=Prescott", "-V");
  ASSERT_EQ(keep.exit_code, 0) << keep.err;
  EXPECT_EQ(keep.err, "");
  EXPECT_EQ(keep.out, plain.out);
}

// Without the hook, a program that did not start again runs a core the rule keeps (on this
// machine's CPU, which OpenBLAS knows or not), and one that did runs Haswell.
TEST_F(BlasCoreCli, OnThisMachineTheRuleDecidesOnce) {
  const CliRun r = glass("", "--version");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string core = reported_core(r.out);
  ASSERT_FALSE(core.empty()) << r.out;
  if (r.err.empty())
    EXPECT_EQ(glass::blas_core::decide(core, glass::blas_core::cpu_features(), {}).core, "")
        << core;
  else
    EXPECT_EQ(core, "Haswell") << r.err;
}

// The test programs and the tutorial programs make the same choice before their main.
TEST_F(BlasCoreCli, TestAndTutorialProgramsChooseBeforeMain) {
  const std::string chosen = core_for_prescott();
  if (chosen.empty()) GTEST_SKIP() << "this CPU has no AVX2 + FMA: nothing is chosen";
  const std::string test_program = glass_test::binary_dir("/tests/test_autograd");
  if (std::filesystem::exists(test_program)) {
    const CliRun t = run(kClean + "GLASS_BLAS_CORE_ASSUME=Prescott " + test_program +
                         " --gtest_filter=BlasCore.AfterTheRestartOpenBlasRunsTheChosenCore");
    EXPECT_EQ(t.exit_code, 0) << t.out << t.err;
    EXPECT_EQ(count(t.err, "note: OpenBLAS"), 1u) << t.err;
    EXPECT_NE(t.out.find("[  PASSED  ] 1 test"), std::string::npos) << t.out;  // not skipped
  }
  const std::string tutorial = glass_test::binary_dir("/tutorials/01_tensores");
  if (!std::filesystem::exists(tutorial)) GTEST_SKIP() << "no " << tutorial;
  const CliRun plain = run(kClean + tutorial);
  const CliRun restarted = run(kClean + "GLASS_BLAS_CORE_ASSUME=Prescott " + tutorial);
  ASSERT_EQ(restarted.exit_code, 0) << restarted.err;
  EXPECT_EQ(restarted.out, plain.out);
  EXPECT_EQ(count(restarted.err, "\n"), 1u) << restarted.err;
  EXPECT_EQ(restarted.err.rfind("note: OpenBLAS ", 0), 0u) << restarted.err;
}

}  // namespace
