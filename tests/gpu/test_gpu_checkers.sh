#!/bin/bash
# test_gpu_checkers BUILD_DIR SOURCE_DIR: the checkers of run_gpu_check.sh's steps 7-9 (check_late_rank.py,
# check_hang.py, check_torch_merge.py) on traces the replay driver made through the real plugin .so, without a
# GPU: each must PASS where the condition holds and FAIL, on the check concerned, where it does not.
set -u
B=$1 S=$2
L=$B/bin/nccl-lens
T=$(mktemp -d /tmp/test_gpu_checkers.XXXXXX)
fail=0
# shellcheck disable=SC2317 # called by the trap
cleanup() {
  [ -n "${hang1:-}" ] && kill "$hang1" 2>/dev/null # a replay still running when a step failed
  if [ "$fail" = 0 ]; then rm -rf "$T"; else echo "kept $T"; fi
}
trap cleanup EXIT
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }
# expect NAME STATUS LOG LINE...: the checker exited STATUS and printed each LINE (a line's start) in LOG
expect() {
  local name=$1 want=$2 log=$3 got
  got=$(sed -n 's/^check_[a-z_]*: [0-9]* passed, [0-9]* failed$/&/p' "$log")
  shift 3
  [ "$(cat "$log.rc")" = "$want" ] || { bad "$name: exit $(cat "$log.rc"), want $want"; cat "$log"; return; }
  for l in "$@"; do
    grep -q -F -x -e "$l" <(cut -c1-${#l} "$log") || { bad "$name: no line '$l'"; cat "$log"; return; }
  done
  ok "$name${got:+ ($got)}"
}
run() { # run LOG CHECKER ARGS...: the checker's output in LOG, its exit status in LOG.rc
  local log=$1
  shift
  timeout 120 python3 "$S/$1" --cli "$L" "${@:2}" >"$log" 2>&1
  echo $? >"$log.rc"
}

# 1. check_late_rank.py. The replay's job-late-app: rank 1's application calls every AllReduce 20 ms late
# (1 MiB and 16 MiB, 12 each), as lens-nccl-job -L 1:20000 makes rank 1 sleep before each call.
"$L" replay --quiet --scenario job-late-app --nodes 2 --ranks-per-node 1 --iters 12 --straggler 1 --delay-us 20000 \
  --out "$T/late" || { echo "FAIL: replay job-late-app"; exit 1; }
"$L" replay --quiet --scenario job-none --nodes 2 --ranks-per-node 1 --iters 12 --out "$T/none" ||
  { echo "FAIL: replay job-none"; exit 1; }
run "$T/l1" check_late_rank.py --late-rank 1 --sleep-us 20000 --bytes 1048576 "$T/late"
expect "late rank named" 0 "$T/l1" "PASS instances matched on every rank and decomposed: 12 of 12" \
  "PASS rank 1 is the last rank" "PASS rank 1 named the straggler" "PASS stragglers table led by rank 1" \
  "PASS the AllReduce 2^20 row's last rank is 1" "PASS the others' wait is about the sleep" \
  "PASS execution does not hold the sleep" "check_late_rank: 7 passed, 0 failed"
# the 16 MiB instances too (the filter picks them, not the 1 MiB ones)
run "$T/l2" check_late_rank.py --late-rank 1 --sleep-us 20000 --bytes 16777216 "$T/late"
expect "late rank, 16 MiB" 0 "$T/l2" "PASS instances matched on every rank and decomposed: 12 of 12" \
  "PASS the AllReduce 2^24 row's last rank is 1"
# the wrong rank claimed late
run "$T/l3" check_late_rank.py --late-rank 0 --sleep-us 20000 "$T/late"
expect "the punctual rank is not named" 1 "$T/l3" "FAIL rank 0 is the last rank: in 0 of 12" \
  "FAIL rank 0 named the straggler" "FAIL stragglers table led by rank 0" "FAIL the others' wait is about the sleep"
# no late rank at all (under TSan on a loaded machine the punctual replay itself ran a rank late by a millisecond
# in 3 of 12 instances, named so: the checker must still fail, for whatever count, and for a wait far from the sleep)
run "$T/l4" check_late_rank.py --late-rank 1 --sleep-us 20000 "$T/none"
expect "no late rank, none named" 1 "$T/l4" "FAIL rank 1 named the straggler: in " \
  "FAIL the others' wait is about the sleep: median "
# a sleep shorter than twice the execution: the execution check's bound is live (exec ~49 us > 30 us)
run "$T/l5" check_late_rank.py --late-rank 1 --sleep-us 60 "$T/late"
expect "execution bound" 1 "$T/l5" "PASS rank 1 is the last rank" "FAIL execution does not hold the sleep"
run "$T/l6" check_late_rank.py --late-rank 1 --sleep-us 0 "$T/late"
expect "usage" 2 "$T/l6"

# 2. check_hang.py, recorder mode as run_gpu_check.sh step 9 (watchdog after 1 s here): hang-missing, 2
# processes x 2 ranks, rank 2 never calls AllReduce 3; both processes hold stuck ranks, so both dump on the
# watchdog (the replay ends as a killed job: no dump at exit). The plugin's log lines (the replay prints them
# with --verbose, as NCCL's logger would to NCCL_DEBUG_FILE) in replay.log.
# (The 2 x 1 run of the last case below starts now, beside it: each waits 3.5 s for the watchdog.)
mkdir -p "$T/hang" "$T/hang1"
NCCL_LENS_MODE=recorder NCCL_LENS_HANG_TIMEOUT=1 "$L" replay --quiet --scenario hang-missing --nodes 2 \
  --ranks-per-node 1 --hang-exit-after 3.5 --out "$T/hang1" &
hang1=$!
NCCL_LENS_MODE=recorder NCCL_LENS_HANG_TIMEOUT=1 "$L" replay --verbose --scenario hang-missing --nodes 2 \
  --ranks-per-node 2 --hang-exit-after 3.5 --out "$T/hang" >/dev/null 2>"$T/hang/replay.log" ||
  { echo "FAIL: replay hang-missing"; exit 1; }
run "$T/h1" check_hang.py --missing-rank 2 "$T/hang"
expect "hang: stuck op and missing rank named" 0 "$T/h1" "PASS recorder dumps written: 2" \
  "PASS the watchdog's dump logged through NCCL's logger" "PASS nccl-lens hang: a collective is stuck (exit 3)" \
  "PASS the stuck op named: AllReduce seq 3" "PASS rank 2 named missing: missing_ranks [2]" \
  "PASS every other rank stuck in it" "PASS the hang watchdog dumped a stuck rank's process" \
  "PASS summary leads with the hang" "PASS job --json's hang object agrees" "check_hang: 9 passed, 0 failed"
run "$T/h2" check_hang.py --missing-rank 1 "$T/hang"
expect "hang: the wrong rank claimed missing" 1 "$T/h2" "PASS the stuck op named: AllReduce seq 3" \
  "FAIL rank 1 named missing: missing_ranks [2]" "FAIL every other rank stuck in it" "FAIL summary leads with the hang"
run "$T/h3" check_hang.py --missing-rank 2 --func AllGather "$T/hang"
expect "hang: another op claimed stuck" 1 "$T/h3" "FAIL the stuck op named"
# a healthy job in recorder mode that ends without finalize: dumps at exit, nothing stuck, no watchdog
NCCL_LENS_MODE=recorder NCCL_LENS_HANG_TIMEOUT=1 "$L" replay --quiet --scenario allreduce --nodes 2 \
  --ranks-per-node 1 --no-finalize --out "$T/healthy" || { echo "FAIL: replay allreduce"; exit 1; }
run "$T/h4" check_hang.py --missing-rank 1 "$T/healthy"
expect "hang: a healthy job" 1 "$T/h4" "PASS recorder dumps written: 2" \
  "FAIL nccl-lens hang: a collective is stuck (exit 3): exit 0" "FAIL the stuck op named"
# one rank per process, as on the GPU: the missing rank's process has nothing in flight, so no watchdog dump;
# the replay ends it as a killed job (no dump at exit either): untraced, not named missing. (lens-nccl-job -H
# makes its missing rank leave through exit(), where the plugin dumps.)
wait $hang1 || { echo "FAIL: replay hang-missing 2x1"; exit 1; }
run "$T/h5" check_hang.py --missing-rank 1 "$T/hang1"
expect "hang: the missing rank untraced" 1 "$T/h5" "PASS recorder dumps written: 1" \
  "PASS the stuck op named: AllReduce seq 3" "FAIL rank 1 named missing: missing_ranks [], untraced_ranks [1]" \
  "PASS the hang watchdog dumped a stuck rank's process"

# 3. check_torch_merge.py: the replay writes each rank's torch.profiler trace beside the plugin's (--kineto).
# A job scenario (coupled GPUs: the ranks' kernels end together, as real NCCL's do; the plain allreduce
# scenario's GPUs are independent, and under load its ends drift apart: flag ends_apart, no decomposition).
"$L" replay --quiet --scenario job-late-app --nodes 2 --ranks-per-node 1 --iters 20 --delay-us 1000 --out "$T/tr" \
  --kineto "$T/kin" || { echo "FAIL: replay --kineto"; exit 1; }
run "$T/k1" check_torch_merge.py "$T/kin" "$T/tr" "$T/merged"
expect "merge" 0 "$T/k1" "PASS torch.profiler traces: 2" "PASS nccl-lens export --format kineto --into: exit 0" \
  "PASS rank-0.json merged" "PASS rank-0.json: NCCL kernels matched" "PASS rank-0.json: NCCL events added" \
  "PASS rank-1.json: kernels carry execution and wait" "PASS nccl-lens job reads the merged Kineto files: 40 instances"
run "$T/k2" check_torch_merge.py "$T/kin" "$T/tr" "$T/merged"
expect "merge: a used output directory" 2 "$T/k2"
run "$T/k3" check_torch_merge.py "$T/nokin" "$T/tr" "$T/merged3"
expect "merge: no profiler traces" 1 "$T/k3" "FAIL torch.profiler traces: 0"
# a real torch.profiler file (rank 0 of 8 of another job, docs/pytorch.md) with these traces: copied unchanged
R=${KINETO_REALDATA:-$S/../kineto/data} # the repository's copy: a clean clone has it
F=$R/tracelens_b200_eager_trace_rank0of8.json.gz
if [ -r "$F" ]; then
  mkdir -p "$T/real" && cp "$F" "$T/real/"
  run "$T/k4" check_torch_merge.py --ranks 1 "$T/real" "$T/tr" "$T/merged4"
  expect "merge: another job's file" 1 "$T/k4" "PASS nccl-lens export --format kineto --into: exit 0" \
    "FAIL tracelens_b200_eager_trace_rank0of8.json.gz merged: no \"nccl_lens\" object: copied unchanged"
else
  echo "skipped: the real Kineto file is not at $F (set KINETO_REALDATA)"
fi
exit $fail
