#!/usr/bin/env bash
# Progress on a terminal only (docs/cli.md): every command that reads a job
# draws one line on a terminal's stderr ("LABEL: done/total (pct%)", ended by
# clearing it), to 100 %, and never on a pipe (summary, export, diff); a command that reads its
# traces twice says which read it is (export --format job and perfetto:
# "1 of 2", "2 of 2"; diff: "run A", "run B"). The terminal is a pty from script(1)
# (util-linux, Debian's essential bsdutils).
#
#   progress_tty.sh NCCL_LENS LENS_GEN_JOB
set -euo pipefail
lens=$1 gen=$2
command -v script > /dev/null || { echo "progress_tty: no script(1)"; exit 77; }
tmp=$(mktemp -d /tmp/lens-progress-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# 16 hosts: 16 host groups, each a line of progress
"$gen" -o "$tmp/job" --ranks 64 --hosts 16 --events 50000 > /dev/null
fail=0
check() { # name, then the command's arguments; labels it must show, after --
  local name=$1; shift
  local args=() labels=()
  while (($#)) && [ "$1" != -- ]; do args+=("$1"); shift; done
  shift
  labels=("$@")
  local q
  q=$(printf '%q ' "$lens" "${args[@]}")
  script -q -e -c "$q > /dev/null" "$tmp/$name.tty" > /dev/null || { echo "FAIL: $name exited $?"; fail=1; return; }
  local l
  for l in "${labels[@]}"; do
    if ! tr '\r' '\n' < "$tmp/$name.tty" | grep -qF "$l: 16/16 (100%)"; then
      echo "FAIL: $name: no '$l: 16/16 (100%)' on the terminal"; fail=1
    fi
  done
  # the line is cleared at the end: the last progress write is ESC [ K after a carriage return
  if ! tr -d '\n' < "$tmp/$name.tty" | grep -q $'\r\033\\[K'; then
    echo "FAIL: $name: the progress line is not cleared"; fail=1
  fi
  # not on a pipe (one command of each kind of read: one, two, two runs; CI time under the sanitizers)
  case "$name" in summary|export-job|diff) ;; *) return ;; esac
  "$lens" "${args[@]}" > /dev/null 2> "$tmp/$name.err" || { echo "FAIL: $name on a pipe exited $?"; fail=1; }
  if grep -q $'\r' "$tmp/$name.err" || grep -q "(100%)" "$tmp/$name.err"; then
    echo "FAIL: $name: progress written to a pipe"; fail=1
  fi
}
j=$tmp/job
check summary summary "$j" -- "reading traces (host groups)"
check report report "$j" -- "reading traces (host groups)"
check net net "$j" -- "reading traces (host groups)"
check hang hang "$j" -- "reading traces (host groups)"
check validate validate "$j" -- "reading traces (host groups)"
check job job "$j" -- "reading traces (host groups)"
check perfetto export --format perfetto -o "$tmp/p.pftrace" "$j" -- \
  "reading traces (host groups), 1 of 2: the job view" "reading traces (host groups), 2 of 2: drawing"
check chrome export -o "$tmp/c.json" "$j" -- "reading traces (host groups)"
check export-job export --format job -o "$tmp/j.json" "$j" -- \
  "reading traces (host groups), 1 of 2: the job view" "reading traces (host groups), 2 of 2: drawing"
check diff diff "$j" "$j" -- "reading run A (host groups)" "reading run B (host groups)"
[ "$fail" = 0 ] && echo "progress_tty: every command drew its progress on the terminal only"
exit "$fail"
