#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, LENS_FUZZ=ON: clang, ASan+UBSan)
# in their own build directory and runs each for a bounded time on its
# corpus (tests/fuzz/corpus/<target>, copied to scratch: what a run finds is
# not written into the tree). Any crash, sanitizer report, leak, timeout
# (25 s an input) or out-of-memory (2 GiB) fails the run; the input is left
# in the output directory with the command that reproduces it.
# Usage: tests/fuzz/run_fuzz.sh [SECONDS]   seconds per target (default
#   $LENS_FUZZ_SECONDS, else 60; 0 skips). LENS_FUZZ_BUILD: the build
#   directory (build-fuzz). LENS_FUZZ_TARGETS: which targets (all six).
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-${LENS_FUZZ_SECONDS:-60}}
if [ "$secs" = 0 ]; then
  echo "fuzz: skipped (0 seconds)"
  exit 0
fi
build=${LENS_FUZZ_BUILD:-build-fuzz}
targets=${LENS_FUZZ_TARGETS:-"trace jobpart kineto live_page sched_page timeline_memo"}
cc=$(command -v clang || command -v clang-14 || true)
if [ -z "$cc" ]; then
  echo "fuzz: clang not found (scripts/setup.sh installs it)" >&2
  exit 1
fi
cmake -S . -B "$build" -DCMAKE_C_COMPILER="$cc" -DCUDAToolkit_ROOT="${CUDA_HOME:-/usr/local/cuda}" -DLENS_FUZZ=ON \
  -DLENS_FUZZ_COVERAGE=OFF -DLENS_SANITIZER= >/dev/null
cmake --build "$build" -j "$(nproc)" --target lens_fuzz >/dev/null
out=$(mktemp -d "${TMPDIR:-/tmp}/lens-fuzz-run-XXXXXX")
failed=0
for t in $targets; do
  mkdir -p "$out/$t/corpus" "$out/$t/crash"
  # -timeout: one input's bound (a hang); the corpus seeds run first
  if "$build/bin/fuzz_$t" -max_total_time="$secs" -timeout=25 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$out/$t/crash/" "$out/$t/corpus" "tests/fuzz/corpus/$t" >"$out/$t/log" 2>&1; then
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$t/log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$out/$t/log")
    echo "fuzz: $t: ${execs:-?} inputs in ${secs} s (${rate:-?}/s), no finding"
  else
    failed=1
    echo "fuzz: $t: FAILED (log: $out/$t/log)" >&2
    grep -E 'ERROR|runtime error|SUMMARY|Test unit written' "$out/$t/log" | head -20 >&2 || true
    for a in "$out/$t/crash"/*; do
      [ -e "$a" ] && echo "fuzz: reproduce with: $build/bin/fuzz_$t $a" >&2
    done
  fi
done
if [ "$failed" -ne 0 ]; then
  echo "fuzz: a target failed; fix it and add the input to tests/fuzz/corpus/<target> (and tests/reader/repro for traces and partials)" >&2
  exit 1
fi
rm -rf "$out"
echo "fuzz: all targets passed"
