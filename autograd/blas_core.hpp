#pragma once
// Which OpenBLAS kernels run: the library's "core".
//
// OpenBLAS built with DYNAMIC_ARCH (Debian's) picks its kernels once, in the library's own
// constructor before main, from the CPU's vendor, family and model, or from the variable
// OPENBLAS_CORETYPE when it is set. A version that does not know a CPU falls back to an old
// core: Debian 12's OpenBLAS 0.3.21 runs recent Intel CPUs (family 6 model 207, 13th-gen Core
// model 186; known from OpenBLAS 0.3.25 on) on its Prescott (SSE3) kernels, a quarter of the
// speed their AVX2 + FMA units give. The program then starts itself again with a core the CPU
// does support (docs/en/blas-core.md):
//
//   OpenBLAS reports          the CPU has (cpuid, and the OS saves the registers)   run with
//   a pre-AVX2 core           AVX + AVX2 + FMA, YMM state (XCR0 bits 1, 2)          Haswell
//   (Prescott, Core2, ...)    less than that                                        its own
//   Haswell, Zen, SkylakeX,   anything                                              its own
//   Cooperlake, any other
// and never when the user set OPENBLAS_CORETYPE, set GLASS_BLAS_CORE=keep, or the program was
// already started again (GLASS_BLAS_CORE_CHOSEN). Haswell is the conservative choice: its
// kernels need AVX2 and FMA only. SkylakeX (AVX-512) was faster on the one such Intel CPU
// measured, but is not chosen here; the message names it where it fits.

#include <string>
#include <string_view>

namespace glass::blas_core {

/// What this CPU can run: the instruction sets (cpuid) and whether the operating system saves
/// their registers on a context switch (XGETBV's XCR0): without that, AVX code crashes.
struct CpuFeatures {
  bool avx = false;       ///< cpuid 1: ECX bit 28
  bool fma = false;       ///< cpuid 1: ECX bit 12 (FMA3)
  bool avx2 = false;      ///< cpuid 7: EBX bit 5
  bool avx512f = false;   ///< cpuid 7: EBX bit 16
  bool avx512dq = false;  ///< cpuid 7: EBX bit 17
  bool avx512cd = false;  ///< cpuid 7: EBX bit 28
  bool avx512bw = false;  ///< cpuid 7: EBX bit 30
  bool avx512vl = false;  ///< cpuid 7: EBX bit 31
  bool os_ymm = false;    ///< XCR0 bits 1 and 2: the OS saves the XMM and YMM registers
  bool os_zmm = false;    ///< XCR0 bits 5, 6, 7 too: the opmask and the whole ZMM registers
};

/// This CPU's features (all false on a processor other than x86-64).
CpuFeatures cpu_features();

/// The environment variables the choice reads; nullptr or "" means unset.
struct Environment {
  const char* openblas_coretype = nullptr;  ///< OPENBLAS_CORETYPE: the user's own choice
  const char* glass_blas_core = nullptr;    ///< GLASS_BLAS_CORE: "keep" opts out
  const char* chosen = nullptr;             ///< GLASS_BLAS_CORE_CHOSEN: already started again
};

/// What to do about the core OpenBLAS chose.
struct Decision {
  std::string core;    ///< empty: keep OpenBLAS's choice; else the OPENBLAS_CORETYPE to run with
  std::string reason;  ///< why, in a few words (for tests and the message)
};

/// True for the cores whose kernels stop short of AVX2 (Prescott, Core2, Nehalem, Atom,
/// Sandybridge, Barcelona, Bulldozer, ...; case-insensitive). Haswell, Zen, SkylakeX, Cooperlake,
/// Excavator and names this list does not hold are false.
bool is_pre_avx2_core(std::string_view corename);

/// True when the CPU and the OS support every AVX-512 subset OpenBLAS's SkylakeX kernels use
/// (F, CD, BW, DQ, VL, and the ZMM state).
bool fits_skylakex(const CpuFeatures& cpu);

/// The rule of the table above, as a pure function: `corename` is what OpenBLAS reports
/// (openblas_get_corename()), `cpu` what the CPU supports, `env` the variables.
Decision decide(std::string_view corename, const CpuFeatures& cpu, const Environment& env);

/// The one line said on stderr when the program starts again with `decision.core`, e.g.
/// "note: OpenBLAS 0.3.21 does not know this CPU and chose its Prescott kernels; running with
/// its Haswell kernels (AVX2 + FMA) instead (GLASS_BLAS_CORE=keep keeps Prescott)".
std::string announcement(std::string_view version, std::string_view corename,
                         const Decision& decision, const CpuFeatures& cpu);

/// "OpenBLAS 0.3.21, core Haswell" from openblas_get_config() ("OpenBLAS 0.3.21 NO_LAPACKE
/// DYNAMIC_ARCH ...") and the core name.
std::string describe(std::string_view config, std::string_view corename);

/// describe() of the OpenBLAS this program runs (for `glass --version`, the benchmarks' tables).
std::string description();

/// Applies decide() to this process, first thing in main (or from a constructor before main):
/// when it says to, sets OPENBLAS_CORETYPE and GLASS_BLAS_CORE_CHOSEN=1, says so in one line on
/// stderr and starts the same program again (execv of /proc/self/exe with the same argv), so
/// that OpenBLAS's constructor reads the variable; otherwise returns and changes nothing. If the
/// restart fails it says so and goes on with OpenBLAS's choice.
/// For tests, GLASS_BLAS_CORE_ASSUME=NAME makes it take NAME for the core OpenBLAS reported.
void choose_at_start(char** argv);

}  // namespace glass::blas_core
