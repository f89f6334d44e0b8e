#!/usr/bin/env bash
# A command killed by a signal leaves no spool directory (tools/cli/spool.h):
# `export --format chrome -o -` into a pipe nobody reads blocks with its
# spool files on disk; SIGTERM, and then SIGPIPE (the reader gone), must
# each end it with the signal's status and remove .nccl-lens-export-XXXXXX.
#   spool_signal.sh NCCL_LENS TRACES
set -u
L=$1 traces=$2
t=$(mktemp -d /tmp/lens-spool-sig-XXXXXX)
trap 'exec 3<&- 2>/dev/null; rm -rf "$t"' EXIT
mkdir "$t/tmp"
fail() { echo "FAIL: $*"; ls -la "$t/tmp"; exit 1; }

# Waits until the export's spool directory holds a file, then for the
# command to block on the full pipe.
wait_spool() {
  for _ in $(seq 200); do
    d=$(ls -d "$t"/tmp/.nccl-lens-export-* 2>/dev/null | head -1)
    [ -n "$d" ] && [ -n "$(ls "$d" 2>/dev/null)" ] && { sleep 0.5; return 0; }
    sleep 0.05
  done
  fail "no spool directory appeared"
}

for sig in TERM PIPE; do
  rm -f "$t/fifo"
  mkfifo "$t/fifo"
  TMPDIR=$t/tmp "$L" export --format chrome -o - "$traces" > "$t/fifo" 2>"$t/err" &
  pid=$!
  exec 3<"$t/fifo" # the read end, never read: the export blocks once 64 KiB are in the pipe
  wait_spool
  [ -n "$(ls -A "$t/tmp")" ] || fail "$sig: nothing spooled before the signal"
  if [ $sig = TERM ]; then
    kill -TERM $pid
    # the read end stays open until the export is gone (closed early, a
    # SIGPIPE could end it first where signals are delivered late: TSan)
    for _ in $(seq 200); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done
  fi
  exec 3<&- # SIGPIPE's case: this closing is the signal
  wait $pid
  rc=$?
  want=$((128 + $(kill -l $sig)))
  [ $rc = $want ] || fail "$sig: exit status $rc, want $want ($(cat "$t/err"))"
  [ -z "$(ls -A "$t/tmp")" ] || fail "$sig: the spool directory is still there"
  echo "ok: SIG$sig ended the export (status $rc) and its spool directory is gone"
done
