#!/bin/bash
# test_kineto_threads BUILD_DIR SOURCE_DIR: export --format kineto reads its traces and merges its Kineto files on
# several threads (a file a thread); the output must be the one thread's, byte for byte, and said in input order.
# Small enough for the sanitizer builds: under TSan a race between two files' merges fails the run (the comparator
# of the clock fit once kept its array in a global, and two merges sorted each other's pairs).
set -u
# shellcheck source=kineto_sh.sh
source "$(dirname "$0")/kineto_sh.sh"

"$L" replay --scenario allreduce --nodes 4 --ranks-per-node 1 --iters 40 --out "$T/tr" --truth "$T/truth.json" \
  --quiet || { echo "FAIL: replay"; exit 1; }
mkdir "$T/kin" && python3 "$S/kineto_fixture.py" "$T/truth.json" "$T/kin" || { echo "FAIL: fixture"; exit 1; }
rm -f "$T/kin/expect.json" # the fixture's answers, not a Kineto file
# four threads twice: a race between two files' merges shows (TSan reported the old one in 3 runs of 4)
for th in 1 4 4b; do
  "$L" export --format kineto --threads ${th%b} --into "$T/kin" "$T/tr" -o "$T/out$th" >"$T/log$th" 2>"$T/err$th" ||
    bad "--threads $th exited $?: $(tail -2 "$T/err$th")"
done
n=$(grep -c '^wrote ' "$T/log1")
[ "$n" = 4 ] && ok "one thread: 4 files merged" || bad "one thread merged $n files: $(cat "$T/log1" "$T/err1")"
# the same lines in the same order (each file's lines kept until the files before it are said)
cmp -s <(sed "s|$T/out1|OUT|" "$T/log1") <(sed "s|$T/out4|OUT|" "$T/log4") && cmp -s "$T/err1" "$T/err4" &&
  ok "four threads: the same report, in input order" || bad "four threads say other lines: $(diff "$T/log1" "$T/log4")"
same=1
for f in "$T"/out1/*; do
  for g in "$T/out4/${f##*/}" "$T/out4b/${f##*/}"; do
    case $f in
      *.gz) cmp -s <(zcat "$f") <(zcat "$g") || same=0 ;;
      *) cmp -s "$f" "$g" || same=0 ;;
    esac
  done
done
[ "$same" = 1 ] && ok "four threads: the same merged files, byte for byte" || bad "four threads wrote other files"
# Two --into files of the same name (from two directories) would be written to one output: the later one in
# input order is refused, whatever thread gets there first.
mkdir "$T/a" "$T/b" && cp "$T/kin/rank1.json" "$T/a/" && cp "$T/kin/rank1.json" "$T/b/"
"$L" export --format kineto --threads 4 --into "$T/a/rank1.json" "$T/b/rank1.json" "$T/tr" -o "$T/dup" \
  >"$T/logd" 2>"$T/errd" && bad "two files of one name: exit 0"
grep -qF "$T/b/rank1.json: $T/a/rank1.json has the same name" "$T/errd" && [ "$(grep -c '^wrote ' "$T/logd")" = 1 ] &&
  ok "two files of one name: the second refused" || bad "two files of one name: $(cat "$T/logd" "$T/errd")"
exit $fail
