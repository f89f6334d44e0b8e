#!/usr/bin/env bash
# Set-up plus the whole test suite, through ctest, in three builds:
#   build       normal build, every test (eBPF tests need root or CAP_BPF+CAP_PERFMON, else they skip)
#   build-asan  ASan + UBSan
#   build-tsan  TSan
# then the fuzz targets (tests/fuzz/run_fuzz.sh: clang, build-fuzz), each for
# LENS_FUZZ_SECONDS (default 60; 0 skips them).
# Usage: scripts/test.sh [--quick]   (--quick: the normal build only)
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0; [ "${1:-}" = "--quick" ] && quick=1

jobs=$(nproc)
scripts/setup.sh build
(cd build && ctest --output-on-failure -j "$jobs")
if [ "$quick" -eq 0 ]; then
  scripts/setup.sh build-asan -DLENS_SANITIZER=address
  (cd build-asan && ctest --output-on-failure -j "$jobs" -LE 'nosan')
  scripts/setup.sh build-tsan -DLENS_SANITIZER=thread
  (cd build-tsan && ctest --output-on-failure -j "$jobs" -LE 'nosan')
  tests/fuzz/run_fuzz.sh "${LENS_FUZZ_SECONDS:-60}"
fi
echo "test: all suites passed"
