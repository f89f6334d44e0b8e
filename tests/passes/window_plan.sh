#!/usr/bin/env bash
# lens-window-plan (bench/scale/lens_window_plan.c): the shares it prints
# keep their relations on a generated job and a replay trace. Each check can
# fail: a window holding the whole span needs every chunk; with whole-run GPU
# maps every chunk of the generator's traces (each holds KernelCh) is needed;
# without them a 1 % window needs some but not all, the exact plan within
# the INDEX range within the whole read; the replay's `all` scenario has
# ProxyOps that never stop (spec 2.5) and the tool counts them. The plan the
# written INDEX chunks allow (docs/trace-format.md, "The index") misses no
# chunk the exact plan needs, on every run, and lies between exact and today.
# Usage: window_plan.sh PLAN GEN CLI
set -u
PLAN=$1 GEN=$2 CLI=$3
T=$(mktemp -d /tmp/lens-window-plan-XXXXXX)
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
share() { awk -v p="$1" '$1 == p {sub("%", "", $3); print $3}'; }
"$GEN" -o "$T/gj" --ranks 8 --hosts 2 --events 400000 >/dev/null 2>&1 || { echo "FAIL: lens-gen-job"; exit 1; }
whole=$("$PLAN" --gpu none --from 0 --width 1 "$T/gj") || bad "whole span: exit $?"
[ "$(echo "$whole" | share exact)" = 100.00 ] || bad "a window of the whole span needs every chunk: $whole"
all=$("$PLAN" --gpu all "$T/gj") || bad "--gpu all: exit $?"
[ "$(echo "$all" | share exact)" = 100.00 ] || bad "whole-run GPU maps need every chunk of a generated job: $all"
none=$("$PLAN" --gpu none "$T/gj") || bad "--gpu none: exit $?"
echo "$none"
e=$(echo "$none" | share exact) r=$(echo "$none" | share range) d=$(echo "$none" | share today)
awk -v e="$e" -v r="$r" -v d="$d" 'BEGIN { exit !(e > 0 && e < 100 && e <= r && r <= d && d == 100) }' ||
  bad "a 1 % window without GPU maps: exact $e, range $r, today $d (want 0 < exact <= range <= today = 100)"
near=$("$PLAN" --gpu near --gpu-margin-ms 100 "$T/gj") || bad "--gpu near: exit $?"
n=$(echo "$near" | share exact)
awk -v e="$e" -v n="$n" 'BEGIN { exit !(n >= e) }' || bad "GPU maps near the window need at least the window: $n < $e"
"$CLI" replay --quiet --scenario all --nodes 2 --ranks-per-node 2 --iters 20 --out "$T/rp" >/dev/null 2>&1 ||
  bad "replay"
rp=$("$PLAN" --gpu none "$T/rp") || bad "replay trace: exit $?"
echo "$rp" | grep -q "never stopped (keep the range open to the end): [1-9]" ||
  bad "the replay's never-stopped ProxyOps not counted: $rp"
for out in "$whole" "$all" "$none" "$near" "$rp"; do
  echo "$out" | grep -q "of [0-9]* files indexed" || bad "no index line: $out"
  echo "$out" | grep -q "misses (exact chunks the index plan leaves out): 0$" || bad "the index plan misses chunks: $out"
  e=$(echo "$out" | share exact) x=$(echo "$out" | share index) d=$(echo "$out" | share today)
  awk -v e="$e" -v x="$x" -v d="$d" 'BEGIN { exit !(e <= x && x <= d) }' || bad "index $x not within exact $e .. today $d"
done
echo "$none" | grep -q " 0 of [0-9]* files indexed" && bad "the generator's traces not indexed: $none"
echo "$rp" | grep -q " 0 of [0-9]* files indexed" && bad "the plugin's traces not indexed: $rp"
x=$(echo "$rp" | share index) r=$(echo "$rp" | share range)
awk -v x="$x" -v r="$r" 'BEGIN { exit !(x < r) }' ||
  bad "on the replay the written index ($x) should beat the old range ($r), which its never-stopped ops hold open"
"$PLAN" --gpu sometimes "$T/gj" >/dev/null 2>&1
[ $? -eq 2 ] || bad "a bad --gpu is not a usage error"
[ $fail -eq 0 ] && echo "window_plan: all checks passed"
exit $fail
