#!/usr/bin/env bash
# Prints wall time and max RSS of `summary --json` on a job written by
# lens-gen-job: the whole run, a 1 % time window in its middle with the GPU
# memo the whole run left in the cache and without it (NCCL_LENS_CACHE=off:
# every KernelCh of the run read for the clock maps), and an empty window
# (what the window's scans cost alone), with what the selection kept
# (docs/scale.md, "A time window", "The GPU memo"). The cache is a fresh
# directory of its own. With --export, then the same for `export --format
# perfetto` (the timeline: its window on job time, drawn from the memo a
# whole export left, docs/scale.md "A window of the timeline"; the first
# window, in a cache of its own, reads the job whole once to store it), its
# documents written into the temporary directory. Figures, not assertions:
# take them with nothing else running (uptime is printed first).
#
#   bench/scale/window_figures.sh [--events N] [--build DIR] [--job DIR] [--keep] [--export]
#
# --events N  the generator's events (default 5000000)
# --job DIR   use the traces already in DIR (else written into a temporary directory)
set -euo pipefail
cd "$(dirname "$0")/../.."
events=5000000 build=build job="" keep=0 export=0
while (($#)); do
  case "$1" in
    --events) events=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --job) job=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --export) export=1; shift ;;
    -h|--help) sed -n 2,15p "$0"; exit 0 ;;
    *) echo "window_figures: unknown option $1" >&2; exit 2 ;;
  esac
done
lens=$build/bin/nccl-lens
[ -x "$lens" ] || { echo "window_figures: no $lens (build first)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "window_figures: needs /usr/bin/time (Debian package time)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/lens-window-XXXXXX)
trap '[ "$keep" = 1 ] || rm -rf "$tmp"' EXIT
export NCCL_LENS_CACHE_DIR=$tmp/cache
unset NCCL_LENS_CACHE NCCL_LENS_CACHE_MIN_BYTES
if [ -z "$job" ]; then
  job=$tmp/job
  "$build/bin/lens-gen-job" -o "$job" --events "$events" >&2
fi
# The run's span from the generator's truth: instances one period apart.
span_ns=$(python3 -c "import json,sys; t=json.load(open(sys.argv[1])); print(t['instances']*t['period_ns'])" \
  "$job/truth.json")
mid=$((span_ns / 2)) pct=$((span_ns / 100))
echo "# $(uptime)"
echo "# job: $job ($(ls "$job"/*.lens | wc -l) traces, $(du -sh "$job" | cut -f1)), span ${span_ns} ns, $(nproc) cores"
printf '| %-22s | %8s | %9s | %s |\n' "summary --json" "wall s" "max RSS" "selection"
printf '|%s|%s|%s|%s|\n' ------------------------ ---------- ----------- -----------
cmd=(summary --json)
run() {
  local name=$1; shift
  rm -f "$tmp/doc.pftrace"
  set +e
  /usr/bin/time -f '%e %M' -o "$tmp/time" "$lens" "${cmd[@]}" "$@" "$job" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  set -e
  local wall rss_kib
  read -r wall rss_kib < "$tmp/time" || { wall=?; rss_kib=0; }
  local note
  note=$(grep -o 'keeps [0-9]* of [0-9]* events' "$tmp/err" || grep -o '[0-9]* slices' "$tmp/out" || echo "all events")
  [ -s "$tmp/doc.pftrace" ] && note="$note, $(du -h "$tmp/doc.pftrace" | cut -f1) written"
  [ "$rc" = 0 ] || note="exit $rc: $(grep -v '^$' "$tmp/err" | tail -1 | cut -c1-60)"
  printf '| %-22s | %8s | %6.0f MB | %s |\n' "$name" "$wall" "$(echo "$rss_kib" | awk '{print $1/1024}')" "$note"
}
run "whole run"
run "1 % window" --since "${mid}ns" --until "$((mid + pct))ns"
NCCL_LENS_CACHE=off run "1 % window, no memo" --since "${mid}ns" --until "$((mid + pct))ns"
run "empty window (scans)" --since "$((span_ns * 4))ns"
run "window = whole run" --since 0 --until "$((span_ns * 4))ns"
[ "$export" = 1 ] || exit 0
# The timeline's window is job time after the job's first event: the same
# numbers place it in the middle of the run.
echo
printf '| %-22s | %8s | %9s | %s |\n' "export --format perfetto" "wall s" "max RSS" "drawn"
printf '|%s|%s|%s|%s|\n' ------------------------ ---------- ----------- -----------
cmd=(export --format perfetto -o "$tmp/doc.pftrace")
NCCL_LENS_CACHE_DIR=$tmp/cache-first run "1 % window, first" --since "${mid}ns" --until "$((mid + pct))ns"
rm -rf "$tmp/cache-first"
run "whole run (memo left)"
run "1 % window, memo" --since "${mid}ns" --until "$((mid + pct))ns"
NCCL_LENS_CACHE=off run "1 % window, no memo" --since "${mid}ns" --until "$((mid + pct))ns"
rm -f "$tmp/doc.pftrace"
