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
#      to Kineto, and Kineto must still see NCCL's kernels).
# Usage: tests/gpu/run_gpu_check.sh OUTDIR [STEPS]   (STEPS: e.g. "1 2 4"; default all)
# Env: LENS_BUILD (default build), LENS_NCCL_LIB_DIR, LENS_CUPTI_PATH, LENS_EXAMPLE_PLUGIN,
#      LENS_EXTRA_LIB_DIR (libbpf/libelf for nccl-lens where the machine lacks them).
set -uo pipefail
out=${1:?usage: run_gpu_check.sh OUTDIR [STEPS]}
steps=${2:-"1 2 3 4 5 6 7"}
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
[ -n "$nccl_so" ] && [ -n "$cudart_so" ] || { echo "run_gpu_check: NCCL or the CUDA runtime not found" >&2; exit 1; }
export LD_LIBRARY_PATH=$(dirname "$nccl_so"):$(dirname "$cudart_so")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
[ -n "${LENS_EXTRA_LIB_DIR:-}" ] && export LD_LIBRARY_PATH=$(cd "$LENS_EXTRA_LIB_DIR" && pwd):$LD_LIBRARY_PATH
export NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1

# One run of the job. $1: name; the rest: env assignments. Plugin runs get
# NCCL_PROFILER_PLUGIN=lens from their caller.
run_job() {
  local name=$1
  shift
  mkdir -p "$out/$name"
  env "$@" NCCL_LENS_OUTPUT_DIR="$out/$name" timeout ${JOB_TIMEOUT:-60} ${JOB_PREFIX:-} "$job" -n 2 -i "${ITERS:-5}" -l "${LAT:-3000}" \
    >"$out/$name/job.jsonl" 2>"$out/$name/job.log"
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
log_env() { echo NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,PROFILE "NCCL_DEBUG_FILE=$out/$1/nccl.%p.log"; }

if want 1; then
  say "1. real NCCL with the plugin, default mask, CUPTI on"
  run_job lens_default "${lens_env[@]}" $(log_env lens_default)
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
  run_job lens_all "${lens_env[@]}" $(log_env lens_all) NCCL_LENS_EVENT_MASK=all NCCL_SOCKET_NTHREADS=2 \
    NCCL_NSOCKS_PERTHREAD=2
  "$cli" summary "$out"/lens_all/*.lens | head -30
  "$cli" export --format chrome "$out"/lens_all/*.lens -o "$out/lens_all/trace.json" && count_types "$out/lens_all/trace.json"
fi

if want 3; then
  say "3. NVTX emitted on real NCCL (recording injection)"
  rm -f /tmp/lens-nvtx-*.bin
  run_job lens_nvtx "${lens_env[@]}" $(log_env lens_nvtx) NVTX_INJECTION64_PATH="$B/lib/libnccl-lens-nvtx-inject.so" \
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
    for c in 0 1; do for k in 1 2; do taskset -c $c sh -c 'while :; do :; done' & hogs+=($!); done; done
    JOB_PREFIX="taskset -c 0,1" run_job lens_sched "${lens_env[@]}" $(log_env lens_sched) || true
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
  say "7. PyTorch (torch.distributed, NCCL backend) with the plugin and the PyTorch profiler"
  mkdir -p "$out/torch"
  env "${lens_env[@]}" NCCL_LENS_CUPTI=auto $(log_env torch) NCCL_LENS_OUTPUT_DIR="$out/torch" \
    timeout 120 python3 "$(dirname "$0")/torch_job.py" --profile
  echo "torch: exit $?"
  cat "$out"/torch/nccl.*.log 2>/dev/null | grep -i -E 'profiler|lens' | sed 's/^[^ ]* //' | sort | uniq -c | sort -rn | head
  "$cli" summary "$out"/torch/*.lens | head -20
fi
