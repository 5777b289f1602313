// The OpenBLAS core choice (autograd/blas_core.hpp) as a pure function: the core OpenBLAS
// reported, the CPU's features and the environment in, the core to run with (or none) out. The
// restart of the real program is tested in tests/cli/blas_core_test.cpp.

#include "autograd/blas_core.hpp"

#include <cblas.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace {

using glass::blas_core::CpuFeatures;
using glass::blas_core::decide;
using glass::blas_core::Environment;

// A Haswell-class CPU (AVX2 + FMA) on an OS that saves the YMM registers, no AVX-512.
CpuFeatures avx2_fma() {
  CpuFeatures f;
  f.avx = f.fma = f.avx2 = f.os_ymm = true;
  return f;
}

// The Intel CPUs OpenBLAS 0.3.21 does not know (family 6 model 207): AVX-512 as well.
CpuFeatures avx512() {
  CpuFeatures f = avx2_fma();
  f.avx512f = f.avx512dq = f.avx512cd = f.avx512bw = f.avx512vl = f.os_zmm = true;
  return f;
}

TEST(BlasCore, APreAvx2CoreOnAnAvx2FmaCpuRunsHaswell) {
  for (const char* core : {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom",
                           "Sandybridge", "Barcelona", "prescott"}) {
    EXPECT_EQ(decide(core, avx2_fma(), {}).core, "Haswell") << core;
    EXPECT_EQ(decide(core, avx512(), {}).core, "Haswell") << core << " (AVX-512: still Haswell)";
  }
}

TEST(BlasCore, ACpuWithoutAvx2OrFmaKeepsItsCore) {
  CpuFeatures sse_only;  // a real Prescott-era CPU: nothing past SSE3
  EXPECT_EQ(decide("Prescott", sse_only, {}).core, "");
  CpuFeatures sandy = avx2_fma();  // AVX but no AVX2 / FMA (Sandy Bridge)
  sandy.avx2 = sandy.fma = false;
  EXPECT_EQ(decide("Sandybridge", sandy, {}).core, "");
  CpuFeatures no_fma = avx2_fma();
  no_fma.fma = false;
  EXPECT_EQ(decide("Prescott", no_fma, {}).core, "");
  CpuFeatures no_avx2 = avx2_fma();
  no_avx2.avx2 = false;
  EXPECT_EQ(decide("Prescott", no_avx2, {}).core, "");
}

TEST(BlasCore, AnOsThatDoesNotSaveTheYmmRegistersKeepsTheCore) {
  CpuFeatures f = avx512();
  f.os_ymm = f.os_zmm = false;  // XCR0 without the AVX state: AVX code would crash
  const auto d = decide("Prescott", f, {});
  EXPECT_EQ(d.core, "");
  EXPECT_NE(d.reason.find("XCR0"), std::string::npos) << d.reason;
}

TEST(BlasCore, ACoreOfAvx2OrWiderIsKept) {
  for (const char* core :
       {"Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids", "Excavator", "Unknown", ""})
    EXPECT_EQ(decide(core, avx512(), {}).core, "") << core;
}

TEST(BlasCore, TheUsersOwnChoiceIsKept) {
  Environment env;
  env.openblas_coretype = "Prescott";  // even the slow one, when asked for
  EXPECT_EQ(decide("Prescott", avx2_fma(), env).core, "");
  env.openblas_coretype = "";  // set but empty: OpenBLAS ignores it, so do we
  EXPECT_EQ(decide("Prescott", avx2_fma(), env).core, "Haswell");
}

TEST(BlasCore, GlassBlasCoreKeepOptsOut) {
  Environment env;
  env.glass_blas_core = "keep";
  EXPECT_EQ(decide("Prescott", avx2_fma(), env).core, "");
  env.glass_blas_core = "KEEP";
  EXPECT_EQ(decide("Prescott", avx2_fma(), env).core, "");
}

TEST(BlasCore, AProgramStartedAgainDoesNotStartAgain) {
  Environment env;
  env.chosen = "1";  // the marker the restart sets: no loop, even if OpenBLAS ignored the core
  EXPECT_EQ(decide("Prescott", avx2_fma(), env).core, "");
}

