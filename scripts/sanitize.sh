#!/usr/bin/env bash
# The test suite of the library and the `glass` program built with AddressSanitizer and
# UndefinedBehaviorSanitizer: configures ./build-asan (gcc, -O1, without tcmalloc), builds them
# and runs every test with CTest. The tutorial and exercise programs are left out here
# (GLASS_BUILD_TUTORIALS=OFF; their tests skip): they are ~90 more programs to build with the
# sanitizers and were ~40 % of this job's test time, the library they call is checked here by
# its own tests, and the normal build (scripts/test.sh) runs every one of them against its
# saved output; GLASS_SANITIZE_TUTORIALS=1 builds and runs them here too. A sanitizer report
# aborts the program that made it and fails the script, also when it came from a `glass`
# process that a test started (every report is also written to build-asan/sanitizer-logs/ and
# checked at the end).
# Usage: scripts/sanitize.sh [CTEST ARGS ...]   e.g. scripts/sanitize.sh -R Tokenizer
# CI runs it after scripts/test.sh (.ci/run).
# Two long tests do less here than in the normal build, which runs them in full (each says so
# where it decides, through the project define GLASS_SANITIZE): the kill/full-disk sweep of
# a save (RunDirCli.AKillOrAFullDisk...) faults each kind of file operation once instead of
# every operation (GLASS_TEST_FULL_FAULT_SWEEP=1 faults every one here too), and
# AttentionPaths.ThirtyTrainingSteps... compares 12 steps instead of 30.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# Without MPI (GLASS_MPI=OFF): LeakSanitizer reports OpenMPI's own allocations as leaks (a
# two-rank MPI hello world: ~120 KB in ~3300 allocations, in OpenMPI 4.1). This build checks
# the program as one process (the MPI tests skip); the normal build (scripts/test.sh) runs the
# `mpirun -np 2` tests.
tutorials=$([ "${GLASS_SANITIZE_TUTORIALS:-0}" = 1 ] && echo ON || echo OFF)
# The tutorial tests skip when build-asan/tutorials is absent: programs an earlier build left
# there (perhaps of chapters since renumbered) must not run instead.
[ "$tutorials" = OFF ] && rm -rf build-asan/tutorials
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -g1 -DNDEBUG" \
  -DGLASS_SANITIZE=ON -DGLASS_BUILD_BENCH=OFF -DGLASS_MPI=OFF -DGLASS_BUILD_TUTORIALS="$tutorials" \
  >/dev/null
cmake --build build-asan -j"$(nproc)"

logs="$PWD/build-asan/sanitizer-logs"
rm -rf "$logs" && mkdir -p "$logs"
# halt_on_error + a distinct exit code: a report can never pass for an expected error exit.
export ASAN_OPTIONS="halt_on_error=1:exitcode=86:detect_leaks=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1:log_path=$logs/asan"
export UBSAN_OPTIONS="halt_on_error=1:exitcode=86:print_stacktrace=1:log_path=$logs/ubsan"
status=0
# export_llama_cpp is left out: llama.cpp (node-llama-cpp) is not built with the sanitizers, and
# the exporters themselves run under them in test_export (ExportGguf, ExportLlama2c) and
# test_cli (ExportCli).
ctest --test-dir build-asan --output-on-failure -j"$(nproc)" -E '^export_llama_cpp$' "$@" || status=$?
if compgen -G "$logs/*" >/dev/null; then
  echo "sanitize: sanitizer reports:" >&2
  for f in "$logs"/*; do echo "---- $f" >&2; cat "$f" >&2; done
  status=1
fi
exit $status
