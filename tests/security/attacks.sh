#!/usr/bin/env bash
# A local attacker against a root job that loads the plugin with default
# settings, and against root's own tools (docs/security.md, threat model).
#
# Runs as root inside a private mount namespace with its own tmpfs on /tmp
# (`unshare -m`): the squatted /tmp of the attacks never touches the
# machine's. The attacker is a second user (uid 4242, no passwd entry
# needed) acting through setpriv. Each attack checks that:
#   - no file outside the job's own is created or changed (a root-owned
#     victim file keeps its content and mtime; a root directory stays empty),
#   - no process hangs or dies (every run is bounded by timeout),
#   - the job's trace holds every event (the same count as an unattacked run,
#     no drops),
#   - the refusal is logged once (the trace's plugin messages).
# Usage: attacks.sh BUILD_DIR      (exit 77 = skipped: not root / no unshare)
set -uo pipefail
build=$(cd "${1:?build dir}" && pwd)
lens=$build/bin/nccl-lens

if [ "$(id -u)" -ne 0 ]; then echo "attacks: skipped (needs root)"; exit 77; fi
if [ -z "${LENS_ATTACKS_INNER:-}" ]; then
  command -v unshare >/dev/null && command -v setpriv >/dev/null || { echo "attacks: skipped (no unshare/setpriv)"; exit 77; }
  LENS_ATTACKS_INNER=1 exec unshare -m --propagation private "$0" "$@"
fi
mount -t tmpfs -o mode=1777 lens-attacks /tmp || { echo "attacks: cannot mount a private /tmp"; exit 1; }
unset XDG_RUNTIME_DIR NCCL_LENS_REGISTRY_DIR NCCL_LENS_OUTPUT_DIR NCCL_LENS_MODE
export NCCL_LENS_FLUSH_TIMEOUT_MS=30000
A=4242 # the attacker
as_attacker() { env HARD="${HARD:-}" setpriv --reuid=$A --regid=$A --clear-groups "$@"; }
pass=0 fail=0
ok() { echo "PASS: $1"; pass=$((pass + 1)); }
ko() { echo "FAIL: $1"; fail=$((fail + 1)); }
check() { if eval "$2"; then ok "$1"; else ko "$1"; fi; }

# The victim: a root file the attacker wants overwritten, and a root
# directory she wants files created in (as /etc would be).
mkdir -p /tmp/rootdir && chmod 0755 /tmp/rootdir
echo "precious root data" >/tmp/victim && chmod 0644 /tmp/victim
touch -d '2020-01-01 00:00:00' /tmp/victim
victim_sum=$(sha256sum /tmp/victim | cut -d' ' -f1)
victim_ok() {
  [ "$(sha256sum /tmp/victim | cut -d' ' -f1)" = "$victim_sum" ] &&
    [ "$(stat -c %Y /tmp/victim)" = "$(date -d '2020-01-01 00:00:00' +%s)" ] &&
    [ -z "$(ls -A /tmp/rootdir)" ]
}
next_pid() { cat /proc/sys/kernel/ns_last_pid; }
# The attacker plants, for the next N pids, NAME patterns as symlinks to the
# victim (every 7th a FIFO; with HARD=1 hard links instead of symlinks). One
# python process, so that planting does not use up the pids it aims at.
plant() { # dir N pattern...   (%p = the pid)
  local dir=$1 n=$2
  shift 2
  as_attacker /usr/bin/python3 -c '
import os, sys
d, n, hard, pats = sys.argv[1], int(sys.argv[2]), os.environ.get("HARD") == "1", sys.argv[3:]
base = int(open("/proc/sys/kernel/ns_last_pid").read())
for p in range(base + 1, base + 1 + n):
    for pat in pats:
        f = os.path.join(d, pat.replace("%p", str(p)))
        try:
            if hard: os.link("/tmp/victim", f)
            elif p % 7 == 0: os.mkfifo(f)
            else: os.symlink("/tmp/victim", f)
        except OSError:
            pass' "$dir" "$n" "$@"
}
counts_py='
import json, sys
d = json.load(sys.stdin)
t = json.load(open(sys.argv[1]))
ev, st = (int(x) for x in sys.argv[2].split())
drops = sum(sum(v for k, v in p.items() if k not in ("host", "pid")) for p in d["drops"]["processes"])
calls = sum(p["calls"] for p in t["processes"])
print("%d %d %d" % (2 * ev + st, drops, calls))'
# One replay as the root job: rc, events and drops, its plugin messages.
run_job() { # out_dir [env...]
  local out=$1
  shift
  mkdir -p "$out"
  env "$@" timeout 120 "$lens" replay --out "$out" --truth "$out.truth" --quiet >"$out.log" 2>&1
  echo $? >"$out.rc"
  # Every call the driver made (its ground truth) is a record in the trace:
  # a start and a stop per event, one per state.
  local rec
  rec=$("$build/bin/lens-read-bench" "$out" 2>/dev/null | sed -n 's/.* \([0-9]*\) events (+\([0-9]*\) states).*/\1 \2/p')
  "$lens" summary --json "$out" 2>/dev/null | python3 -c "$counts_py" "$out.truth" "${rec:-0 0}" >"$out.counts" 2>/dev/null || echo "0 -1 1" >"$out.counts"
  "$lens" summary "$out" 2>/dev/null | sed -n '/^plugin messages/,/^$/p' >"$out.msgs"
}
job_ok() { # out_dir: exit 0, a record for every call of the driver, no drop
  local r d c
  read -r r d c <"$1.counts"
  [ "$(cat "$1.rc")" = 0 ] && [ "$r" = "$c" ] && [ "$d" = 0 ]
}
logged_once() { [ "$(grep -c -- "$2" "$1.msgs")" = 1 ]; }