TEST(BlasCore, TheMessageNamesBothCoresTheOptOutAndSkylakeXWhereItFits) {
  const auto d = decide("Prescott", avx2_fma(), {});
  const std::string line =
      glass::blas_core::announcement("OpenBLAS 0.3.21", "Prescott", d, avx2_fma());
  EXPECT_EQ(line,
            "note: OpenBLAS 0.3.21 does not know this CPU and chose its Prescott kernels; running "
            "with its Haswell kernels (AVX2 + FMA) instead (GLASS_BLAS_CORE=keep keeps Prescott)");
  const std::string wide =
      glass::blas_core::announcement("OpenBLAS 0.3.21", "Prescott", d, avx512());
  EXPECT_NE(wide.find("OPENBLAS_CORETYPE=SkylakeX"), std::string::npos) << wide;
  EXPECT_EQ(wide.find('\n'), std::string::npos) << "one line";
  CpuFeatures no_zmm = avx512();
  no_zmm.os_zmm = false;
  EXPECT_FALSE(glass::blas_core::fits_skylakex(no_zmm));
  CpuFeatures no_bw = avx512();
  no_bw.avx512bw = false;
  EXPECT_FALSE(glass::blas_core::fits_skylakex(no_bw));
}

TEST(BlasCore, DescribeNamesTheLibraryVersionAndCore) {
  EXPECT_EQ(glass::blas_core::describe(
                "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY Cooperlake MAX_THREADS=64",
                "Cooperlake"),
            "OpenBLAS 0.3.21, core Cooperlake");
  EXPECT_EQ(glass::blas_core::describe("OpenBLAS", "Haswell"), "OpenBLAS, core Haswell");
  EXPECT_EQ(glass::blas_core::description().rfind("OpenBLAS ", 0), 0u);
}

// cpuid's answers agree with the kernel's view of this CPU (/proc/cpuinfo), which also drops
// the AVX flags when the OS does not save their registers.
TEST(BlasCore, CpuFeaturesAgreeWithProcCpuinfo) {
#if !(defined(__x86_64__) || defined(__i386__))
  GTEST_SKIP() << "cpuid is x86's";
#endif
  std::ifstream in("/proc/cpuinfo");
  std::string line, flags_line;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0) {
      flags_line = line.substr(line.find(':') + 1);
      break;
    }
  if (flags_line.empty()) GTEST_SKIP() << "no /proc/cpuinfo flags";
  std::set<std::string> flags;
  std::istringstream words(flags_line);
  for (std::string w; words >> w;) flags.insert(w);
  const CpuFeatures f = glass::blas_core::cpu_features();
  EXPECT_EQ(f.avx && f.os_ymm, flags.count("avx") == 1);
  EXPECT_EQ(f.avx2 && f.os_ymm, flags.count("avx2") == 1);
  EXPECT_EQ(f.fma && f.os_ymm, flags.count("fma") == 1);
  EXPECT_EQ(f.avx512f && f.os_zmm, flags.count("avx512f") == 1);
  EXPECT_EQ(f.avx512bw && f.os_zmm, flags.count("avx512bw") == 1);
  EXPECT_EQ(f.avx512dq && f.os_zmm, flags.count("avx512dq") == 1);
  EXPECT_EQ(f.avx512vl && f.os_zmm, flags.count("avx512vl") == 1);
  EXPECT_EQ(f.avx512cd && f.os_zmm, flags.count("avx512cd") == 1);
}

// This test program links the choice made before main (blas_core_at_start.cpp): when it
// started itself again, OpenBLAS runs the core it was started with. tests/cli/blas_core_test.cpp
// runs this test with GLASS_BLAS_CORE_ASSUME=Prescott, so that it runs on every machine.
TEST(BlasCore, AfterTheRestartOpenBlasRunsTheChosenCore) {
  const char* chosen = std::getenv("GLASS_BLAS_CORE_CHOSEN");
  const char* core = std::getenv("OPENBLAS_CORETYPE");
  if (chosen == nullptr || core == nullptr) GTEST_SKIP() << "not started again: nothing chosen";
  EXPECT_STRCASEEQ(openblas_get_corename(), core);
}

}  // namespace
