#!/bin/sh
# Runs every view of nccl-lens on every golden trace set and writes what they
# print, made comparable, under OUT: OUT/<scenario>/<view>.{json,txt,md,digest}
# and OUT/<scenario>/status (each command, its exit status and its stderr),
# OUT/diff/<a>--<b>.* for `diff`. check.sh compares OUT with expected/;
# update.sh writes expected/ with it. One script, so both run the same commands.
#
# Comparable: the commands run inside traces/ on relative paths (the file names
# in the outputs are "<scenario>/node0.lens"); JSON is printed one member a
# line with floats to 12 significant digits (digest.py json); the exports,
# too big to store, become digests (digest.py chrome|perfetto); the temporary
# directory's name in stderr becomes TMP; NCCL_LENS_* variables are unset.
# `job` runs on 1 and 2 threads: when they differ, the second's output is
# kept as job.threads2.json, which expected/ never has. `job --stream` is kept
# as its difference from job.json (job.stream.diff).
#
# usage: views.sh NCCL_LENS_BIN OUT [SCENARIO...]   (default: every directory in traces/)
set -u
bin=$1
out=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
case "$bin" in /*) ;; *) bin=$(pwd)/$bin ;; esac
case "$out" in /*) ;; *) out=$(pwd)/$out ;; esac
digest="python3 $here/digest.py"
JOBS=${GOLDEN_JOBS:-2}
for v in $(env | sed -n 's/^\(NCCL_LENS_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
export LC_ALL=C TZ=UTC
unset COLUMNS

# Pairs given to `diff` (A B): a change each (a late rank, a slow link) and a run against itself.
DIFF_PAIRS="job-none:job-late-app job-none:job-slow-link net-even:net-slow-link allreduce:allreduce all:all"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/lens-golden-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# run NAME FORMAT CMD...: runs CMD in traces/, its stdout to $dir/NAME in
# FORMAT (raw: as is; json: canonical; chrome: digest; perfetto: digest of the
# file $w/NAME.raw, which CMD writes), its exit status and stderr to $status.
# The conversions wait in $w/manifest for one digest.py process (finish).
run() {
  name=$1
  format=$2
  shift 2
  (cd "$here/traces" && "$bin" "$@") >"$w/stdout" 2>"$w/stderr"
  rc=$?
  case "$format" in
    raw) mv "$w/stdout" "$dir/$name" ;;
    json | chrome) mv "$w/stdout" "$w/$name.raw" ;;
  esac
  [ "$format" = raw ] || printf '%s\t%s\t%s\n' "$format" "$w/$name.raw" "$dir/$name" >>"$w/manifest"
  {
    echo "$name: nccl-lens $* -> exit $rc"
    sed 's/^/  stderr: /' "$w/stderr"
  } | sed "s|$w/|TMP/|g" >>"$status"
}

finish() {
  [ -f "$w/manifest" ] || return 0
  $digest batch "$w/manifest" || echo "digest.py failed on some outputs (see the files)" >>"$status"
}

one_scenario() {
  s=$1
  dir=$out/$s
  w=$tmp/$s
  status=$dir/status
  rm -rf "$dir"
  mkdir -p "$dir" "$w"
  run summary.txt raw summary "$s"
  run summary.json json summary --json "$s"
  run net.txt raw net --top 0 "$s"
  run net.json json net --json "$s"
  run hang.txt raw hang "$s"
  run hang.json json hang --json "$s"
  run validate.txt raw validate "$s"
  run validate.json json validate --json "$s"
  run job.txt raw job --all --threads 1 "$s"
  run job.json json job --json --all --threads 1 "$s"
  run job.threads2.json raw job --json --all --threads 2 "$s"
  # the threads share the hosts, never the numbers
  cmp -s "$w/job.json.raw" "$dir/job.threads2.json" && rm -f "$dir/job.threads2.json"
  # the streamed reading (host by host, as every view is to read): kept as its
  # difference from job.json (today: no hang section)
  mkdir -p "$w/stream"
  run job.stream.json raw job --json --all --stream --threads 2 "$s"
  mv "$dir/job.stream.json" "$w/stream/job.stream.json.raw"
  printf '%s\t%s\t%s\n' json "$w/stream/job.stream.json.raw" "$w/stream/job.stream.json" >>"$w/manifest"
  run report.md raw report "$s"
  run export-chrome.digest chrome export --format chrome "$s"
  run export-job.digest chrome export --format job "$s"
  run export-perfetto.digest perfetto export --format perfetto -o "$w/export-perfetto.digest.raw" "$s"
  finish
  diff -U 3 --label job.json --label "job --stream" "$dir/job.json" "$w/stream/job.stream.json" \
    >"$dir/job.stream.diff"
}

one_diff() {
  a=${1%%:*}
  b=${1#*:}
  dir=$out/diff
  w=$tmp/diff-$a--$b
  status=$dir/$a--$b.status
  mkdir -p "$w"
  rm -f "$status"
  run "$a--$b.json" json diff --json --top 0 "$a" "$b"
  run "$a--$b.txt" raw diff --top 0 "$a" "$b"
  finish
}

if [ "${GOLDEN_ONE:-}" = scenario ]; then
  one_scenario "$1"
  exit 0
elif [ "${GOLDEN_ONE:-}" = diff ]; then
  one_diff "$1"
  exit 0
fi

[ -x "$bin" ] || { echo "views.sh: $bin is not an executable"; exit 1; }
mkdir -p "$out"
if [ $# -eq 0 ]; then
  for d in "$here"/traces/*/; do
    d=${d%/}
    set -- "$@" "${d##*/}"
  done
fi
# one process a scenario, JOBS at a time
printf '%s\n' "$@" | env GOLDEN_ONE=scenario xargs -n 1 -P "$JOBS" "$0" "$bin" "$out" || exit 1
rm -rf "$out/diff"
mkdir -p "$out/diff"
for p in $DIFF_PAIRS; do
  a=${p%%:*}
  b=${p#*:}
  [ -d "$here/traces/$a" ] && [ -d "$here/traces/$b" ] && echo "$p"
done | env GOLDEN_ONE=diff xargs -n 1 -P "$JOBS" "$0" "$bin" "$out" || exit 1
