#!/bin/bash
# test_kineto_cli BUILD_DIR SOURCE_DIR: `nccl-lens job` as a PyTorch user runs it on the real torch.profiler files
# in tests/kineto/data (docs/kineto-import.md): what it reports is checked against the files themselves, read here
# with Python's json (kernel counts, spans, the B200 AllGather's size); one file given twice is said; a cut .gz is
# one error line that names the file, not zlib's descriptor.
set -u
B=$1 S=$2
L=$B/bin/nccl-lens
D=$S/data
T=$(mktemp -d /tmp/test_kineto_cli.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }
B200=$D/tracelens_b200_eager_trace_rank0of8.json.gz
H0=$D/hta_trace_filter_sampled_rank-0of128.json.gz
H1=$D/hta_trace_filter_sampled_rank-1of128.json.gz

# The report against the file: every NCCL kernel counted, each rank's spans the kernels' durations (ns), the
# spans said to be Kineto's kernels (not KernelCh pTimers), and the B200 AllGather sized from its collective args
# (Out msg nelems x the dtype's size: nccl-tests' size).
check() { # JOB_JSON KINETO_FILE...
  python3 - "$@" <<'EOF'
import gzip, json, sys
job = json.load(open(sys.argv[1]))
files = sys.argv[2:]
kern = {}
for f in files:
    d = json.load(gzip.open(f))
    ks = [e for e in d["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"
          and e.get("name", "").startswith(("ncclDevKernel", "ncclKernel"))]
    kern[d["distributedInfo"]["rank"]] = ks
bad = []
n = sum(len(v) for v in kern.values())
if job["kineto"]["kernels"] != n: bad.append("kernels %d, the files hold %d" % (job["kineto"]["kernels"], n))
if job["kineto"]["same_rank_files"] != 0: bad.append("same_rank_files %d" % job["kineto"]["same_rank_files"])
spans = {}
for c in job["collectives"]:
    if c["span_source"] != "kineto_kernel": bad.append("span_source " + c["span_source"])
    for r in c["ranks"]: spans.setdefault(r["rank"], []).append(r["span_ns"])
for rank, ks in kern.items():
    want = sorted(round(e["dur"] * 1000) for e in ks)
    if sorted(spans.get(rank, [])) != want: bad.append("rank %d spans %s, the file %s" % (rank, sorted(spans.get(rank, [])), want))
for rank, ks in kern.items():
    for e in ks:
        a = e.get("args", {})
        if "Out msg nelems" in a and a.get("dtype") == "BFloat16":
            got = [c for c in job["collectives"] if c["func"] == "AllGather"]
            if not got or got[0]["bytes"] != a["Out msg nelems"] * 2 or got[0]["nranks"] != a["Group size"]:
                bad.append("AllGather %s, the file: %d x 2 B over %d ranks" % (got, a["Out msg nelems"], a["Group size"]))
if bad: print("\n".join(bad)); sys.exit(1)
EOF
}
for set in "$B200" "$H0" "$H1" "$H0 $H1"; do
  name=$(for f in $set; do basename "$f" .json.gz; done | tr '\n' ' ')
  "$L" job --json $set >"$T/j.json" 2>"$T/err"
  rc=$?
  if [ $rc = 0 ] && [ ! -s "$T/err" ] && check "$T/j.json" $set; then ok "$name: kernels and spans as in the file"
  else bad "$name: rc $rc $(head -c 300 "$T/err")"; fi
done
"$L" job "$H0" "$H1" >"$T/t.txt" 2>&1
grep -q "durations: each NCCL kernel's span in its Kineto file" "$T/t.txt" && ! grep -q "KernelCh pTimer)" "$T/t.txt" &&
  ok "text: the spans said to be the Kineto kernels'" || bad "text header: $(grep -A1 '^job view' "$T/t.txt")"
# 2023 kernels carry no collective args: their size is unknown, not 0 B (rows and the instance list)
grep -Eq "^  SendRecv +unknown +[0-9]+ " "$T/t.txt" && grep -Eq "^  0x[0-9a-f]+ +[0-9]+ SendRecv +unknown " "$T/t.txt" &&
  ! grep -q " 0 B " "$T/t.txt" && ok "text: the 2023 kernels' size unknown" || bad "size: $(grep SendRecv "$T/t.txt")"

# One rank's file twice (a glob that takes two windows of one rank): said on stderr and counted, not silent.
"$L" job --json "$H0" "$H0" "$H1" >"$T/j.json" 2>"$T/err"
rc=$?
[ $rc = 0 ] && [ "$(grep -c "rank 0 again" "$T/err")" = 1 ] && [ "$(wc -l <"$T/err")" = 1 ] &&
  python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["kineto"]["same_rank_files"] != 1)' "$T/j.json" &&
  ok "the same rank twice: one line, same_rank_files 1" || bad "the same rank twice: rc $rc $(cat "$T/err")"
"$L" job "$H0" "$H0" 2>/dev/null | grep -q "^kineto: 1 file names a rank an earlier file named" &&
  ok "the same rank twice: the text says it" || bad "the same rank twice: no text line"

# A cut .json.gz: exit 1, one line naming the file and saying truncated (zlib's "<fd:N>" is not the file's name).
head -c 60000 "$B200" >"$T/cut.json.gz"
"$L" job "$T/cut.json.gz" >"$T/out" 2>"$T/err"
rc=$?
[ $rc = 1 ] && [ "$(wc -l <"$T/err")" = 1 ] && grep -q "^nccl-lens job: $T/cut.json.gz: truncated" "$T/err" &&
  ! grep -q "<fd:" "$T/err" && ok "a cut .gz: $(cat "$T/err")" || bad "a cut .gz: rc $rc $(cat "$T/err")"
exit $fail
