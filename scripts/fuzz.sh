#!/usr/bin/env bash
# Fuzzes the readers with libFuzzer (clang, under AddressSanitizer + UndefinedBehaviorSanitizer):
# builds the harnesses of tests/fuzz into ./build-fuzz and runs each for N seconds, as many at
# a time as there are cores. Harnesses: text (UTF-8 reader and tokenizer), tokenizer_json (the
# BPE tokenizer's tokenizer.json reader, trainer and encoder), safetensors,
# config_json, manifest (a save's manifest.json and the checks against it), train_state,
# http_request (the request reader of glass serve), interp_record (a save's interp.json as
# glass serve reads it).
# Usage: scripts/fuzz.sh [--seconds N] [HARNESS ...]
#   scripts/fuzz.sh --seconds 20              every harness for 20 s (what CI runs)
#   scripts/fuzz.sh --seconds 14400 text      the text reader for 4 hours
# Each run starts from the seeds in tests/fuzz/corpus/<harness>/ and the inputs earlier runs
# kept in build-fuzz/corpus/<harness>/ (new inputs that reach new code are added there). A
# crash, a sanitizer report, an unexpected exception or a failed property stops the run, saves
# the input as build-fuzz/artifacts/<harness>-crash-<sha1> and fails the script; replay it with
# `build-fuzz/tests/fuzz/fuzz_<harness> build-fuzz/artifacts/<harness>-crash-<sha1>`.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=60
harnesses=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="${2:?--seconds needs a number}"; shift 2 ;;
    --seconds=*) seconds="${1#--seconds=}"; shift ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) harnesses+=("$1"); shift ;;
  esac
done
case "$seconds" in ''|*[!0-9]*) echo "fuzz: --seconds needs a whole number, got '$seconds'" >&2; exit 2 ;; esac
all=(text tokenizer_json safetensors config_json manifest train_state http_request interp_record)
[ ${#harnesses[@]} -eq 0 ] && harnesses=("${all[@]}")
for h in "${harnesses[@]}"; do
  [ -d "tests/fuzz/corpus/$h" ] || { echo "fuzz: unknown harness '$h' (harnesses: ${all[*]})" >&2; exit 2; }
done

GLASS_WITH_FUZZ=1 bash scripts/install-deps.sh
cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS_RELEASE="-O1 -g -DNDEBUG" -DGLASS_FUZZ=ON -DGLASS_BUILD_TESTS=OFF \
  -DGLASS_BUILD_BENCH=OFF -DGLASS_BUILD_TUTORIALS=OFF >/dev/null
targets=()
for h in "${harnesses[@]}"; do targets+=("fuzz_$h"); done
cmake --build build-fuzz -j"$(nproc)" --target "${targets[@]}"

export ASAN_OPTIONS="detect_leaks=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:${UBSAN_OPTIONS:-}"
mkdir -p build-fuzz/artifacts build-fuzz/logs
# fuzz_one HARNESS: runs it for $seconds; its output goes to build-fuzz/logs/HARNESS.log and its
# exit code to build-fuzz/logs/HARNESS.rc.
fuzz_one() {
  local h="$1" rc
  mkdir -p "build-fuzz/corpus/$h"
  # -rss_limit_mb: the readers must refuse absurd sizes before allocating them. The progress
  # lines (new inputs, new functions) are left out; the final statistics and any report stay.
  set +e
  "build-fuzz/tests/fuzz/fuzz_$h" -max_total_time="$seconds" -rss_limit_mb=2048 \
    -timeout=10 -print_final_stats=1 -artifact_prefix="build-fuzz/artifacts/$h-" \
    "build-fuzz/corpus/$h" "tests/fuzz/corpus/$h" 2>&1 |
    grep -v -E '^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse)|^[[:space:]]+NEW_FUNC|# Uses: ' |
    if [ "$parallel" -eq 1 ]; then tee "build-fuzz/logs/$h.log"; else cat >"build-fuzz/logs/$h.log"; fi
  rc=${PIPESTATUS[0]}
  set -e
  echo "$rc" >"build-fuzz/logs/$h.rc"
}
# A harness runs on one core: as many run at once as there are cores (each still gets its
# full $seconds), so that CI's 2 cores fuzz two harnesses at a time. One at a time, the output
# is shown as it comes.
parallel="$(nproc)"
[ "$parallel" -le "${#harnesses[@]}" ] || parallel=${#harnesses[@]}
echo "fuzz: ${harnesses[*]}, ${seconds} s each, ${parallel} at a time"
for h in "${harnesses[@]}"; do
  rm -f "build-fuzz/logs/$h.rc"
  while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n || true; done
  [ "$parallel" -eq 1 ] && echo "fuzz: $h for ${seconds} s"
  fuzz_one "$h" &
done
wait
failed=0
for h in "${harnesses[@]}"; do
  if [ "$parallel" -gt 1 ]; then echo "fuzz: $h for ${seconds} s"; cat "build-fuzz/logs/$h.log"; fi
  rc="$(cat "build-fuzz/logs/$h.rc" 2>/dev/null || echo missing)"
  [ "$rc" = 0 ] || { echo "fuzz: $h failed (exit $rc, see above)" >&2; failed=1; }
done
[ "$failed" -eq 0 ] || exit 1
echo "fuzz: all harnesses passed"
