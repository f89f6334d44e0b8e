#!/usr/bin/env bash
# How much of the readers the fuzz corpus reaches: builds the fuzz targets
# with clang's source-based coverage (LENS_FUZZ_COVERAGE=ON, no sanitizers)
# in build-fuzz-cov, runs each over its corpus once (-runs=0: no fuzzing),
# merges the profiles and prints llvm-cov's report for the readers of
# untrusted bytes (tools/reader: chunks, records, packed, columns, load,
# job_part_io; common/lens_unpack.h; the sched page and live page readers),
# then the total over tools/reader and common.
# Usage: tests/fuzz/coverage.sh [CORPUS_ROOT]   (default tests/fuzz/corpus;
#   pass a directory of per-target corpora grown by longer runs to measure them)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=${1:-tests/fuzz/corpus}
build=${LENS_FUZZ_COV_BUILD:-build-fuzz-cov}
cc=$(command -v clang || command -v clang-14)
prof=$(command -v llvm-profdata || command -v llvm-profdata-14)
cov=$(command -v llvm-cov || command -v llvm-cov-14)
cmake -S . -B "$build" -DCMAKE_C_COMPILER="$cc" -DCUDAToolkit_ROOT="${CUDA_HOME:-/usr/local/cuda}" -DLENS_FUZZ=ON \
  -DLENS_FUZZ_COVERAGE=ON -DLENS_SANITIZER= >/dev/null
cmake --build "$build" -j "$(nproc)" --target lens_fuzz >/dev/null
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lens-fuzz-cov-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
for t in trace jobpart live_page sched_page; do
  LLVM_PROFILE_FILE="$tmp/$t.profraw" "$build/bin/fuzz_$t" -runs=0 "$root/$t" >/dev/null 2>&1
done
objs=("$build/bin/fuzz_trace" -object "$build/bin/fuzz_jobpart" -object "$build/bin/fuzz_live_page"
  -object "$build/bin/fuzz_sched_page")
"$prof" merge -sparse "$tmp"/*.profraw -o "$tmp/all.profdata"
readers='tools/reader/(chunks|records|packed|columns|load|chunk_stream)\.c|tools/analysis/job/job_part_io\.c|common/lens_unpack\.h|tools/sched/sched_page\.c|tools/agent/live_read\.c'
echo "== the readers of untrusted bytes"
"$cov" report -instr-profile="$tmp/all.profdata" "${objs[@]}" | grep -E "^Filename|^-|$readers" || true
echo "== all of tools/reader and common"
"$cov" report -instr-profile="$tmp/all.profdata" "${objs[@]}" "$PWD/tools/reader" "$PWD/common" | tail -1
