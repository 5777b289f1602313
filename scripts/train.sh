#!/usr/bin/env bash
# The main job from a fresh machine: install packages, build, train on the bundled corpus, sample.
# Extra arguments go to `glass train` (e.g. --iters 500, --time 3m, --resume, --overwrite, --out DIR).
# A run is never replaced: when runs/domcasmurro already holds one and neither --out, --resume
# nor --overwrite is given, this run goes to the next free runs/domcasmurro-N.
set -euo pipefail
cd "$(dirname "$0")/.."
GLASS_WITH_BROWSER=0 GLASS_WITH_NODE=0 bash scripts/install-deps.sh
bash scripts/build.sh glass

# The speedrun recipe (bench/README.md, "Speedrun"; docs/treino.md): Muon on the blocks' matrices
# (at its default --muon-lr 0.01), their output projections started at zero, 1200 steps. On 2
# cores it reaches a lower best validation loss than glass train's own default (AdamW, 2000 steps)
# in less time. --iters or --time replaces the step count and --zero-init-out[=false] the
# initialisation; --optimizer replaces the whole recipe (glass train's defaults for the rest);
# --resume keeps the recipe the run recorded.
optimizer=(--optimizer muon)
zero_init=(--zero-init-out)
iters=(--iters 1200)

out=""
keep_dir=0  # --resume or --overwrite: the user means this directory
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[i]}" in
    --out) out="${args[i + 1]:-}" ;;
    --out=*) out="${args[i]#--out=}" ;;
    --resume) keep_dir=1 optimizer=() zero_init=() iters=() ;;
    --overwrite) keep_dir=1 ;;
    --iters | --iters=* | --time | --time=*) iters=() ;;
    --optimizer | --optimizer=*) optimizer=() zero_init=() iters=() ;;
    --zero-init-out | --zero-init-out=*) zero_init=() ;;
  esac
done
out_flag=()
if [ -z "$out" ]; then
  out=runs/domcasmurro
  if [ "$keep_dir" = 0 ] && [ -e "$out" ]; then
    n=2
    while [ -e "runs/domcasmurro-$n" ]; do n=$((n + 1)); done
    out="runs/domcasmurro-$n"
    echo "train.sh: runs/domcasmurro already holds a run (kept as it is); this one goes to $out"
    echo "          (continue the first with: bash scripts/train.sh --resume --iters N)"
  fi
  out_flag=(--out "$out")
fi
./build/glass train "${out_flag[@]}" "${optimizer[@]}" "${zero_init[@]}" "${iters[@]}" "$@"
./build/glass sample --checkpoint "$out" --prompt "Capitu " --tokens 300
