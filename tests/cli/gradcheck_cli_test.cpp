// `glass gradcheck` through the real binary: every op passes, rows are printed, bad names fail.

#include <sys/wait.h>

#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "cli_test_util.hpp"
#include "test_paths.hpp"

namespace {

struct CliResult {
  int exit_code;
  std::string output;  // stdout and stderr together
};

CliResult glass(const std::string& args) {
  const std::string cmd =
      std::string(glass_test::binary_dir("/glass ")) + args + " 2>&1 </dev/null";
  CliResult run{-1, ""};
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return run;
  char buffer[4096];
  std::size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) run.output.append(buffer, n);
  const int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

using glass_test::count;

TEST(GradcheckCli, EveryOpPasses) {
  const CliResult run = glass("gradcheck");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_GE(count(run.output, " PASS"), 20u) << run.output;  // at least 20 ops are checked
  EXPECT_EQ(count(run.output, "FAIL"), 0u) << run.output;
  for (const char* op :
       {"matmul", "softmax", "cross_entropy", "rms_norm", "rope", "repeat_kv", "masked_fill",
        "embedding", "linear", "concat", "silu_mul", "causal_attention"}) {
    EXPECT_NE(run.output.find(std::string("\n") + op), std::string::npos) << "no row for " << op;
  }
}

TEST(GradcheckCli, OneOp) {
  const CliResult run = glass("gradcheck --op softmax");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_GE(count(run.output, " PASS"), 1u);
  EXPECT_EQ(run.output.find("matmul"), std::string::npos) << run.output;
}

TEST(GradcheckCli, UnknownOpIsAnErrorListingValidNames) {
  const CliResult run = glass("gradcheck --op no_such_op");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.output.find("unknown op 'no_such_op'"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("softmax"), std::string::npos) << run.output;
}

}  // namespace
