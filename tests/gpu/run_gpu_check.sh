#!/usr/bin/env bash
# The checks that need a GPU, run by hand on a machine that has one (CI has
# none). Runs a real NCCL job (tests/gpu/nccl_job.c, 2 ranks; ranks share the
# GPU as separate "nodes" over loopback sockets when there is one GPU) with
# and without the plugin, then reads the traces with the nccl-lens tools:
#   1. the plugin loads in real NCCL, which ABI version NCCL picks, the events
#      that arrive (summary --json), CUPTI's real enable/subscribe path and the
#      KernelCh/CUPTI join and clock map (validate --json), the Chrome export;
#   2. the full mask (NetPlugin, ProxyStep) on real NCCL;
#   3. what the plugin emits through NVTX on real NCCL (recording injection);
#   4. host overhead: 8-byte AllReduce enqueue and round trip, plugin vs none,
#      alternating runs;
#   5. the scheduling probe following the job while CPU hogs share its CPUs
#      (needs root and BTF);
#   6. lens-bench (and NVIDIA's example plugin if LENS_EXAMPLE_PLUGIN names it)
#      and the probe's cost, on this machine's CPUs;
#   7. PyTorch: torch.distributed over NCCL with the plugin, the PyTorch
#      profiler recording, NCCL_LENS_CUPTI=auto (the plugin must leave CUPTI
#      to Kineto, and Kineto must still see NCCL's kernels); the profiler's
#      traces merged with NCCL's inside (export --format kineto --into) and
#      read by `nccl-lens job` (check_torch_merge.py);
#   8. a rank late on purpose (lens-nccl-job -L): the job view must name it
#      the straggler, give the other rank about the sleep as wait, and keep
#      the sleep out of the execution (check_late_rank.py);
#   9. a rank that never calls (lens-nccl-job -H), recorder mode: the hang
#      watchdog must dump, and `nccl-lens hang` must name the stuck op and
#      the missing rank (check_hang.py).
# Steps 7-9 print PASS/FAIL lines with the numbers seen; their checkers run
# on CPU-made traces too (ctest test_gpu_checkers).
# Usage: tests/gpu/run_gpu_check.sh OUTDIR [STEPS]   (STEPS: e.g. "1 2 4"; default all)
# Env: LENS_BUILD (default build), LENS_NCCL_LIB_DIR, LENS_CUPTI_PATH, LENS_EXAMPLE_PLUGIN,
#      LENS_EXTRA_LIB_DIR (libbpf/libelf for nccl-lens where the machine lacks them);
#      LENS_MPS=1: run the ranks through CUDA MPS (one GPU shared at once, not time-sliced);
#      LATE_US (20000), LATE_OPS (200): step 8's sleep and AllReduces;
#      HANG_TIMEOUT (5 s): step 9's NCCL_LENS_HANG_TIMEOUT; HANG_HOLD (15 s): how long its
#      missing rank sleeps before it exits (after the watchdog's timeout, so that it fires first).
set -uo pipefail
out=${1:?usage: run_gpu_check.sh OUTDIR [STEPS]}
steps=${2:-"1 2 3 4 5 6 7 8 9"}
here=$(cd "$(dirname "$0")" && pwd)
B=$(cd "${LENS_BUILD:-build}" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
cli=$B/bin/nccl-lens
job=$B/bin/lens-nccl-job
want() { [[ " $steps " == *" $1 "* ]]; }
say() { echo; echo "=== $*"; }

say "machine"
nvidia-smi -L 2>&1 | head -4
uname -r
nproc
grep -m1 'model name' /proc/cpuinfo
grep -o -m1 -w -E 'constant_tsc|nonstop_tsc' /proc/cpuinfo | sort -u | tr '\n' ' '
echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"

# NCCL and CUPTI: the ones named, else the first found where Python wheels
# and toolkits keep them.
find_lib() { # $1: file name
  find /usr/local /opt /usr/lib /usr/lib64 -xdev -name "$1" 2>/dev/null | grep -v -E '/(stubs|compat)/' | head -1
}
nccl_so=${LENS_NCCL_LIB_DIR:+$LENS_NCCL_LIB_DIR/libnccl.so.2}
[ -n "$nccl_so" ] || nccl_so=$(find_lib libnccl.so.2)
cudart_so=$(find_lib libcudart.so.13)
cupti_so=${LENS_CUPTI_PATH:-$(find_lib libcupti.so.13)}
echo "libnccl:   $nccl_so"
echo "libcudart: $cudart_so"
echo "libcupti:  $cupti_so"
if [ -z "$nccl_so" ] || [ -z "$cudart_so" ]; then
  echo "run_gpu_check: NCCL or the CUDA runtime not found" >&2
  exit 1
fi
LD_LIBRARY_PATH=$(dirname "$nccl_so"):$(dirname "$cudart_so")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
[ -n "${LENS_EXTRA_LIB_DIR:-}" ] && LD_LIBRARY_PATH=$(cd "$LENS_EXTRA_LIB_DIR" && pwd):$LD_LIBRARY_PATH
export LD_LIBRARY_PATH
export NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1

# LENS_MPS=1: the ranks' kernels share the one GPU at once through CUDA MPS instead of taking turns. Without it two
# processes time-slice the GPU (about 2 ms slices on the H200): a collective's ranks do not end together, so the job
# view leaves most instances undecomposed (ends_apart), and every execution holds a slice (docs/gpu-check.md).
mps_dir=
if [ "${LENS_MPS:-0}" = 1 ]; then
  if command -v nvidia-cuda-mps-control >/dev/null && mps_dir=$(mktemp -d /tmp/lens-mps-XXXXXX); then
    export CUDA_MPS_PIPE_DIRECTORY=$mps_dir CUDA_MPS_LOG_DIRECTORY=$mps_dir
    if nvidia-cuda-mps-control -d; then
      trap 'echo quit | nvidia-cuda-mps-control; sleep 1; rm -rf "$mps_dir"' EXIT
      echo "MPS: control daemon started ($mps_dir): the ranks' kernels run at once"
    else
      echo "MPS: nvidia-cuda-mps-control -d failed: the GPU is time-sliced"
      unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
    fi
  else
    echo "MPS: nvidia-cuda-mps-control not found: the GPU is time-sliced"
  fi
fi

# One run of the job. $1: name; the rest: env assignments. Plugin runs get
# NCCL_PROFILER_PLUGIN=lens from their caller.
run_job() {
  local name=$1
  shift
  rm -rf "${out:?}/$name" # a second run into one OUTDIR must not read the first one's traces with its own
  mkdir -p "$out/$name"
  # shellcheck disable=SC2086 # JOB_PREFIX and JOB_ARGS are word lists
  env "$@" NCCL_LENS_OUTPUT_DIR="$out/$name" timeout ${JOB_TIMEOUT:-60} ${JOB_PREFIX:-} "$job" -n 2 -i "${ITERS:-5}" \
    -l "${LAT:-3000}" ${JOB_ARGS:-} >"$out/$name/job.jsonl" 2>"$out/$name/job.log"
  local rc=$?
  echo "$name: exit $rc"
  cat "$out/$name/job.jsonl"
  cat "$out/$name"/nccl.*.log 2>/dev/null | grep -i -E 'profiler|lens' | sed 's/^[^ ]* //' | sort | uniq -c | sort -rn | head -20
  [ $rc -eq 0 ] || tail -20 "$out/$name/job.log"
  return $rc
}
# Events per type in a Chrome export (its "cat" field).
count_types() {
  python3 -c 'import json,sys,collections
d=json.load(open(sys.argv[1])); ev=d["traceEvents"] if isinstance(d,dict) else d
print("events by type:", dict(collections.Counter(e.get("cat") for e in ev if e.get("cat")).most_common()))' "$1"
}
lens_env=(NCCL_PROFILER_PLUGIN=lens LD_LIBRARY_PATH="$B/lib:$LD_LIBRARY_PATH"
          ${cupti_so:+NCCL_LENS_CUPTI_PATH=$cupti_so} NCCL_LENS_CUPTI=on)
# NCCL's log (the plugin logs through it, subsystem PROFILE) goes to a file per
# process: on stdout it would mix with the job's JSON.
# log_env NAME sets logv, the assignments for run NAME's log (an array: OUTDIR may hold spaces).
log_env() { logv=(NCCL_DEBUG=INFO "NCCL_DEBUG_SUBSYS=INIT,ENV,PROFILE" "NCCL_DEBUG_FILE=$out/$1/nccl.%p.log"); }

if want 1; then
  say "1. real NCCL with the plugin, default mask, CUPTI on"
  log_env lens_default
  run_job lens_default "${lens_env[@]}" "${logv[@]}"
  ls -la "$out/lens_default"
  "$cli" summary "$out"/lens_default/*.lens
  "$cli" summary --json "$out"/lens_default/*.lens >"$out/lens_default/summary.json"
  "$cli" validate --limit 12 "$out"/lens_default/*.lens
  "$cli" validate --json "$out"/lens_default/*.lens >"$out/lens_default/validate.json"
  "$cli" export --format chrome "$out"/lens_default/*.lens -o "$out/lens_default/trace.json" && ls -la "$out/lens_default/trace.json"
  count_types "$out/lens_default/trace.json"
fi

if want 2; then
  say "2. full mask (NetPlugin, every ProxyStep state)"
  # Socket NetPlugin events come from the socket helper threads, which NCCL
  # starts only when asked for them on a non-cloud host.
  log_env lens_all
  run_job lens_all "${lens_env[@]}" "${logv[@]}" NCCL_LENS_EVENT_MASK=all NCCL_SOCKET_NTHREADS=2 \
    NCCL_NSOCKS_PERTHREAD=2
  "$cli" summary "$out"/lens_all/*.lens | head -30
  "$cli" export --format chrome "$out"/lens_all/*.lens -o "$out/lens_all/trace.json" && count_types "$out/lens_all/trace.json"
fi

if want 3; then
  say "3. NVTX emitted on real NCCL (recording injection)"
  rm -f /tmp/lens-nvtx-*.bin
  log_env lens_nvtx
  run_job lens_nvtx "${lens_env[@]}" "${logv[@]}" NVTX_INJECTION64_PATH="$B/lib/libnccl-lens-nvtx-inject.so" \
    NVTX_INJ_DUMP=/tmp/lens-nvtx-%p.bin
  "$B/bin/lens-nvtx-dump-summary" /tmp/lens-nvtx-*.bin
fi

if want 4; then
  say "4. host overhead, 8-byte AllReduce, alternating runs (enqueue per op in batches of 64, round trip)"
  for i in 1 2 3; do
    run_job "base_$i" >/dev/null; echo "none        #$i: $(tr '\n' ' ' <"$out/base_$i/job.jsonl")"
    run_job "lens_$i" "${lens_env[@]}" NCCL_LENS_CUPTI=off >/dev/null
    echo "lens        #$i: $(tr '\n' ' ' <"$out/lens_$i/job.jsonl")"
    run_job "lenscupti_$i" "${lens_env[@]}" >/dev/null
    echo "lens+CUPTI  #$i: $(tr '\n' ' ' <"$out/lenscupti_$i/job.jsonl")"
  done
fi

if want 5; then
  say "5. scheduling probe following the job, CPU hogs on the job's CPUs"
  if [ -r /sys/kernel/btf/vmlinux ] && [ "$(id -u)" = 0 ]; then
    mkdir -p "$out/sched"
    "$cli" sched --follow --duration 40 --out "$out/sched" --stats &
    probe=$!
    sleep 2
    hogs=()
    for c in 0 1; do for _ in 1 2; do taskset -c $c sh -c 'while :; do :; done' & hogs+=($!); done; done
    log_env lens_sched
    JOB_PREFIX="taskset -c 0,1" run_job lens_sched "${lens_env[@]}" "${logv[@]}" || true
    kill "${hogs[@]}" 2>/dev/null
    kill -INT $probe; wait $probe
    "$cli" summary "$out"/lens_sched/*.lens "$out"/sched/*.lens | sed -n '/[Ss]tarv/,$p' | head -60
  else
    echo "skipped: needs root and /sys/kernel/btf/vmlinux"
  fi
fi

if want 6; then
  say "6. lens-bench and probe cost on this machine"
  bench=("$B/bin/lens-bench" --plugin "$B/lib/libnccl-profiler-lens.so" --nop "$B/lib/libnccl-profiler-nop.so")
  "${bench[@]}" --mode latency --threads 1,2,4
  if [ -n "${LENS_EXAMPLE_PLUGIN:-}" ]; then
    "${bench[@]}" --mode compare --compare "$LENS_EXAMPLE_PLUGIN" --threads 1,2,4
  fi
  "${bench[@]}" --mode paced --threads 1,2 --repeat 3
  NCCL_LENS_BUFFER_SIZE=16M "${bench[@]}" --mode paced --threads 1,2 --repeat 3 | grep '=>' | sed 's/^/16 MiB rings: /'
  if [ -r /sys/kernel/btf/vmlinux ] && [ "$(id -u)" = 0 ]; then
    bash "$(dirname "$0")/../../ebpf/bench_sched.sh" "$B"
  fi
fi

if want 7; then
  say "7. PyTorch (torch.distributed, NCCL backend) with the plugin and the PyTorch profiler; the traces merged"
  rm -rf "$out/torch"
  mkdir -p "$out/torch"
  log_env torch
  env "${lens_env[@]}" NCCL_LENS_CUPTI=auto "${logv[@]}" NCCL_LENS_OUTPUT_DIR="$out/torch" \
    timeout 120 python3 "$here/torch_job.py" --profile --trace-dir "$out/torch/kineto"
  echo "torch: exit $?"
  cat "$out"/torch/nccl.*.log 2>/dev/null | grep -i -E 'profiler|lens' | sed 's/^[^ ]* //' | sort | uniq -c | sort -rn | head
  timeout 300 "$cli" summary "$out"/torch/*.lens | head -20
  # torch.profiler's files (one per rank) merged with the plugin's traces, then read by the job view
  timeout 600 python3 "$here/check_torch_merge.py" --cli "$cli" --ranks 2 "$out/torch/kineto" "$out/torch" \
    "$out/torch/merged"
  echo "check_torch_merge: exit $?"
fi

if want 8; then
  late_us=${LATE_US:-20000} late_ops=${LATE_OPS:-200}
  say "8. a late rank: rank 1 sleeps $late_us us before each of $late_ops AllReduces of 1 MiB"
  rm -rf "$out/late"
  log_env late
  JOB_ARGS="-L 1:$late_us:$late_ops" JOB_TIMEOUT=$((60 + late_us * late_ops / 500000)) \
    run_job late "${lens_env[@]}" "${logv[@]}"
  timeout 300 "$cli" job "$out"/late/*.lens | head -24
  timeout 300 "$cli" summary "$out"/late/*.lens | head -12
  # the late phase's instances only (1 MiB: no other op of the job has that size)
  timeout 300 python3 "$here/check_late_rank.py" --cli "$cli" --late-rank 1 --sleep-us "$late_us" --func AllReduce \
    --bytes 1048576 --min-instances $((late_ops * 9 / 10)) "$out/late"
  echo "check_late_rank: exit $?"
fi

if want 9; then
  hang_timeout=${HANG_TIMEOUT:-5} hang_hold=${HANG_HOLD:-15}
  say "9. a rank that never calls: rank 1 stops after a barrier; recorder mode, hang watchdog after $hang_timeout s"
  rm -rf "$out/hang"
  if [ "$hang_hold" -lt $((hang_timeout + 5)) ]; then # the watchdog must fire while rank 0 is stuck and rank 1 alive
    echo "HANG_HOLD ($hang_hold s) must be at least HANG_TIMEOUT + 5 s: set to $((hang_timeout + 5))"
    hang_hold=$((hang_timeout + 5))
  fi
  # Rank 1 sleeps hang_hold s and exits without finalize (its recorder dumps at exit); rank 0 waits in an
  # AllReduce that cannot complete, until NCCL reports rank 1 gone or hang_hold + 10 s; the job exits 3 then.
  log_env hang
  JOB_ARGS="-H 1:$hang_hold" JOB_TIMEOUT=$((hang_hold + 60)) run_job hang "${lens_env[@]}" NCCL_LENS_CUPTI=off \
    NCCL_LENS_MODE=recorder NCCL_LENS_HANG_TIMEOUT="$hang_timeout" "${logv[@]}"
  job_rc=$?
  [ $job_rc = 3 ] && echo "PASS the job made the hang: exit 3" ||
    echo "FAIL the job made the hang: exit $job_rc (3: rank 1 stopped calling, rank 0 left waiting)"
  ls -la "$out/hang"
  timeout 300 "$cli" hang "$out/hang" | head -30
  timeout 300 python3 "$here/check_hang.py" --cli "$cli" --missing-rank 1 --func AllReduce "$out/hang"
  echo "check_hang: exit $?"
fi
