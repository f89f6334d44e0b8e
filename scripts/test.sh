#!/usr/bin/env bash
# Set-up plus the test suite, through ctest, in three builds, each test where it tells most:
#   build       normal build (-O2 -g, what users run): the tests the sanitizer builds skip (label nosan:
#               timing-dependent, or an end-to-end run whose code runs under the sanitizers in smaller
#               tests), the golden outputs of every scenario (golden) and the tests whose assertions a
#               sanitizer build relaxes (strict); with --quick, every test (eBPF tests need root or
#               CAP_BPF+CAP_PERFMON, else they skip)
#   build-asan  ASan + UBSan (-O1 -g1): every test but nosan (the golden views on six scenarios)
#   build-tsan  TSan (-O1 -g1): the tests of code that runs threads: labels plugin, replay, agent, nvtx and
#               threads (the CLI's passes over several hosts), not nosan; only their targets are built
# then the fuzz targets (tests/fuzz/run_fuzz.sh: clang, build-fuzz), each for
# LENS_FUZZ_SECONDS (default 15; 0 skips them). Each stage prints its seconds:
# CI must stay within 30 minutes on 2 cores (README.md, Tests, has the figures).
# Usage: scripts/test.sh [--quick]   (--quick: the normal build only, every test)
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0; [ "${1:-}" = "--quick" ] && quick=1

jobs=$(nproc)
t0=$SECONDS
stage() { echo "test: $1 done in $((SECONDS - t0)) s"; t0=$SECONDS; }
scripts/setup.sh build
stage "normal build"
if [ "$quick" -eq 1 ]; then
  (cd build && ctest --output-on-failure -j "$jobs")
  stage "normal suite"
  echo "test: all suites passed"
  exit 0
fi
(cd build && ctest --output-on-failure -j "$jobs" -L 'nosan|golden|strict')
stage "normal suite (nosan, golden, strict)"
scripts/setup.sh build-asan -DLENS_SANITIZER=address
stage "ASan build"
(cd build-asan && ctest --output-on-failure -j "$jobs" -LE 'nosan')
stage "ASan suite"
# Only what its tests need: the tests that are targets of their own (ctest's names that the build knows as
# targets; the programs a test runs are declared with add_dependencies), the CLI and the plugin (what the script
# tests run). About a minute less than every target.
tsan_labels=(-L 'plugin|replay|agent|nvtx|threads' -LE nosan)
LENS_CONFIGURE_ONLY=1 scripts/setup.sh build-tsan -DLENS_SANITIZER=thread
mapfile -t tsan_targets < <(comm -12 \
  <(cd build-tsan && ctest -N "${tsan_labels[@]}" | awk '/^ *Test +#/ {print $3}' | sort -u) \
  <(cmake --build build-tsan --target help | sed -n 's/^\.\.\. \([^ ]*\).*/\1/p' | sort -u))
((${#tsan_targets[@]})) || { echo "test: no TSan test targets found" >&2; exit 1; }
cmake --build build-tsan -j "$jobs" --target nccl-lens nccl-profiler-lens "${tsan_targets[@]}"
stage "TSan build (${#tsan_targets[@]} tests' targets)"
(cd build-tsan && ctest --output-on-failure -j "$jobs" "${tsan_labels[@]}")
stage "TSan suite"
tests/fuzz/run_fuzz.sh "${LENS_FUZZ_SECONDS:-15}"
stage "fuzz"
echo "test: all suites passed"
