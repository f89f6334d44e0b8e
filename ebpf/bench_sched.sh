#!/usr/bin/env bash
# Cost of the scheduling probe, measured by the kernel (bpf_stats: run_cnt,
# run_time_ns per program) under a scheduler-heavy load: PAIRS pairs of
# threads passing a token through pipes (lens-sched-pingpong), every hand-over
# one wakeup and one context switch. Three runs:
#   baseline   the load alone (hand-overs/s, no probe)
#   unwatched  probe loaded, watching an idle process: the cost every task on
#              the host pays (two bitmap tests per switch)
#   watched    probe watching every thread of the load: both sides of every
#              switch watched, the worst case (state update, histogram, ring buffer)
#   one side   the second thread of each pair in another process, only the
#              first process watched: one watched side per switch, as for a
#              proxy thread switching with the application's threads
# Needs root (or CAP_BPF+CAP_PERFMON). Usage: ebpf/bench_sched.sh [build-dir]
# Env: PAIRS (default 4), SECS (default 3), SCHED_ARGS (extra options for
# `nccl-lens sched`, e.g. "--min-wait-us 1000000" to see the cost without samples).
set -euo pipefail
build=${1:-build}
cli=$build/bin/nccl-lens
pp=$build/bin/lens-sched-pingpong
pairs=${PAIRS:-4}
secs=${SECS:-3}
read -r -a sched_args <<<"${SCHED_ARGS:-}"
for f in "$cli" "$pp"; do
  [ -x "$f" ] || { echo "bench_sched: $f not built" >&2; exit 1; }
done
out=$(mktemp -d /tmp/lens-sched-bench-XXXXXX)
trap 'rm -rf "$out"' EXIT

load() { # starts the load for $1 seconds in the background, returns once it runs; $2: split
  "$pp" "$pairs" "$1" -1 "${2:-0}" >"$out/pp.txt" &
  for _ in $(seq 100); do grep -q ready "$out/pp.txt" 2>/dev/null && break; sleep 0.05; done
}

echo "== baseline: $pairs ping-pong pairs, no probe"
load "$secs"
wait
grep handovers "$out/pp.txt"

echo "== unwatched: probe loaded, load not watched"
sleep $((secs + 10)) &
idle=$!
load $((secs + 2))
"$cli" sched --pid "$idle" --all-threads --stats --quiet --duration "$secs" --out "$out" ${sched_args[@]+"${sched_args[@]}"}
kill "$idle"
wait
grep handovers "$out/pp.txt"

echo "== watched: probe watching every thread of the load"
load $((secs + 2))
pid=$(awk '/ready/{print $2}' "$out/pp.txt")
"$cli" sched --pid "$pid" --all-threads --stats --quiet --duration "$secs" --out "$out" ${sched_args[@]+"${sched_args[@]}"}
wait
grep handovers "$out/pp.txt"
echo "== one side: probe watching one thread of each pair"
load $((secs + 2)) 1
pid=$(awk '/ready/{print $2}' "$out/pp.txt")
"$cli" sched --pid "$pid" --all-threads --stats --quiet --duration "$secs" --out "$out" ${sched_args[@]+"${sched_args[@]}"}
wait
grep handovers "$out/pp.txt"
echo "(ns/run as the kernel reports them, including the timing bpf_stats itself adds to each run)"