# ---- the baseline: no attack ----
run_job /tmp/base
check "baseline job: exit 0, every call recorded ($(cat /tmp/base.counts)), per-user registry created 0700" \
  'job_ok /tmp/base && [ "$(stat -c %a:%u /tmp/nccl-lens-0)" = 700:0 ]'
rm -rf /tmp/nccl-lens-0

# ---- 1. the squatted registry directory, full of links and FIFOs ----
as_attacker mkdir -m 0777 /tmp/nccl-lens-0
plant /tmp/nccl-lens-0 300 '.%p.live.tmp' '.%p.reg.tmp' '%p.live' '%p.reg' '%p.dump'
run_job /tmp/squat
check "squatted directory: job unharmed, every event" 'job_ok /tmp/squat'
check "squatted directory: victim untouched" victim_ok
check "squatted directory: refusal logged once" 'logged_once /tmp/squat "not using the registry directory /tmp/nccl-lens-0: owned by uid 4242"'
rm -rf /tmp/nccl-lens-0

# ---- 2. the registry directory as a symlink to a root directory ----
as_attacker ln -s /tmp/rootdir /tmp/nccl-lens-0
run_job /tmp/symdir
check "symlinked directory: job unharmed" 'job_ok /tmp/symdir'
check "symlinked directory: nothing created in the root directory" victim_ok
check "symlinked directory: refusal logged once" 'logged_once /tmp/symdir "not using the registry directory /tmp/nccl-lens-0: a symbolic link"'
rm -f /tmp/nccl-lens-0

# ---- 3. a site's shared sticky registry directory: links, hard links, FIFOs ----
mkdir -m 1777 /tmp/shared-reg
hl=$(cat /proc/sys/fs/protected_hardlinks)
echo 0 >/proc/sys/fs/protected_hardlinks
trap 'echo "$hl" >/proc/sys/fs/protected_hardlinks' EXIT
plant /tmp/shared-reg 300 '.%p.live.tmp' '.%p.reg.tmp' '%p.live' '%p.reg'
HARD=1 plant /tmp/shared-reg 300 '%p.sched' '%p.dump' '.%p.sched.tmp'
check "hard links to the victim planted (protected_hardlinks=0)" '[ "$(stat -c %h /tmp/victim)" -gt 1 ]'
run_job /tmp/shared NCCL_LENS_REGISTRY_DIR=/tmp/shared-reg
check "shared sticky directory: job unharmed, every event" 'job_ok /tmp/shared'
check "shared sticky directory: victim untouched (links, hard links, FIFOs)" victim_ok
echo "$hl" >/proc/sys/fs/protected_hardlinks
trap - EXIT

# ---- 4. the trace file in a shared output directory ----
mkdir -m 1777 /tmp/shared-out
plant /tmp/shared-out 300 "nccl-lens-$(hostname)-%p.lens"
run_job /tmp/shared-out
trace=$(find /tmp/shared-out -name "nccl-lens-*.lens" -user 0 -type f)
check "shared output directory: victim untouched" victim_ok
check "shared output directory: the trace took a suffixed name ($(basename "${trace:-none}"))" \
  '[ -n "$trace" ] && [ "$(basename "$trace" | grep -c "^nccl-lens-$(hostname)-[0-9]*\.[0-9]*\.lens$")" = 1 ]'
# The attacker's links and FIFOs stay in that directory: read the job's own file.
mkdir -p /tmp/shared-out-own && cp "$trace" /tmp/shared-out-own/ 2>/dev/null
mv /tmp/shared-out.truth /tmp/shared-out-own.truth && cp /tmp/shared-out.rc /tmp/shared-out-own.rc
run_counts() { # out_dir: the counts of run_job for an existing trace
  local out=$1 rec
  rec=$("$build/bin/lens-read-bench" "$out" 2>/dev/null | sed -n 's/.* \([0-9]*\) events (+\([0-9]*\) states).*/\1 \2/p')
  "$lens" summary --json "$out" 2>/dev/null | python3 -c "$counts_py" "$out.truth" "${rec:-0 0}" >"$out.counts" 2>/dev/null || echo "0 -1 1" >"$out.counts"
}
run_counts /tmp/shared-out-own
check "shared output directory: job unharmed, every event" 'job_ok /tmp/shared-out-own'
timeout 20 "$lens" summary /tmp/shared-out >/tmp/shared-out.sum 2>&1
check "summary of the planted directory ends (rc $?, no hang on its FIFOs)" '[ $? != 124 ]'

