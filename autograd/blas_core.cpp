// Which OpenBLAS kernels run (blas_core.hpp). Tested in tests/autograd/blas_core_test.cpp (the
// rule) and tests/cli/blas_core_test.cpp (the restart of the real program).

#include "autograd/blas_core.hpp"

#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace glass::blas_core {
namespace {

bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

bool set(const char* value) { return value != nullptr && value[0] != '\0'; }

// The first two words of openblas_get_config(): the library's name and its version.
std::string_view name_and_version(std::string_view config) {
  std::size_t end = config.find(' ');
  if (end != std::string_view::npos) end = config.find(' ', end + 1);
  return config.substr(0, end);
}

// The core GLASS_BLAS_CORE chooses when it applies: kernels of AVX2 + FMA, nothing wider.
constexpr const char* kSafeCore = "Haswell";

}  // namespace

CpuFeatures cpu_features() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0) return f;
  f.fma = (c >> 12) & 1;
  f.avx = (c >> 28) & 1;
  const bool osxsave = (c >> 27) & 1;  // the OS turned XSAVE on: XGETBV may be used
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) != 0) {
    f.avx2 = (b >> 5) & 1;
    f.avx512f = (b >> 16) & 1;
    f.avx512dq = (b >> 17) & 1;
    f.avx512cd = (b >> 28) & 1;
    f.avx512bw = (b >> 30) & 1;
    f.avx512vl = (b >> 31) & 1;
  }
  if (osxsave) {
    std::uint32_t xcr0 = 0, high = 0;
    __asm__ volatile("xgetbv" : "=a"(xcr0), "=d"(high) : "c"(0));
    f.os_ymm = (xcr0 & 0x06) == 0x06;  // SSE and AVX state
    f.os_zmm = (xcr0 & 0xe6) == 0xe6;  // and opmask, ZMM_Hi256, Hi16_ZMM
  }
#endif
  return f;
}

bool is_pre_avx2_core(std::string_view corename) {
  // OpenBLAS's x86-64 cores (driver/others/dynamic.c) whose kernels use SSE or AVX at most.
  static constexpr std::string_view kPreAvx2[] = {
      "Katmai", "Coppermine",  "Northwood", "Prescott",  "Banias",     "Atom",         "Core2",
      "Penryn", "Dunnington",  "Nehalem",   "Athlon",    "Opteron",    "Opteron_SSE3", "Barcelona",
      "Nano",   "Sandybridge", "Bobcat",    "Bulldozer", "Piledriver", "Steamroller"};
  return std::any_of(std::begin(kPreAvx2), std::end(kPreAvx2),
                     [&](std::string_view name) { return same_name(name, corename); });
}

bool fits_skylakex(const CpuFeatures& cpu) {
  return cpu.avx512f && cpu.avx512cd && cpu.avx512bw && cpu.avx512dq && cpu.avx512vl &&
         cpu.os_ymm && cpu.os_zmm;
}

Decision decide(std::string_view corename, const CpuFeatures& cpu, const Environment& env) {
  if (set(env.chosen)) return {"", "already started again with a chosen core"};
  if (set(env.openblas_coretype)) return {"", "OPENBLAS_CORETYPE is set: the user's choice"};
  if (env.glass_blas_core != nullptr && same_name(env.glass_blas_core, "keep"))
    return {"", "GLASS_BLAS_CORE=keep"};
  if (!is_pre_avx2_core(corename)) return {"", "OpenBLAS chose a core of AVX2 or wider"};
  if (!(cpu.avx && cpu.avx2 && cpu.fma)) return {"", "the CPU lacks AVX2 or FMA"};
  if (!cpu.os_ymm) return {"", "the OS does not save the YMM registers (XCR0)"};
  return {kSafeCore, "a pre-AVX2 core on a CPU with AVX2 + FMA"};
}

std::string announcement(std::string_view version, std::string_view corename,
                         const Decision& decision, const CpuFeatures& cpu) {
  std::string line = "note: " + std::string(version) + " does not know this CPU and chose its " +
                     std::string(corename) + " kernels; running with its " + decision.core +
                     " kernels (AVX2 + FMA) instead (GLASS_BLAS_CORE=keep keeps " +
                     std::string(corename);
  if (fits_skylakex(cpu)) line += "; OPENBLAS_CORETYPE=SkylakeX uses AVX-512";
  return line + ")";
}

std::string describe(std::string_view config, std::string_view corename) {
  return std::string(name_and_version(config)) + ", core " + std::string(corename);
}

std::string description() { return describe(openblas_get_config(), openblas_get_corename()); }

void choose_at_start(char** argv) {
  const char* assumed = std::getenv("GLASS_BLAS_CORE_ASSUME");  // for tests only
  const std::string reported = set(assumed) ? assumed : openblas_get_corename();
  Environment env;
  env.openblas_coretype = std::getenv("OPENBLAS_CORETYPE");
  env.glass_blas_core = std::getenv("GLASS_BLAS_CORE");
  env.chosen = std::getenv("GLASS_BLAS_CORE_CHOSEN");
  const CpuFeatures cpu = cpu_features();
  const Decision decision = decide(reported, cpu, env);
  if (decision.core.empty()) return;

  const std::string_view version = name_and_version(openblas_get_config());
  std::fprintf(stderr, "%s\n", announcement(version, reported, decision, cpu).c_str());
  std::fflush(nullptr);
  setenv("OPENBLAS_CORETYPE", decision.core.c_str(), 1);
  setenv("GLASS_BLAS_CORE_CHOSEN", "1", 1);
  execv("/proc/self/exe", argv);
  // Still here: the restart failed. Go on as OpenBLAS chose, and leave the variables as they were.
  std::fprintf(stderr, "note: could not start again (%s): running with the %s kernels\n",
               std::strerror(errno), reported.c_str());
  unsetenv("OPENBLAS_CORETYPE");
  unsetenv("GLASS_BLAS_CORE_CHOSEN");
}

}  // namespace glass::blas_core
