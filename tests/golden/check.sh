#!/bin/sh
# The golden test (ctest test_golden_views): every view of nccl-lens on every
# golden trace set (traces/<scenario>/, committed replay traces) must print what
# expected/ holds: the same numbers, the same exit statuses, the same stderr.
# It pins today's outputs so a new model (issue 23: streamed per-host passes)
# can be checked scenario by scenario against the old one. On a failure it
# prints the differences; when a change is deliberate, run update.sh and review
# the change of expected/ in the diff of the commit.
# GOLDEN_SCENARIOS (space-separated, default every scenario): only these
# scenarios' outputs (and every diff pair's) are made and compared; the
# sanitizer builds check six (CI time, tests/golden/CMakeLists.txt).
# usage: check.sh NCCL_LENS_BIN
set -u
[ $# -eq 1 ] || { echo "usage: check.sh NCCL_LENS_BIN"; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
command -v python3 >/dev/null || { echo "check.sh: python3 is needed (scripts/setup.sh installs it)"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lens-golden-check-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
# shellcheck disable=SC2086
"$here/views.sh" "$1" "$tmp/out" ${GOLDEN_SCENARIOS:-} || { echo "FAIL: views.sh could not run"; exit 1; }
# the same set of files, then the same contents
if [ -n "${GOLDEN_SCENARIOS:-}" ]; then
  # shellcheck disable=SC2086
  (cd "$here/expected" && find diff $GOLDEN_SCENARIOS -type f | sed 's|^|./|' | sort) >"$tmp/want"
else
  (cd "$here/expected" && find . -type f | sort) >"$tmp/want"
fi
(cd "$tmp/out" && find . -type f | sort) >"$tmp/got"
fails=0
if ! cmp -s "$tmp/want" "$tmp/got"; then
  echo "FAIL: the views wrote other files than expected/ holds (< expected, > now):"
  diff "$tmp/want" "$tmp/got" | grep '^[<>]'
  fails=$((fails + 1))
fi
n=0
while read -r f; do
  [ -f "$tmp/out/$f" ] || continue
  n=$((n + 1))
  if ! cmp -s "$here/expected/$f" "$tmp/out/$f"; then
    echo "FAIL: ${f#./} differs from expected (- expected, + now):"
    diff -U 2 "$here/expected/$f" "$tmp/out/$f" | sed -n '3,80p'
    fails=$((fails + 1))
  fi
done <"$tmp/want"
# every text output within 120 columns (width.sh; ctest test_golden_width checks expected/)
"$here/width.sh" "$tmp/out" || fails=$((fails + 1))
scenarios=$(find "$here/traces" -mindepth 1 -maxdepth 1 -type d | wc -l)
[ -n "${GOLDEN_SCENARIOS:-}" ] && scenarios=$(echo $GOLDEN_SCENARIOS | wc -w)
echo "$n outputs of $scenarios scenarios compared, $fails differ"
if [ "$fails" -gt 0 ]; then
  echo "(a deliberate change: tests/golden/update.sh NCCL_LENS_BIN, then review 'git diff tests/golden/expected')"
  exit 1
fi
[ "$n" -gt 0 ]
