#!/bin/sh
# Rewrites tests/golden/expected/ with what the views print now, for a change
# of their output that is meant: review 'git diff tests/golden/expected' (every
# number that moved is there) before committing it. The inputs stay as they
# are (gen_traces.sh replaces them, on purpose only).
# usage: update.sh NCCL_LENS_BIN
set -eu
[ $# -eq 1 ] || { echo "usage: update.sh NCCL_LENS_BIN"; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lens-golden-update-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$here/views.sh" "$1" "$tmp/out"
rm -rf "$here/expected"
mv "$tmp/out" "$here/expected"
echo "update.sh: $(find "$here/expected" -type f | wc -l) files in tests/golden/expected; review: git diff --stat tests/golden/expected"
