// `glass train --optimizer muon` through the real binary: the run says which optimizer trains
// what, a resume keeps it and refuses another one in the words of the flags, and a misspelt
// optimizer gets a did-you-mean; Muon's rate is refused for an AdamW run.
#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "cli_test_util.hpp"

namespace fs = std::filesystem;
using glass_test::CliRun;
using glass_test::q;

namespace {

struct MuonCliDir {
  fs::path dir = fs::temp_directory_path() / ("glass-muon-cli-" + std::to_string(::getpid()));
  MuonCliDir() {
    fs::remove_all(dir);
    fs::create_directories(dir);
    glass_test::write_file(dir / "text.txt", glass_test::corpus_start(6000));
  }
  ~MuonCliDir() { fs::remove_all(dir); }
  CliRun glass(const std::string& args) const { return glass_test::run_glass(args, dir); }
  std::string train(const std::string& out) const {
    return "train --data " + q((dir / "text.txt").string()) + " --out " + q((dir / out).string()) +
           glass_test::tiny(0) + " --eval-every 5";
  }
};

}  // namespace

TEST(MuonCli, AMisspeltOptimizerGetsDidYouMeanAndWritesNothing) {
  const MuonCliDir d;
  const CliRun r = d.glass(d.train("never") + " --iters 5 --optimizer adamx");
  // The exit code of every bad flag value (CLI11's ValidationError), as --iters 0.
  EXPECT_EQ(r.exit_code, 105) << r.err;
  EXPECT_NE(r.err.find("--optimizer: unknown optimizer 'adamx'; did you mean adamw? (the "
                       "optimizers: adamw, muon)"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(d.dir / "never"));
  const CliRun far = d.glass(d.train("never") + " --iters 5 --optimizer sgd");
  EXPECT_NE(far.err.find("unknown optimizer 'sgd' (the optimizers: adamw, muon)"),
            std::string::npos)
      << far.err;
}

TEST(MuonCli, AMuonRunSaysSoResumesWithMuonAndRefusesAdamW) {
  const MuonCliDir d;
  const CliRun first = d.glass(d.train("run") + " --iters 5 --optimizer Muon --muon-lr 0.03");
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  EXPECT_NE(first.out.find("optimizer: Muon (lr 0.03, the same schedule) on the 7 matrices of "
                           "the blocks"),
            std::string::npos)
      << first.out;
  const CliRun refused = d.glass(d.train("run") + " --iters 10 --resume --optimizer adamw");
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("--optimizer adamw (the run was trained with --optimizer muon)"),
            std::string::npos)
      << refused.err;
  const CliRun resumed = d.glass(d.train("run") + " --iters 10 --resume");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  EXPECT_NE(resumed.out.find("optimizer: Muon (lr 0.03"), std::string::npos) << resumed.out;
}

TEST(MuonCli, RefusesMuonsRateForAnAdamWRun) {
  const MuonCliDir d;
  const CliRun fresh = d.glass(d.train("fresh") + " --iters 5 --muon-lr 0.05");
  EXPECT_NE(fresh.exit_code, 0);
  EXPECT_NE(fresh.err.find("--muon-lr 0.05 applies to the muon optimizer only"), std::string::npos)
      << fresh.err;
  const CliRun first = d.glass(d.train("run") + " --iters 5 --optimizer adamw");
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  const CliRun resumed = d.glass(d.train("run") + " --iters 10 --resume --muon-lr 0.05");
  EXPECT_NE(resumed.exit_code, 0);
  EXPECT_NE(resumed.err.find("--muon-lr 0.05 applies to the muon optimizer only"),
            std::string::npos)
      << resumed.err;
  EXPECT_FALSE(fs::exists(d.dir / "run" / "step-000010")) << "the resume trained";
}
