# Sourced by the Kineto shell tests (test_kineto_merge.sh, test_kineto_threads.sh): "$1" BUILD_DIR, "$2"
# SOURCE_DIR; sets B, S, L (the CLI) and T (a scratch directory named after the test, kept when a check fails, to
# look at), fail, and ok/bad to say each check.
B=$1 S=$2
L=$B/bin/nccl-lens
T=$(mktemp -d "/tmp/$(basename "$0" .sh).XXXXXX")
fail=0
trap 'if [ "$fail" = 0 ]; then rm -rf "$T"; else echo "kept $T"; fi' EXIT
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }
