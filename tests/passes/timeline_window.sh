#!/bin/sh
# ctest test_timeline_window: a window of the timeline (`export --format
# job|perfetto --since/--until`, job time) drawn from the memo a whole export
# left (tools/export/timeline_memo.h) is byte for byte the window drawn by
# reading the job whole (NCCL_LENS_CACHE=off), on every golden trace set,
# for windows at the start, in the middle, past the end and open on either
# side, with --rank and --comm; and it did use the memo (the cache's log).
# A first window (no memo yet) reads the job whole once, stores the memo and
# draws itself from it: the same document.
# A memo that does not match (a slab removed, an entry another run's) is a
# miss and the same document still comes out.
# The golden sets are one host each: a generated job of 8 hosts, each on a
# MONOTONIC clock of its own, puts the windows' mapping to each host to the
# test.
# usage: timeline_window.sh NCCL_LENS_BIN LENS_GEN_JOB_BIN
set -u
[ $# -ge 2 ] || { echo "usage: timeline_window.sh NCCL_LENS_BIN LENS_GEN_JOB_BIN"; exit 2; }
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
gen=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
here=$(cd "$(dirname "$0")" && pwd)
traces=$here/../golden/traces
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lens-timeline-window-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset NCCL_LENS_CACHE NCCL_LENS_CACHE_LOG
export NCCL_LENS_CACHE_DIR="$tmp/cache" NCCL_LENS_CACHE_MIN_BYTES=0
n=0 fails=0 hits=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
mkdir -p "$tmp/sets"
"$gen" -o "$tmp/sets/gen8" --ranks 32 --hosts 8 --events 300000 >/dev/null || fail "lens-gen-job"
for s in $(ls "$traces") gen8; do
  [ "$s" = gen8 ] && traces=$tmp/sets
  [ -n "$(ls "$traces/$s"/*.lens 2>/dev/null)" ] || continue
  rm -rf "$tmp/cache"
  # A first window, no memo yet: one whole reading stores the memo and the
  # window is drawn from it (relative paths: the outputs name the files).
  for fmt in job perfetto; do
    rm -rf "$tmp/cache"
    (cd "$traces/$s" && NCCL_LENS_CACHE_LOG=1 "$bin" export --format $fmt --since 1ms --until 5ms -o "$tmp/doc" ./*.lens) \
      >/dev/null 2>"$tmp/first.err"
    mv -f "$tmp/doc" "$tmp/first.out"
    (cd "$traces/$s" && NCCL_LENS_CACHE=off "$bin" export --format $fmt --since 1ms --until 5ms -o "$tmp/doc" ./*.lens) \
      >/dev/null 2>&1
    mv -f "$tmp/doc" "$tmp/want.out"
    cmp -s "$tmp/first.out" "$tmp/want.out" || fail "$s $fmt: a first window (no memo yet) differs"
    grep -q "cache: hit timeline-" "$tmp/first.err" || fail "$s $fmt: a first window was not drawn from the memo it stored"
    n=$((n + 1)) hits=$((hits + 1))
  done
  rm -rf "$tmp/cache"
  # the whole export leaves the memo
  (cd "$traces/$s" && "$bin" export --format job -o "$tmp/whole.json" ./*.lens) >/dev/null 2>&1 ||
    { fail "$s: the whole export failed"; continue; }
  comm=$(sed -n 's/.*"comm_id":"\(0x[0-9a-f]*\)".*/\1/p' "$tmp/whole.json" | head -n 1)
  # format window selection: each window open and closed, at the start, in the middle and past the end
  cases="job:0:1ms: perfetto:0:1ms: job:2ms:3ms: perfetto:2ms:3ms: job:1ms:: perfetto::2ms: job:3600s:7200s:
         job:500us:40ms:rank perfetto:500us:40ms:comm"
  [ "$s" = gen8 ] && cases="job:10ms:20ms: perfetto:10ms:20ms: job:0:5ms:rank perfetto:150ms:: job::40ms:comm
                            job:1ms:300ms:comm perfetto:1ms:300ms:rank"
  for k in $cases; do
    fmt=${k%%:*} k=${k#*:}
    since=${k%%:*} k=${k#*:}
    until=${k%%:*} sel=${k#*:}
    set --
    [ -n "$since" ] && set -- "$@" --since "$since"
    [ -n "$until" ] && set -- "$@" --until "$until"
    case $sel in
    rank) set -- "$@" --rank 1 ;;
    comm) [ -n "$comm" ] || continue; set -- "$@" --comm "$comm" ;;
    esac
    name="$s $fmt $*"
    (cd "$traces/$s" && NCCL_LENS_CACHE_LOG=1 "$bin" export --format "$fmt" "$@" -o "$tmp/doc" ./*.lens) \
      >"$tmp/memo.std" 2>"$tmp/memo.err"
    rm1=$?
    rm -f "$tmp/memo.out" "$tmp/whole.out"
    mv -f "$tmp/doc" "$tmp/memo.out" 2>/dev/null
    (cd "$traces/$s" && NCCL_LENS_CACHE=off "$bin" export --format "$fmt" "$@" -o "$tmp/doc" ./*.lens) \
      >"$tmp/whole.std" 2>"$tmp/whole.err"
    rm0=$?
    mv -f "$tmp/doc" "$tmp/whole.out" 2>/dev/null
    n=$((n + 1))
    grep -q "cache: hit timeline-" "$tmp/memo.err" && hits=$((hits + 1))
    grep -v "nccl-lens: cache:" "$tmp/memo.err" >"$tmp/memo.err2"
    [ "$rm1" = "$rm0" ] && [ "$rm0" = 0 ] || fail "$name: exit $rm1 with the memo, $rm0 without"
    cmp -s "$tmp/memo.out" "$tmp/whole.out" || fail "$name: the documents differ"
    cmp -s "$tmp/memo.std" "$tmp/whole.std" || fail "$name: stdout differs"
    cmp -s "$tmp/memo.err2" "$tmp/whole.err" || { fail "$name: stderr differs"; diff "$tmp/memo.err2" "$tmp/whole.err" | head -n 6; }
  done
done
# A miss: the slabs gone, the same document from the whole reading.
s=all traces=$here/../golden/traces
rm -rf "$tmp/cache"
(cd "$traces/$s" && "$bin" export --format job -o "$tmp/whole.json" ./*.lens) >/dev/null 2>&1
(cd "$traces/$s" && NCCL_LENS_CACHE=off "$bin" export --format job --since 2ms --until 4ms -o "$tmp/want.json" ./*.lens) >/dev/null 2>&1
ls "$tmp/cache" | grep -q "^timeline-" || fail "the whole export stored no timeline memo"
big=$(ls -S "$tmp/cache" | grep "^timeline-" | head -n 1)
for f in $(ls "$tmp/cache" | grep "^timeline-"); do [ "$f" = "$big" ] || rm -f "$tmp/cache/$f"; done
(cd "$traces/$s" && NCCL_LENS_CACHE_LOG=1 "$bin" export --format job --since 2ms --until 4ms -o "$tmp/got.json" ./*.lens) \
  >/dev/null 2>"$tmp/miss.err"
cmp -s "$tmp/want.json" "$tmp/got.json" || fail "with its slabs removed the memo gave another document"
grep -q "cache: miss timeline-" "$tmp/miss.err" || fail "a slab removed was not a miss"
echo "$n windows of the timeline compared with and without the memo ($hits drawn from it), $fails failures"
[ "$fails" -eq 0 ] && [ "$n" -gt 0 ] && [ "$hits" -eq "$n" ]