# ---- 5. settings that must be honoured, or refused aloud ----
rm -rf /tmp/nccl-lens-0
run_job /tmp/liveoff NCCL_LENS_LIVE=off
check "NCCL_LENS_LIVE=off: no live page" '[ -z "$(find /tmp/nccl-lens-0 -name "*.live")" ] && job_ok /tmp/liveoff'
run_job /tmp/periodbad NCCL_LENS_LIVE_PERIOD_MS=abc
check "NCCL_LENS_LIVE_PERIOD_MS=abc: logged once" 'logged_once /tmp/periodbad "bad value NCCL_LENS_LIVE_PERIOD_MS"'

# ---- 6. dump requests: rate-limited, stale ones refused ----
# A recorder-mode job hung for 6 s (its watchdog off, killed at the end as
# --hang-exit-after does: no exit dump): the first request is honoured, the
# flood after it refused and logged. A request older than a minute never
# fires, and is swept.
rm -rf /tmp/nccl-lens-0 /tmp/rec && mkdir -p /tmp/rec
base=$(next_pid)
mkdir -m 0700 /tmp/nccl-lens-0
for ((p = base + 1; p <= base + 300; p++)); do touch -d '-5 min' /tmp/nccl-lens-0/$p.dump; done
NCCL_LENS_MODE=recorder NCCL_LENS_HANG_TIMEOUT=600 timeout 60 "$lens" replay --scenario hang-missing \
  --hang-exit-after 6 --out /tmp/rec --verbose >/tmp/rec.log 2>&1 &
job=$!
for i in $(seq 50); do reg=$(ls /tmp/nccl-lens-0/*.reg 2>/dev/null | head -1); [ -n "$reg" ] && break; sleep 0.1; done
jp=$(basename "${reg:-0.reg}" .reg)
stale_gone=$([ ! -e "/tmp/nccl-lens-0/$((base + 150)).dump" ] && echo 1 || echo 0)
sleep 1
for i in $(seq 20); do touch "/tmp/nccl-lens-0/$jp.dump"; sleep 0.15; done
wait $job
dumps=$(find /tmp/rec -name '*-dump*.lens' | wc -l)
check "stale dump requests of other pids swept at start" '[ "$stale_gone" = 1 ]'
check "20 dump requests in 3 s: one dump written ($dumps files)" '[ "$dumps" = 1 ]'
check "refused requests logged once" '[ "$(grep -c "refused (rate limit" /tmp/rec.log)" = 1 ]'

# ---- 7. the output directory removed under a running job ----
rm -rf /tmp/gone && mkdir -p /tmp/gone
timeout 60 "$lens" replay --scenario hang-missing --hang-exit-after 3 --out /tmp/gone --quiet >/tmp/gone.log 2>&1 &
job=$!
for i in $(seq 50); do [ -n "$(ls /tmp/gone/*.lens 2>/dev/null)" ] && break; sleep 0.1; done
sleep 0.5
rm -rf /tmp/gone
wait $job
check "removed output directory: a new trace was started" '[ -n "$(ls /tmp/gone/*.lens 2>/dev/null)" ]'
"$lens" summary /tmp/gone >/tmp/gone.sum 2>&1
check "removed output directory: the loss is logged in the new trace" 'grep -q "was removed while recording" /tmp/gone.sum'

# ---- 8. a recorder dump onto a nearly full file system ----
# 128 KiB of room for a recorder holding ~1 MB (fixed records): the dump
# keeps the newest events, says how much it left out, and reads cleanly.
mkdir -p /tmp/small && mount -t tmpfs -o size=128k lens-small /tmp/small
NCCL_LENS_COMPRESS=none NCCL_LENS_MODE=recorder NCCL_LENS_HANG_TIMEOUT=1 timeout 60 "$lens" replay \
  --scenario hang-missing --iters 400 --hang-exit-after 3 --out /tmp/small --quiet >/tmp/small.log 2>&1
"$lens" summary /tmp/small >/tmp/small.sum 2>&1
ev=$(sed -n 's/.*(2 rank inits), \([0-9]*\) events.*/\1/p' /tmp/small.sum)
check "dump on a full disk: the newest ${ev:-0} events kept, readable to the end" \
  '[ "${ev:-0}" -gt 100 ] && ! grep -q "not read" /tmp/small.sum'
check "dump on a full disk: what was left out is said in the dump" 'grep -q "were left out so that the newest fit" /tmp/small.sum'
umount /tmp/small

if [ -n "${LENS_ATTACKS_KEEP:-}" ]; then mkdir -p "$LENS_ATTACKS_KEEP" && cp -a /tmp/. "$LENS_ATTACKS_KEEP/" 2>/dev/null; fi
echo "attacks: $pass passed, $fail failed"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
