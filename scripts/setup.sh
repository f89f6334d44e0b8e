#!/usr/bin/env bash
# Set-up for a fresh Debian bookworm machine with the CUDA toolkit image:
# installs the missing Debian packages, then configures and builds into
# build/ (plugin: build/lib/libnccl-profiler-lens.so, CLI: build/bin/nccl-lens).
# Usage: scripts/setup.sh [build-dir] [extra cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."

# libjs-d3: the plots `report --html` embeds; chromium: the test that renders those pages (headless).
packages=(build-essential cmake pkg-config clang llvm libcmocka-dev libbpf-dev bpftool libelf-dev zlib1g-dev util-linux python3
  libmicrohttpd-dev libcurl4-openssl-dev prometheus protobuf-compiler python3-protobuf tmux libzstd-dev
  libyaml-dev libgnutls28-dev libcrypt-dev openssl libyajl-dev libjs-d3 chromium)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

cuda=${CUDA_HOME:-/usr/local/cuda}
if [ ! -f "$cuda/include/nvtx3/nvToolsExt.h" ] || [ ! -f "$cuda/include/cupti_activity.h" ]; then
  echo "setup: the CUDA toolkit headers (NVTX, CUPTI) were not found under $cuda; set CUDA_HOME" >&2
  exit 1
fi

build=${1:-build}
shift || true
cmake -S . -B "$build" -DCUDAToolkit_ROOT="$cuda" "$@" >/dev/null
# LENS_CONFIGURE_ONLY=1: packages and configure only (scripts/test.sh then builds the targets its tests need).
if [ -n "${LENS_CONFIGURE_ONLY:-}" ]; then
  echo "setup: configured $build"
  exit 0
fi
cmake --build "$build" -j "$(nproc)"
echo "setup: built $build/lib/libnccl-profiler-lens.so and $build/bin/nccl-lens"
