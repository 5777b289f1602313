#!/usr/bin/env bash
# Configures and builds GlassLLM (Release) into ./build.
# Usage: scripts/build.sh [TARGET ...]   (no target = everything: library, glass, tests,
# tutorials, benchmarks; e.g. `scripts/build.sh glass` builds only the program)
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
if [ $# -eq 0 ]; then
  cmake --build build -j"$(nproc)"
else
  for target in "$@"; do cmake --build build -j"$(nproc)" --target "$target"; done
fi
