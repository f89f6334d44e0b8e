#!/bin/sh
# Regenerates the golden test's input traces (tests/golden/traces/<scenario>/)
# from the replay. Not part of the test: the replay runs in real time, so two
# runs never write the same events; the traces are committed once and the
# expected outputs (tests/golden/expected/) are computed from them by
# update.sh. Run this only to replace the inputs on purpose (a new scenario, a
# new trace format version), then update.sh, and review both in the diff.
# usage: gen_traces.sh NCCL_LENS_BIN [SCENARIO...]   (default: every scenario)
set -eu
bin=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
all="allreduce sendrecv mixed graph pxn starved overrun tagged symmetric phases all ce
hang-missing hang-proxy hang-graph job-none job-late-app job-slow-launch job-gpu-busy job-slow-link
job-starved-proxy net-even net-slow-link net-gpu-bound net-slow-recv net-ib"
# shellcheck disable=SC2086 # all is a list of words
[ $# -gt 0 ] || set -- $all
for s in "$@"; do
  # 2 processes x 2 ranks: the smallest job with a network (hang-* and net-*
  # need 2 nodes), few iterations so the directory stays small (< 3 MB).
  iters=2
  extra=""
  case "$s" in
    starved) iters=1 ;;              # a 100 ms hog phase per iteration: ~300 KB a trace each
    all | overrun | net-*) iters=1 ;; # the biggest outputs (every op kind; 72 AllReduces; many steps)
    ce) extra="--api 7" ;;           # copy-engine collectives exist from profiler API v6
    hang-*) extra="--hang-exit-after 1" ;;
  esac
  d="$here/traces/$s"
  rm -rf "$d"
  mkdir -p "$d"
  # shellcheck disable=SC2086 # extra is words
  "$bin" replay --quiet --scenario "$s" --nodes 2 --ranks-per-node 2 --iters "$iters" $extra --out "$d"
  # stable names: node0.lens, node1.lens in pid order (the pid-named files sort by pid only
  # when the pids have as many digits)
  n=0
  for f in $(find "$d" -name '*.lens' | sed 's/.*-\([0-9]*\)\.lens$/\1 &/' | sort -n | cut -d' ' -f2); do
    mv "$f" "$d/node$n.lens"
    n=$((n + 1))
  done
done
du -sh "$here/traces"
