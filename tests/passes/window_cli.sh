#!/bin/sh
# ctest test_window_cli: the commands print, for a --since/--until window,
# what they printed when the traces were loaded whole and then narrowed
# (expected/ was written by the binary before the load-time window,
# tools/reader/window.c): summary, hang, net, job and validate --json (the
# pass driver) and report (one model, tools/cli/trace_args.c), stdout, stderr
# and exit status, on four golden trace sets and three windows; and the same
# again with the GPU memo a whole summary of each set stored in a cache of the
# test's own (docs/scale.md "The GPU memo": the same outputs, and the windows
# found it). A deliberate
# change of a view: regenerate with --update and review
# the diff (tests/golden/update.sh regenerates the golden views the same way).
# usage: window_cli.sh NCCL_LENS_BIN [--update]
set -u
[ $# -ge 1 ] || { echo "usage: window_cli.sh NCCL_LENS_BIN [--update]"; exit 2; }
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") update=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
traces=$here/../golden/traces
want=$here/window_expected
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lens-window-cli-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
[ "$update" = --update ] && mkdir -p "$want"
n=0 fails=0
unset NCCL_LENS_CACHE_LOG
for mode in plain memo; do
if [ "$mode" = plain ]; then
  export NCCL_LENS_CACHE=off
else
  [ "$update" = --update ] && break
  unset NCCL_LENS_CACHE
  export NCCL_LENS_CACHE_DIR="$tmp/cache" NCCL_LENS_CACHE_MIN_BYTES=0
fi
for s in all pxn overrun hang-proxy; do
  if [ "$mode" = memo ]; then
    (cd "$traces/$s" && "$bin" summary --json ./*.lens) >/dev/null 2>&1
    hit=$(cd "$traces/$s" && NCCL_LENS_CACHE_LOG=1 "$bin" summary --json --since 2ms ./*.lens 2>&1 >/dev/null |
      grep -c "cache: hit")
    [ "$hit" -gt 0 ] || { echo "FAIL: a window of $s found no GPU memo after a whole summary stored it"; fails=$((fails + 1)); }
  fi
  for w in "2ms:3ms" "0:1ms" "12ms:"; do
    since=${w%%:*} until=${w#*:}
    set -- --since "$since"
    [ -n "$until" ] && set -- "$@" --until "$until"
    for c in summary hang net job validate report; do
      name=$s-$c-$(echo "$w" | tr ':' '_')
      json=--json
      [ "$c" = report ] && json=
      # relative paths (the outputs name the files): the same text in any clone
      (cd "$traces/$s" && "$bin" "$c" $json "$@" ./*.lens) >"$tmp/$name.out" 2>"$tmp/$name.err"
      echo "exit $?" >>"$tmp/$name.err"
      n=$((n + 1))
      if [ "$update" = --update ]; then
        cp "$tmp/$name.out" "$tmp/$name.err" "$want/"
        continue
      fi
      for f in "$name.out" "$name.err"; do
        if ! cmp -s "$want/$f" "$tmp/$f"; then
          echo "FAIL ($mode): $c --since $since${until:+ --until $until} on $s: $f differs (- expected, + now):"
          diff -U 2 "$want/$f" "$tmp/$f" | sed -n '3,40p'
          fails=$((fails + 1))
        fi
      done
    done
  done
done
done
echo "$n windowed views compared (without and with the GPU memo), $fails outputs differ"
[ "$fails" -eq 0 ] && [ "$n" -gt 0 ]
