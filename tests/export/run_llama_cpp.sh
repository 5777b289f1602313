#!/usr/bin/env bash
# End-to-end test of `glass export --format gguf` with the real llama.cpp: trains a small model,
# exports it, and runs greedy.mjs (node-llama-cpp, pinned in package.json / package-lock.json)
# on it against `glass sample --temperature 0`.
# Usage: run_llama_cpp.sh GLASS_BINARY WORK_DIR
# WORK_DIR keeps node_modules between runs (reinstalled when package-lock.json changes).
set -euo pipefail
glass="$1"
work="$2"
here="$(cd "$(dirname "$0")" && pwd)"

for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "FAIL: '$tool' not found; scripts/install-deps.sh installs Node.js and npm" >&2
    exit 1
  fi
done

mkdir -p "$work"
if ! cmp -s "$here/package-lock.json" "$work/package-lock.json" || [ ! -d "$work/node_modules/node-llama-cpp" ]; then
  cp "$here/package.json" "$here/package-lock.json" "$work/"
  # --prefer-offline: packages already in npm's cache are not asked for again.
  (cd "$work" && npm ci --no-audit --no-fund --loglevel=error --prefer-offline)
fi
cp "$here/greedy.mjs" "$work/"

# A small model, trained long enough that its greedy choices are not near-ties: 300 steps (about
# 10 CPU-seconds; the training loss is ~2.07 nats then, from 4.41) were enough for every greedy
# choice of the 40 characters to agree with llama.cpp's; 1000 steps proved nothing more.
context=64
corpus="$here/../../data/corpora/domcasmurro.txt"
ckpt="$work/ckpt"
rm -rf "$ckpt" "$work/model.gguf"
"$glass" train --data "$corpus" --out "$ckpt" --iters 300 --eval-every 300 --eval-iters 2 \
  --sample-tokens 0 --batch-size 16 --context "$context" --d-model 64 --n-layers 2 --n-heads 4 \
  --n-kv-heads 2 --ffn-hidden 176 --seed 7 --lr 3e-3 >/dev/null
"$glass" export --checkpoint "$ckpt" --format gguf --out "$work/model.gguf"

prompt="Capitu olhou para mim"
tokens=40
# glass sample prints the prompt, the new characters and a newline (the x keeps $(...) from
# dropping newlines the model wrote).
expected="$("$glass" sample --checkpoint "$ckpt" --prompt "$prompt" --tokens "$tokens" --temperature 0; echo x)"
expected="${expected%x}"
expected="${expected%$'\n'}"
expected="${expected#"$prompt"}"
(cd "$work" && node greedy.mjs "$work/model.gguf" "$prompt" "$expected" "$context")
