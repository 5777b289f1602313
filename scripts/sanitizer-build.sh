# Sourced by scripts/sanitize.sh and scripts/fuzz.sh: installs what the sanitizer build needs and
# configures ./build-asan, one clang build with AddressSanitizer + UndefinedBehaviorSanitizer and
# libFuzzer's coverage instrumentation (GLASS_FUZZ=ON), which holds the whole test suite and the
# fuzz harnesses. Both scripts configure it alike, so the second one builds nothing again.
# - clang (Debian's clang 14, with libclang-rt-14-dev for the fuzzer runtime, llvm-14 for readable
#   reports and libomp-dev for OpenMP), -O1 with line tables;
# - without tcmalloc (ASan brings its own allocator) and without MPI (LeakSanitizer reports
#   OpenMPI's own allocations as leaks: a two-rank MPI hello world leaves ~120 KB in ~3300
#   allocations in OpenMPI 4.1), so the MPI tests skip here and run in the normal build;
# - no benchmarks (the normal build compiles them).
configure_sanitizer_build() {
  GLASS_WITH_FUZZ=1 bash scripts/install-deps.sh
  cmake -S . -B build-asan -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS_RELEASE="-O1 -gline-tables-only -DNDEBUG" -DGLASS_FUZZ=ON \
    -DGLASS_BUILD_BENCH=OFF -DGLASS_MPI=OFF >/dev/null
}
