#!/usr/bin/env bash
# Time and memory of `glass sae train` (the SAE's training is a benchmark, not a timed test):
# runs it under /usr/bin/time -v on a checkpoint and prints its figures, the wall time, the CPU
# time and the peak resident memory. Extra arguments go to `glass sae train`.
# Usage: bench/sae_train.sh [RUN_DIR] [glass sae train flags...]
#   e.g. bench/sae_train.sh runs/domcasmurro --steps 3000 --latents 1024 --k 16
set -euo pipefail
cd "$(dirname "$0")/.."
run="${1:-runs/domcasmurro}"
shift || true
log=$(mktemp)
trap 'rm -f "$log"' EXIT
/usr/bin/time -v ./build/glass sae train -m "$run" --out "$(mktemp -d)/sae.safetensors" "$@" \
  2>"$log"
grep -E "Elapsed \(wall|User time|System time|Maximum resident" "$log"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
