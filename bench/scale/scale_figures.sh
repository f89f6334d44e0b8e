#!/usr/bin/env bash
# Prints the table of docs/scale.md: wall time and max RSS of every command
# that reads a whole job, on a job written by lens-gen-job. Figures, not
# assertions: take them with nothing else running (uptime is printed first).
#
#   bench/scale/scale_figures.sh [--events N] [--build DIR] [--job DIR] [--keep] [CMD...]
#
# --events N  the generator's events (default 15000000: 1,024 ranks on 128 hosts)
# --job DIR   use the traces already in DIR (else written into a temporary directory)
# CMD...      a subset of: summary report net hang validate job perfetto diff (default: all)
set -euo pipefail
cd "$(dirname "$0")/../.."
events=15000000 build=build job="" keep=0 cmds=()
while (($#)); do
  case "$1" in
    --events) events=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --job) job=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n 2,11p "$0"; exit 0 ;;
    *) cmds+=("$1"); shift ;;
  esac
done
((${#cmds[@]})) || cmds=(summary report net hang validate job perfetto diff)
lens=$build/bin/nccl-lens
[ -x "$lens" ] || { echo "scale_figures: no $lens (build first)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "scale_figures: needs /usr/bin/time (Debian package time)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/lens-scale-XXXXXX)
trap '[ "$keep" = 1 ] || rm -rf "$tmp"' EXIT
if [ -z "$job" ]; then
  job=$tmp/job
  "$build/bin/lens-gen-job" -o "$job" --events "$events" >&2
fi
n_ev=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1])).get('events', 0))" "$job/truth.json" 2>/dev/null || echo 0)
echo "# $(uptime)"
echo "# job: $job ($(ls "$job"/*.lens | wc -l) traces, $(du -sh "$job" | cut -f1), events $n_ev), $(nproc) cores"
printf '| %-9s | %8s | %9s | %s |\n' command "wall s" "max RSS" "output"
printf '|%s|%s|%s|%s|\n' ----------- ---------- ----------- --------
for c in "${cmds[@]}"; do
  case "$c" in
    perfetto) args=(export --format perfetto -o "$tmp/out.pftrace" "$job") ;;
    diff) args=(diff -o "$tmp/out.txt" "$job" "$job") ;;
    *) args=("$c" -o "$tmp/out.txt" "$job") ;;
  esac
  rm -f "$tmp"/out.*
  set +e
  /usr/bin/time -f '%e %M' -o "$tmp/time" "$lens" "${args[@]}" >/dev/null 2>"$tmp/err"
  rc=$?
  set -e
  read -r wall rss_kib < "$tmp/time" || { wall=?; rss_kib=0; }
  out=$(ls "$tmp"/out.* 2>/dev/null | head -1)
  size=$([ -n "$out" ] && du -h "$out" | cut -f1 || echo -)
  note="$size"
  [ "$rc" = 0 ] || note="$size, exit $rc: $(grep -v '^$' "$tmp/err" | tail -1 | cut -c1-60)"
  printf '| %-9s | %8s | %6.2f GB | %s |\n' "$c" "$wall" "$(echo "$rss_kib" | awk '{print $1/1048576}')" "$note"
done
