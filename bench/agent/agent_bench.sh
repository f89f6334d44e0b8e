#!/usr/bin/env bash
# The agent's budget (issue: agent <= 1 % of a core with 8 local ranks at
# 100 k events/s each, a scrape <= 10 ms). Starts the agent on loopback and N
# lens-live-load ranks (one process each, the real plugin, live pages on),
# scrapes /metrics every SCRAPE seconds with curl, and prints the agent's CPU
# (utime + stime from /proc over the measured window), the scrape times, and
# what the agent's split saw (instances split, missed, expired).
# Usage: bench/agent/agent_bench.sh [BUILD_DIR] [RANKS] [CALLBACKS_PER_S_PER_RANK] [SECONDS] [SCRAPE_S]
set -euo pipefail
build=${1:-build}; ranks=${2:-8}; rate=${3:-100000}; secs=${4:-20}; scrape=${5:-1}
bin=$build/bin
dir=$(mktemp -d /dev/shm/lens-agent-bench.XXXXXX)
port=$((20000 + RANDOM % 20000))
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT
export NCCL_LENS_REGISTRY_DIR=$dir NCCL_LENS_OUTPUT_DIR=$dir/traces NCCL_LENS_NVTX=0
mkdir -p "$dir/traces"
"$bin/nccl-lens" agent --listen 127.0.0.1:$port --dir "$dir" --keep 600 2>"$dir/agent.err" &
apid=$!; pids+=("$apid")
for ((r = 0; r < ranks; r++)); do
  "$bin/lens-live-load" --rank $r --nranks "$ranks" --rate "$rate" --seconds $((secs + 4)) >"$dir/rank$r.out" &
  pids+=("$!")
done
sleep 3 # pages created, the agent following
ticks() { awk '{print $14 + $15}' "/proc/$apid/stat"; }
hz=$(getconf CLK_TCK)
c0=$(ticks); t0=$(date +%s.%N); n=0
: >"$dir/scrapes"
while awk -v t0="$t0" -v s="$secs" -v now="$(date +%s.%N)" 'BEGIN{exit !(now - t0 < s)}'; do
  curl -s -o "$dir/metrics" -w '%{time_total}\n' "http://127.0.0.1:$port/metrics" >>"$dir/scrapes"
  n=$((n + 1)); sleep "$scrape"
done
c1=$(ticks); t1=$(date +%s.%N)
for ((i = 1; i <= ranks; i++)); do wait "${pids[$i]}" 2>/dev/null || true; done
cpu=$(awk -v a="$c0" -v b="$c1" -v hz="$hz" -v t0="$t0" -v t1="$t1" 'BEGIN{printf "%.3f", (b - a) / hz / (t1 - t0) * 100}')
echo "agent bench: $ranks ranks x $rate callbacks/s target, ${secs} s measured, one scrape every ${scrape} s ($n scrapes)"
cat "$dir"/rank*.out | awk '{c += $5; r += $(NF-1)} END {printf "  achieved: %.0f callbacks/s per rank on average (%d collectives in all)\n", r / NR, c}' \
  || true
echo "  agent CPU: ${cpu} % of one core (goal <= 1 %)"
sort -n "$dir/scrapes" | awk '{v[NR] = $1 * 1000} END {printf "  scrape wall time: p50 %.2f ms, p90 %.2f ms, max %.2f ms (goal <= 10 ms)\n", v[int(NR/2)+1], v[int(NR*0.9)+1], v[NR]}'
printf "  exposition: %s bytes\n" "$(wc -c <"$dir/metrics")"
grep -E '^nccl_collective_exec_time_seconds_count|^nccl_lens_agent_(missed|expired|untracked)_instances_total' "$dir/metrics" \
  | awk '{split($1, k, "{"); s[k[1]] += $2} END {for (x in s) printf "  %s %d\n", x, s[x]}' | sort
