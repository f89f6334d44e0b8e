#!/bin/sh
# Runs every input of the readers' regression corpus (tests/reader/repro/EXPECT)
# through nccl-lens and checks its outcome: refuse = exit 1 and exactly one
# line on stderr naming the file; read = exit 0 and at most one line. Always:
# no sanitizer report, no signal, and done within HANG_S seconds (a generous
# hang bound, not a timing assertion: each takes milliseconds).
# usage: test_reader_repro.sh NCCL_LENS_BIN REPRO_DIR
set -u
bin=$1
dir=$2
HANG_S=${HANG_S:-120}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lens-repro-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0
runs=0
while read -r file expect cmd; do
  case "$file" in '' | '#'*) continue ;; esac
  [ -f "$dir/$file" ] || { echo "FAIL $file: listed in EXPECT but missing"; fails=$((fails + 1)); continue; }
  runs=$((runs + 1))
  # shellcheck disable=SC2086 # cmd is the command's words
  timeout -s KILL "$HANG_S" "$bin" $cmd "$dir/$file" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  lines=$(wc -l <"$tmp/err")
  why=""
  if [ "$rc" -eq 137 ] || [ "$rc" -eq 124 ]; then
    why="did not finish within ${HANG_S} s"
  elif grep -q -e 'Sanitizer' -e 'runtime error' "$tmp/err"; then
    why="sanitizer report"
  elif [ "$rc" -gt 128 ]; then
    why="killed by signal $((rc - 128))"
  elif [ "$expect" = refuse ]; then
    if [ "$rc" -ne 1 ]; then why="exit $rc, not 1"
    elif [ "$lines" -ne 1 ]; then why="$lines lines on stderr, not 1"
    elif ! grep -qF "$file" "$tmp/err"; then why="the error does not name the file"
    fi
  elif [ "$expect" = read ]; then
    if [ "$rc" -ne 0 ]; then why="exit $rc, not 0"
    elif [ "$lines" -gt 1 ]; then why="$lines lines on stderr, more than 1"
    fi
  else
    why="unknown expectation '$expect'"
  fi
  if [ -n "$why" ]; then
    echo "FAIL nccl-lens $cmd $file: $why"
    sed -n '1,20p' "$tmp/err"
    fails=$((fails + 1))
  else
    echo "ok   nccl-lens $cmd $file ($expect, exit $rc)"
  fi
done <"$dir/EXPECT"
# every input of the corpus is listed (a new one must say what it expects)
for f in "$dir"/*.lens "$dir"/*.lensjob; do
  [ -e "$f" ] || continue
  b=$(basename "$f")
  grep -q "^$b[[:space:]]" "$dir/EXPECT" || { echo "FAIL $b: not in EXPECT"; fails=$((fails + 1)); }
done
echo "$runs runs, $fails failed"
[ "$runs" -gt 0 ] && [ "$fails" -eq 0 ]
