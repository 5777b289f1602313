# The instruction set of every target, included by the top-level CMakeLists.txt before any target
# is defined (add_compile_options here reaches every target).
#
# GLASS_ARCH is passed as -march=GLASS_ARCH to every target, so the same source gives the same
# machine code on every machine it is built on, whatever that machine's CPU. The default on
# x86-64 is x86-64-v3 (AVX2 + FMA + F16C + BMI2: Intel Haswell 2013 and later, AMD Zen and
# later), the level the xsimd kernels are written for. "native" (this CPU) and x86-64-v4
# (AVX-512) are opt-in; "default" passes no -march (the compiler's own baseline, e.g. on ARM).
# GCC 12.2 emits wrong code for some vector initialisers when AVX-512 is enabled (it builds
# `std::vector<double>{0.5, 0.5, 0, 0}` as four 0.5s with a vpbroadcastq; docs/en/build.md), so
# an AVX-512 target is refused with a compiler that fails a probe of that, or with GCC before 13
# where this CPU cannot run the probe, unless GLASS_ALLOW_AVX512_MISCOMPILE is ON.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(glass_default_arch "x86-64-v3")
else()
  set(glass_default_arch "default")
endif()
set(GLASS_ARCH "${glass_default_arch}" CACHE STRING
    "Instruction set for -march (x86-64-v3 by default; native, x86-64-v4, ... are opt-in; default = none)")
if(DEFINED GLASS_NATIVE)
  message(WARNING "GLASS_NATIVE is gone: the build targets -march=${GLASS_ARCH}; "
                  "-DGLASS_ARCH=native opts into this machine's CPU")
endif()
option(GLASS_ALLOW_AVX512_MISCOMPILE "Build an AVX-512 target with a compiler that miscompiles it (GCC 12)" OFF)
if(NOT GLASS_ARCH STREQUAL "default")
  # Which vector extensions does this -march enable? Ask the compiler (its predefined macros).
  execute_process(
    COMMAND ${CMAKE_CXX_COMPILER} -march=${GLASS_ARCH} -dM -E -x c++ /dev/null
    OUTPUT_VARIABLE glass_arch_macros ERROR_VARIABLE glass_arch_error RESULT_VARIABLE glass_arch_rc)
  if(NOT glass_arch_rc EQUAL 0)
    message(FATAL_ERROR "GLASS_ARCH=${GLASS_ARCH}: the compiler does not accept -march=${GLASS_ARCH}: "
                        "${glass_arch_error}")
  endif()
  if(glass_arch_macros MATCHES "__AVX512F__" AND NOT GLASS_ALLOW_AVX512_MISCOMPILE)
    # The probe (cmake/avx512_vector_init_probe.cpp) says whether this compiler builds four
    # initializer lists right for this target; where this CPU cannot run it, GCC before 13 is
    # taken as wrong (Debian 12's GCC 12.2 is; newer GCCs were not tried here).
    string(MAKE_C_IDENTIFIER "GLASS_AVX512_PROBE_${CMAKE_CXX_COMPILER_ID}_${CMAKE_CXX_COMPILER_VERSION}_${GLASS_ARCH}" probe)
    try_run(${probe} ${probe}_COMPILED ${CMAKE_BINARY_DIR}/avx512_probe
            ${PROJECT_SOURCE_DIR}/cmake/avx512_vector_init_probe.cpp
            COMPILE_DEFINITIONS -O2 -march=${GLASS_ARCH} CXX_STANDARD 17)
    set(glass_miscompiles OFF)
    if(${probe}_COMPILED AND "${${probe}}" STREQUAL "1")
      set(glass_miscompiles ON)
      set(glass_evidence "the probe cmake/avx512_vector_init_probe.cpp got wrong numbers")
    elseif(NOT "${${probe}}" STREQUAL "0" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU"
           AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
      set(glass_miscompiles ON)
      set(glass_evidence "GCC 12.2 does, and this CPU cannot run the probe to tell")
    endif()
    if(glass_miscompiles)
      message(FATAL_ERROR
        "GLASS_ARCH=${GLASS_ARCH} enables AVX-512, and ${CMAKE_CXX_COMPILER_ID} "
        "${CMAKE_CXX_COMPILER_VERSION} miscompiles vector initialisers with it (${glass_evidence}; "
        "docs/en/build.md). Keep the default -DGLASS_ARCH=x86-64-v3, use another compiler "
        "(clang++), or -DGLASS_ALLOW_AVX512_MISCOMPILE=ON to build it anyway.")
    endif()
  endif()
  if(glass_arch_macros MATCHES "__AVX512F__")
    message(STATUS "GlassLLM: -march=${GLASS_ARCH} (AVX-512: an opt-in target, not the tested baseline)")
  else()
    message(STATUS "GlassLLM: -march=${GLASS_ARCH}")
  endif()
  add_compile_options(-march=${GLASS_ARCH})
endif()
