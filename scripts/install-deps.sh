#!/usr/bin/env bash
# Installs the Debian packages GlassLLM needs to build and test. Idempotent, no prompts.
# Run as root (or with sudo available). Skips apt entirely when everything is present.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config ccache clang-format
  libxtensor-dev libxtensor-blas-dev libxsimd-dev xtl-dev
  libopenblas-dev libgoogle-perftools-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev libutfcpp-dev libfmt-dev
  libopenmpi-dev openmpi-bin
  libcpp-httplib-dev libssl-dev liblzma-dev
)
# The fuzz harnesses (tests/fuzz, scripts/fuzz.sh) need clang with its libFuzzer runtime
# (-fsanitize=fuzzer: libclang-rt-14-dev, only a recommendation of clang) and llvm-symbolizer
# (llvm-14) for readable crash reports, and clang's OpenMP (libomp-dev: omp.h and libomp for
# clang; GCC's comes with GCC). Only CI and scripts/fuzz.sh ask for them.
if [ "${GLASS_WITH_FUZZ:-0}" = "1" ]; then
  PACKAGES+=(clang libclang-rt-14-dev llvm-14 libomp-dev)
fi
# bench_small_gemm's libxsmm column (JIT small-GEMM kernels, compared with OpenBLAS on the training
# step's products); the build leaves the column out without it. Debian builds it for amd64 only.
if [ "${GLASS_WITH_LIBXSMM:-1}" = "1" ] && [ "$(dpkg --print-architecture 2>/dev/null)" = "amd64" ]; then
  PACKAGES+=(libxsmm-dev)
fi
# The test of a second Ctrl-C during a save's switch of `current` (tests/cli) pauses the
# trainer's renames with strace; it is skipped without it.
PACKAGES+=(strace)
# The headless browser test of the inspector page (tests/inspect) needs Chromium.
if [ "${GLASS_WITH_BROWSER:-1}" = "1" ]; then
  PACKAGES+=(chromium)
fi
# The end-to-end test of `glass export --format gguf` runs llama.cpp from Node.js (the npm
# package node-llama-cpp, tests/export): Debian's nodejs and npm, unless node and npm are present.
if [ "${GLASS_WITH_NODE:-1}" = "1" ] && { ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; }; then
  PACKAGES+=(nodejs npm)
fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" != "0" ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install-deps: missing packages (${missing[*]}) and not root; install them with apt-get" >&2
    exit 1
  fi
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
