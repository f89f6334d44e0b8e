#!/usr/bin/env bash
# Prints `nccl-lens summary`'s events per CPU second (user + sys) on real
# plugin traces: the replay's `all` scenario (every op kind, ProxySteps with
# their states, default zstd), beside the floors under it on the same files
# (lens-read-bench: decoding alone, the columns, the model). Issue 23's goal
# is 10 M events/s per core for summary. Figures, not assertions: take them
# with nothing else running (uptime is printed first).
#
#   bench/scale/summary_rate.sh [--build DIR] [--nodes N] [--ranks-per-node R] [--iters I] [--repeat K]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=build nodes=2 rpn=2 iters=100 repeat=3
while (($#)); do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    --ranks-per-node) rpn=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    -h|--help) sed -n 2,9p "$0"; exit 0 ;;
    *) echo "summary_rate: unknown option $1" >&2; exit 2 ;;
  esac
done
lens=$build/bin/nccl-lens
[ -x "$lens" ] || { echo "summary_rate: no $lens (build first)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "summary_rate: needs /usr/bin/time (Debian package time)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/lens-rate-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
"$lens" replay --quiet --scenario all --nodes "$nodes" --ranks-per-node "$rpn" --iters "$iters" --out "$tmp/tr"
"$lens" summary --json -o "$tmp/s.json" "$tmp/tr"
ev=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['events'])" "$tmp/s.json")
echo "# $(uptime)"
echo "# replay all, $nodes nodes x $rpn ranks, $iters iterations: $(du -sh "$tmp/tr" | cut -f1), $ev events"
best=""
for _ in $(seq "$repeat"); do
  /usr/bin/time -f '%U %S %M' -o "$tmp/time" "$lens" summary --json -o "$tmp/s.json" "$tmp/tr"
  read -r u s kib < "$tmp/time"
  cpu=$(echo "$u $s" | awk '{print $1 + $2}')
  echo "summary: ${cpu} s CPU ($u user + $s sys), $(echo "$ev $cpu" | awk '{printf "%.2f", $1 / $2 / 1e6}') M events per CPU second, max RSS $((kib / 1024)) MB"
  if [ -z "$best" ] || awk -v a="$cpu" -v b="$best" 'BEGIN{exit !(a < b)}'; then best=$cpu; fi
done
echo "summary, best of $repeat: $(echo "$ev $best" | awk '{printf "%.2f", $1 / $2 / 1e6}') M events per CPU second (goal 10)"
# The floors under it, on the same files: decoding alone (zstd and the
# varint stream into fixed records), the columns, and the model every
# command reads (unfolded, as lens-read-bench loads it). What summary spends
# beyond the model is its analyses and its output.
"$build/bin/lens-read-bench" --decode-only --repeat "$repeat" "$tmp/tr" | tail -1 | tee "$tmp/decode"
"$build/bin/lens-read-bench" --columns --repeat "$repeat" "$tmp/tr" | tail -1 | tee "$tmp/columns"
"$build/bin/lens-read-bench" --repeat "$repeat" "$tmp/tr" | tail -1
# The goal as a budget on these files, beside what reading them costs before
# any analysis: the decode's last stage (cumulative) and the columns.
dec=$(sed -n 's/.*+ decode \([0-9.]*\) s.*/\1/p' "$tmp/decode")
col=$(sed -n 's/^columns: \([0-9.]*\) s CPU.*/\1/p' "$tmp/columns")
awk -v ev="$ev" -v dec="$dec" -v col="$col" -v best="$best" 'BEGIN {
  budget = ev / 10e6
  printf "budget at 10 M events per CPU second: %.3f s for %d events; the decode alone takes %.0f %% of it, the columns %.0f %%, summary %.0f %%\n",
         budget, ev, 100 * dec / budget, 100 * col / budget, 100 * best / budget }'
