#!/usr/bin/env bash
# The main job from a fresh machine: install packages, build, train on the bundled corpus, sample.
set -euo pipefail
cd "$(dirname "$0")/.."
GLASS_WITH_BROWSER=0 bash scripts/install-deps.sh
bash scripts/build.sh glass
./build/glass train --out runs/domcasmurro "$@"
./build/glass sample --checkpoint runs/domcasmurro --prompt "Capitu " --tokens 300
