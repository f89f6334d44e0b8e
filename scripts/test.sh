#!/usr/bin/env bash
# Set-up plus the whole test suite, through ctest, in three builds:
#   build       normal build, every test (eBPF tests need root or CAP_BPF+CAP_PERFMON, else they skip)
#   build-asan  ASan + UBSan (-O1 -g1): every test but those labelled nosan (timing-dependent, or an
#               end-to-end run whose code runs under the sanitizers in smaller tests: CI time)
#   build-tsan  TSan (-O1 -g1): the tests of code that runs threads: labels plugin, replay, agent, job,
#               nvtx and threads (the CLI's passes over several hosts), not nosan
# then the fuzz targets (tests/fuzz/run_fuzz.sh: clang, build-fuzz), each for
# LENS_FUZZ_SECONDS (default 30; 0 skips them). Each stage prints its seconds:
# CI must stay within 30 minutes on 2 cores.
# Usage: scripts/test.sh [--quick]   (--quick: the normal build only)
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0; [ "${1:-}" = "--quick" ] && quick=1

jobs=$(nproc)
t0=$SECONDS
stage() { echo "test: $1 done in $((SECONDS - t0)) s"; t0=$SECONDS; }
scripts/setup.sh build
stage "normal build"
(cd build && ctest --output-on-failure -j "$jobs")
stage "normal suite"
if [ "$quick" -eq 0 ]; then
  scripts/setup.sh build-asan -DLENS_SANITIZER=address
  stage "ASan build"
  (cd build-asan && ctest --output-on-failure -j "$jobs" -LE 'nosan')
  stage "ASan suite"
  scripts/setup.sh build-tsan -DLENS_SANITIZER=thread
  stage "TSan build"
  (cd build-tsan && ctest --output-on-failure -j "$jobs" -L 'plugin|replay|agent|job|nvtx|threads' -LE 'nosan')
  stage "TSan suite"
  tests/fuzz/run_fuzz.sh "${LENS_FUZZ_SECONDS:-30}"
  stage "fuzz"
fi
echo "test: all suites passed"
