#!/bin/sh
# Every text output of nccl-lens fits 120 columns (docs/cli.md): fails when a
# line of a .txt file under DIR (default: expected/, the golden outputs) is
# longer, naming each file, its first such line and how many there are.
# JSON and Markdown (report.md: tables cannot wrap) are not text outputs.
# ctest test_golden_width runs it on expected/; check.sh on what the views
# print now, so a wider line fails before it is committed.
# usage: width.sh [DIR]
set -u
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-$here/expected}
[ -d "$dir" ] || { echo "width.sh: no directory $dir"; exit 2; }
n=$(find "$dir" -name '*.txt' -type f | wc -l)
[ "$n" -gt 0 ] || { echo "width.sh: no .txt files under $dir"; exit 1; }
wide=$(find "$dir" -name '*.txt' -type f -exec awk '
  length($0) > 120 { if (!(FILENAME in n)) first[FILENAME] = FNR ": " length($0) " columns"; n[FILENAME]++ }
  END { for (f in n) print f ": " n[f] " lines over 120 columns, the first at line " first[f] }' {} +)
if [ -n "$wide" ]; then
  echo "FAIL: text output wider than 120 columns:"
  echo "$wide" | sed "s|$dir/||" | sort
  exit 1
fi
echo "$n text outputs, every line within 120 columns"
